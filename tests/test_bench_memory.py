"""The benchmark's memory figure: peak RSS over the RSS just before loading, peak reset before
loading, the worst repeat over its own baseline, and a report that says what it measured.
No figure is asserted: only that the parts agree with each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.bench import data, report, runner, worker
from ctxbench.memory import release_free_memory


def clear_refs_works() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


needs_clear_refs = pytest.mark.skipif(not clear_refs_works(), reason="no /proc/self/clear_refs (Linux >= 4.0)")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> data.BenchTranscript:
    return data.generated(3_000, tmp_path_factory.mktemp("bench-mem"), "o200k_base")


@needs_clear_refs
def test_peak_reset_forgets_an_earlier_peak() -> None:
    block = bytearray(64 * 1024 * 1024)  # zero pages: touch them so they are resident
    block[::4096] = b"x" * len(block[::4096])
    held = worker.rss_kib("VmHWM")
    del block
    release_free_memory()
    assert worker.reset_peak_rss()
    assert worker.rss_kib("VmHWM") < held - 32 * 1024


@needs_clear_refs
def test_worker_reports_growth_over_the_rss_before_loading(tiny: data.BenchTranscript) -> None:
    r = runner.run_worker({"kind": "replay", "strategy": "dbgpt", "path": str(tiny.path), "model": "gpt-4o"})
    assert r["peak_reset"] is True
    assert r["peak_rss_kib"] == max(r["peak_load_kib"], r["peak_replay_kib"])
    assert r["peak_load_kib"] >= r["rss_loaded_kib"] >= r["rss_ready_kib"] - worker.RSS_COUNTER_SLACK_KIB
    assert r["growth_kib"] == r["peak_rss_kib"] - r["rss_ready_kib"]
    assert r["text_bytes"] == tiny.text_bytes
    assert r["growth_x_text"] == pytest.approx(r["growth_kib"] * 1024 / tiny.text_bytes)


def test_reset_counts_as_taken_when_the_rss_shrinks_around_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake /proc (the kernel's per-CPU RSS counters drift on their own; no test can make them):
    the RSS read after the reset is 300 KiB below the one before, the peak is the one before.
    CI once reported peak_reset false from a drift like this, on every retry."""
    monkeypatch.setattr(worker.Path, "write_text", lambda self, text: len(text))
    reads = iter([(100_000,), (100_000, 99_700)] * 5)
    monkeypatch.setattr(worker, "status_kib", lambda *fields: next(reads))
    assert worker.reset_peak_rss()
    # A peak above the RSS by more than the counters' slack is a reset that did not take.
    reads = iter([(100_000,), (100_000 + 2 * worker.RSS_COUNTER_SLACK_KIB, 100_000)] * 5)
    assert not worker.reset_peak_rss()


def run(ready: int, peak: int, load: int | None = None) -> dict:
    return {
        "seconds": 1.0,
        "cpu_seconds": 1.0,
        "ratio_wall": 1.0,
        "ratio_cpu": 1.0,
        "rss_imports_kib": 30_000,
        "rss_tokenizer_kib": 100_000,
        "rss_ready_kib": ready,
        "peak_rss_kib": peak,
        "peak_load_kib": peak if load is None else load,
        "peak_replay_kib": peak,
        "peak_reset": True,
    }


def test_memory_is_the_worst_repeat_over_its_own_baseline(tiny: data.BenchTranscript) -> None:
    # Mixing one run's baseline with another's peak would report 1,000 KiB here; no run grew that much.
    runs = [run(ready=100_000, peak=100_400), run(ready=100_600, peak=101_000, load=100_900), run(100_300, 100_500)]
    row = runner.reduce(tiny, "replay", "none", runs)
    assert (row["rss_ready_kib"], row["peak_rss_kib"]) == (100_000, 100_400)
    assert row["memory_growth_x_text"] == pytest.approx(400 * 1024 / tiny.text_bytes)
    assert row["load_growth_x_text"] == row["replay_growth_x_text"] == row["memory_growth_x_text"]
    assert row["peak_reset"] is True
    assert runner.reduce(tiny, "replay", "none", [{**runs[0], "peak_reset": False}])["peak_reset"] is False


def test_report_states_the_baseline_and_flags_an_unreset_peak(tiny: data.BenchTranscript) -> None:
    big = runner.reduce(tiny, "replay", "dbgpt", [run(ready=100_000, peak=100_000 + 5 * tiny.text_bytes // 1024)])
    small = runner.reduce(tiny, "replay", "none", [{**run(ready=100_000, peak=100_001), "peak_reset": False}])
    small["transcript"] = "other"
    table = report.replay_table([big, small], {})
    assert "RSS before load MiB" in table and "| 97.7 |" in table and "(peak not reset)" in table
    (memory,) = [v for v in report.verdicts([big, small], {}, None, None, None) if v[0].startswith("peak memory")]
    _, measured, met = memory
    assert met is False and "RSS just before loading" in measured and "97.7 MiB" in measured
    assert (
        f"{tiny.name} {big['memory_growth_x_text']:.2f}x (dbgpt)" in measured
        and f"other {small['memory_growth_x_text']:.2f}x (none)" in measured
    )
