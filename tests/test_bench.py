"""Smoke tests of the bench machinery on a tiny generated transcript: structure and consistency,
never a time (timing assertions would be flaky on shared cores)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ctxbench.bench import cli, data, report, runner, worker
from ctxbench.errors import ConfigError


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> data.BenchTranscript:
    return data.generated(3_000, tmp_path_factory.mktemp("bench"), "o200k_base")


def test_sizes_parse_and_reject_bad_input() -> None:
    assert [data.parse_size(s) for s in ("100k", "1m", "2500", "0.25m")] == [100_000, 1_000_000, 2500, 250_000]
    for bad in ("lots", "-5k", "0"):
        with pytest.raises(ConfigError, match="--sizes"):
            data.parse_size(bad)


def test_growth_exponent_recovers_known_powers() -> None:
    xs = [1e5, 2.5e5, 1e6]
    assert runner.growth_exponent([(x, 3e-6 * x) for x in xs]) == pytest.approx(1.0)
    assert runner.growth_exponent([(x, 1e-12 * x * x) for x in xs]) == pytest.approx(2.0)
    assert runner.growth_exponent([(1e5, 1.0)]) is None


def test_generated_transcript_is_described_from_its_file(tiny: data.BenchTranscript) -> None:
    assert tiny.path.exists() and tiny.synthetic and tiny.name == "3k"
    assert tiny.calls > 0 and tiny.messages > tiny.calls
    assert tiny.text_bytes >= tiny.chars > 0  # UTF-8 bytes are at least the characters


def test_in_process_round_is_consistent(tiny: data.BenchTranscript) -> None:
    lines: list[str] = []
    rows = runner.measure_transcript(tiny, ["none", "sliding_window"], 1, "gpt-4o", 1, lines.append, worker.measure)
    by_name = {r["name"]: r for r in rows}
    assert list(by_name) == [
        "tokenizer floor",
        "none",
        "sliding_window",
        "none (cells)",
        "sliding_window (cells)",
        "naive recount",
    ]
    assert len(lines) == 6
    # A whole cell replays the same calls as the replay alone, and costs more (probes, judge, files).
    for name in ("none", "sliding_window"):
        cell, alone = by_name[f"{name} (cells)"], by_name[name]
        assert cell["tokens_sent_total"] == alone["tokens_sent_total"] and cell["kind"] == "cell"
        assert cell["cpu_seconds"] > 0 and alone["ratio_none_cpu"] is not None
    assert by_name["none (cells)"]["ratio_none_cpu"] == 1.0 and by_name["none"]["ratio_none_cpu"] == 1.0
    table = report.cells_table(rows)
    assert table.count("\n") == 3 and "| 3k | sliding_window |" in table
    assert by_name["tokenizer floor"]["ratio_cpu"] == 1.0 and by_name["tokenizer floor"]["ratio_wall"] == 1.0
    # Cached replay tokenizes every message once; the naive design recounts whole prompts every call.
    cached, naive = by_name["sliding_window"], by_name["naive recount"]
    assert cached["tokenized_chars"] == tiny.chars
    assert naive["tokenized_chars"] > cached["tokenized_chars"]
    # Same strategy, same exact counts: the recount design must make the same decisions.
    assert naive["tokens_sent_total"] == cached["tokens_sent_total"]
    for row in rows:
        assert row["peak_rss_kib"] >= row["rss_ready_kib"] > 0
        assert math.isfinite(row["ratio_cpu"]) and row["memory_growth_x_text"] >= 0


def test_fresh_process_worker_counts_the_transcript(tiny: data.BenchTranscript) -> None:
    result = runner.run_worker({"kind": "floor", "path": str(tiny.path), "model": "gpt-4o"})
    assert result["tokens"] == tiny.tokens - 3  # the describe() count includes the per-request framing
    assert result["peak_rss_kib"] >= result["rss_loaded_kib"] and result["transcript_chars"] == tiny.chars


def test_worker_failure_names_the_task(tmp_path: Path) -> None:
    with pytest.raises(runner.BenchError, match="floor"):
        runner.run_worker({"kind": "floor", "path": str(tmp_path / "missing.jsonl")})


def test_cli_writes_markdown_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.md"
    argv = ["--sizes", "3k", "--repeats", "1", "--strategies", "none", "--real", "none", "--workers", ""]
    assert cli([*argv, "--no-main-job", "--out", str(out)]) == 0
    text = out.read_text()
    assert "## Replay against the tokenizer floor" in text and "| 3k |" in text and "naive recount" in text
    assert capsys.readouterr().out.strip() == text.strip()
    saved = json.loads(out.with_suffix(".json").read_text())
    assert {r["name"] for r in saved["rows"]} == {"tokenizer floor", "none", "none (cells)", "naive recount"}
    assert text.index("## Whole cells") < text.index("## Replay against the tokenizer floor")
    targets = [t for t, _, _ in saved["verdicts"]]
    assert any("within 1.5x the floor on 3k" in t for t in targets)
    assert "none: cells within 1.5x the floor on 3k" in targets


def test_a_folder_is_measured_as_one_set_of_cells(tiny: data.BenchTranscript, tmp_path: Path) -> None:
    """The main job's cells: every transcript of a folder, each one's cell computed and published."""
    import shutil

    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(tiny.path, folder / "a.jsonl")
    described = data.dataset(folder, "main job", "o200k_base")
    assert (described.calls, described.chars) == (tiny.calls, tiny.chars)
    cells = worker.measure({"kind": "cell", "strategy": "none", "path": str(folder), "model": "gpt-4o"})
    alone = worker.measure({"kind": "replay", "strategy": "none", "path": str(folder), "model": "gpt-4o"})
    assert cells["calls"] == alone["calls"] == tiny.calls
    assert cells["tokens_sent_total"] == alone["tokens_sent_total"]
    cell = {"kind": "cell", "transcript": "main job", "strategy": "dbgpt", "ratio_none_cpu": 1.7, "cpu_seconds": 1.0}
    [(target, _, met)] = report.cell_verdicts([cell], set())
    assert target == "dbgpt: main job's cells within 1.5x none's" and met is False


def test_sweep_verdicts_and_table() -> None:
    sweep = {"times": {1: [10.0, 12.0], 2: [6.0, 6.0]}, "cpu": {1: [9.0, 9.0], 2: [11.0, 11.0]}, "cells": {1: 8, 2: 8}}
    assert report.speedup(sweep) == pytest.approx(11.0 / 6.0)
    assert "| 2 | 8 | 6.0 | 11.0 | 1.83 |" in report.sweep_table(sweep)
    verdicts = report.verdicts([], {}, None, sweep, {"seconds": 130.0, "cells": 40}, set())
    assert [met for _, _, met in verdicts] == [True, False]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through /proc (Linux)")
def test_a_worker_process_runs_no_idle_blas_threads() -> None:
    """The tokenizer imports numpy, whose OpenBLAS starts a thread per core that spins for a while
    once started. ctxbench never calls BLAS, but in a worker that spinning counted as CPU time of
    the measurement that ran next (0.02 s of the 1M-token floor's 0.17 s, which made every CPU ratio
    look 13-15% better). With the worker loaded, numpy must come without a thread pool."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    probe = "import os, ctxbench.bench.worker, numpy; print(len(os.listdir('/proc/self/task')))"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
