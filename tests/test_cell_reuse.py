"""Cells of a sweep that make the same decisions are copied, not replayed (ctxbench/cell_reuse.py,
ctxbench/thresholds.py): real Hydra sweeps over the bundled data with sharing on and off give the
same cells; a setting outside a recorded interval is replayed; a parameter used in arithmetic
makes its cells unshared."""

from __future__ import annotations

import gzip
import importlib.util
import io
import os
import random
import subprocess
from pathlib import Path

import pytest

from ctxbench.thresholds import DeferredName, LevelNames, Recording, Tracked, meets, name_level, rename, resolve_names
from tests.conftest import CTXBENCH

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("compare_cells", ROOT / "scripts" / "compare_cells.py")
compare_cells = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(compare_cells)  # type: ignore[union-attr]

DBGPT = ["strategy=dbgpt", "strategy.params.max_context_tokens=null", "progress=false"]


def run(tmp: Path, *args: str, reuse: bool = True) -> str:
    env = {**os.environ, "CTXBENCH_COUNT_CACHE": "off", "CTXBENCH_CELL_REUSE": "on" if reuse else "off"}
    done = subprocess.run([*CTXBENCH, "run", *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return "\n".join(p.read_text() for p in sorted(tmp.rglob("run_app.log")))


def copies(log: str) -> list[str]:
    return [line.split("copy ", 1)[1].split(":", 1)[0] for line in log.splitlines() if "] copy cells/" in line]


def test_a_sweep_gives_the_same_cells_with_and_without_sharing(tmp_path: Path) -> None:
    sweep = [
        "-m",
        *DBGPT,
        "strategy.params.warning_threshold=0.5,0.6,0.7",
        "strategy.params.error_threshold=0.85,0.9",
        "dataset.include=[synth-sql_060k,synth-coding_090k]",
    ]
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    log = run(tmp_path / "on", *sweep, "hydra/launcher=basic", f"output.root={tmp_path / 'on'}")
    run(tmp_path / "off", *sweep, "hydra/launcher=basic", f"output.root={tmp_path / 'off'}", reuse=False)
    assert compare_cells.differences(tmp_path / "off" / "default", tmp_path / "on" / "default") == []
    # A copied cell's contexts file (the header's gzip member written anew, the rows' member copied)
    # is byte for byte the file its setting's own replay writes.
    fresh = {p.relative_to(tmp_path / "off"): p.read_bytes() for p in (tmp_path / "off").rglob("contexts.jsonl.gz")}
    copied = {p.relative_to(tmp_path / "on"): p.read_bytes() for p in (tmp_path / "on").rglob("contexts.jsonl.gz")}
    assert len(fresh) == 12 and copied == fresh
    # synth-sql_060k peaks at 0.51 of its budget (0.6 and 0.7 never compact, 0.5 does), synth-coding_090k
    # at 0.75 (each warning differs) and reaches no error level: 4 + 3 of the 12 cells are copies.
    found = copies(log)
    assert sum("synth-sql_060k" in c for c in found) == 4 and sum("synth-coding_090k" in c for c in found) == 3
    # Concurrent workers (joblib, 2 processes) share records as they appear: the same cells again.
    (tmp_path / "par").mkdir()
    run(tmp_path / "par", *sweep, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"output.root={tmp_path / 'par'}")
    assert compare_cells.differences(tmp_path / "off" / "default", tmp_path / "par" / "default") == []


def test_a_setting_outside_the_recorded_interval_is_replayed(tmp_path: Path) -> None:
    one = [*DBGPT, "dataset.include=[synth-sql_060k]", f"output.root={tmp_path}"]
    run(tmp_path, *one, "strategy.params.warning_threshold=0.6")
    # 0.55 is above the peak ratio (0.5135) as 0.6 is: copied. 0.5 is below it: Layer 1 fires, replayed.
    assert len(copies(run(tmp_path, *one, "strategy.params.warning_threshold=0.55"))) == 1
    log = run(tmp_path, *one, "strategy.params.warning_threshold=0.5")
    assert len(copies(log)) == 1  # still only the one of 0.55
    cells = sorted(p.parent for p in (tmp_path / "default" / "cells").rglob("summary.json"))
    calls = {(c / "calls.jsonl").read_bytes() for c in cells}
    assert len(cells) == 3 and len(calls) == 2


def test_a_parameter_used_in_arithmetic_is_not_shared(tmp_path: Path) -> None:
    # clear_tool_uses compares the prompt with trigger_ratio x the budget: a product, not a comparison.
    args = ["strategy=clear_tool_uses", "dataset.include=[synth-sql_060k]", "progress=false", f"output.root={tmp_path}"]
    run(tmp_path, *args, "strategy.params.trigger_ratio=0.8")
    assert copies(run(tmp_path, *args, "strategy.params.trigger_ratio=0.81")) == []
    assert not list((tmp_path / "default" / ".reuse").rglob("*.json"))


def test_comparisons_are_recorded_as_intervals_and_other_uses_taint() -> None:
    rec = Recording(values={"w": 0.7, "e": 0.9})
    w, e = Tracked("w", 0.7, rec), Tracked("e", 0.9, rec)
    assert (0.65 < w, 0.75 >= w, w >= 0.6, w < e) == (True, True, True, True)  # noqa: SIM300 (reflected)
    assert not rec.tainted
    cond = rec.conditions()
    assert cond["bounds"]["w"] == [0.65, True, 0.75, False]
    assert [meets(cond, {"w": v, "e": 0.9}) for v in (0.65, 0.66, 0.75, 0.76)] == [False, True, True, False]
    assert not meets(cond, {"w": 0.7, "e": 0.69})  # w < e no longer holds
    assert w * 2 == 1.4 and rec.tainted


@pytest.mark.parametrize("use", [float, str, hash, bool, lambda t: t + 0, lambda t: f"{t:.2f}", lambda t: t == 0.7])
def test_every_use_but_a_comparison_taints(use) -> None:
    rec = Recording(values={"w": 0.7})
    use(Tracked("w", 0.7, rec))
    assert rec.tainted


def test_deferred_level_names_resolve_as_the_plain_ones() -> None:
    rnd = random.Random(4)
    for _ in range(200):
        values = {"warning": rnd.choice([0.5, 0.7, 0.9]), "error": rnd.choice([0.85, 0.9, 0.95])}
        rec = Recording(values=values)
        plain = LevelNames({"warning": values["warning"], "error": values["error"], "critical": 0.95})
        levels = LevelNames(
            {
                "warning": Tracked("warning", values["warning"], rec),
                "error": Tracked("error", values["error"], rec),
                "critical": 0.95,
            }
        )
        ratio = rnd.choice([0.0, 0.5, 0.7, 0.85, 0.9, 0.95, rnd.random(), 1.0, 1.5])
        name = levels.name(ratio)
        rows = {"events.jsonl": [{"state": name}]}
        record = resolve_names(rows, values)
        assert (
            rows["events.jsonl"][0]["state"]
            == plain.name(ratio)
            == name_level(
                ratio,
                [("warning", values["warning"]), ("error", values["error"]), ("critical", 0.95)],
                "overflow",
                "normal",
            )
        )
        if type(name) is DeferredName:
            assert record is not None and record["levels"] is not None
            other = {"warning": 0.6, "error": 0.88}
            assert rename(record["levels"], ratio, other) == name_level(
                ratio, [("warning", 0.6), ("error", 0.88), ("critical", 0.95)], "overflow", "normal"
            )
        assert not rec.tainted


def test_only_a_strategy_declaring_its_comparisons_is_shared() -> None:
    from ctxbench.cell_reuse import _declares

    assert _declares("ctxbench.strategies.pipeline.LayeredStrategy")
    assert not _declares("ctxbench.strategies.sliding_window.SlidingWindow")  # the default: no reuse
    assert not _declares("ctxbench.no.such.Strategy")


def test_a_contexts_file_rewrites_its_header_member_only() -> None:
    from ctxbench.results.store import gzip_lines, gzip_member, with_first_line

    rows = "".join(f'{{"call": {i}, "refs": [[0, {i}]], "new": {{}}}}\n' for i in range(300))
    text = '{"format": "ctxbench.contexts/1", "thresholds": [1]}\n' + rows
    data = gzip_lines(text)
    assert gzip.decompress(data) == text.encode()
    with gzip.open(io.BytesIO(data), "rt", encoding="utf-8") as handle:
        assert handle.read() == text  # what ctxbench view reads: the members as one text
    header = '{"format": "ctxbench.contexts/1", "thresholds": [2]}'
    new = with_first_line(data, header)
    assert new == gzip_lines(header + "\n" + rows)  # the bytes a fresh cell of that setting writes
    rows_member = gzip_member(rows.encode())
    assert data.endswith(rows_member) and new.endswith(rows_member)  # the rows' member kept as it was
    assert gzip.decompress(new) == (header + "\n" + rows).encode()
    # A file in one member (older code): rewritten whole, into the same layout.
    assert with_first_line(gzip.compress(text.encode(), mtime=0), header) == new
    assert gzip.decompress(with_first_line(gzip_lines("{}\n"), header)) == (header + "\n").encode()


def test_contexts_written_by_zlib_and_by_isal_read_alike() -> None:
    """A cell written where ISA-L is not installed (zlib) and one written where it is hold the same
    text for every reader, and a copied cell's header rewrite keeps the other's rows member."""
    from ctxbench.results import store

    rows = "".join(f'{{"call": {i}, "refs": [[0, {i}]], "new": {{"x{i}": "é"}}}}\n' for i in range(500))
    text = '{"format": "ctxbench.contexts/1", "thresholds": [1]}\n' + rows
    by_zlib = store._zlib_member(text.partition("\n")[0].encode() + b"\n") + store._zlib_member(rows.encode())
    by_ours = store.gzip_lines(text)
    for data in (by_zlib, by_ours):
        assert gzip.decompress(data) == text.encode()
        with gzip.open(io.BytesIO(data), "rt", encoding="utf-8") as handle:
            assert handle.read() == text
    header = '{"format": "ctxbench.contexts/1", "thresholds": [2]}'
    new = store.with_first_line(by_zlib, header)  # a zlib-written cell copied where ISA-L writes
    assert new.endswith(store._zlib_member(rows.encode()))
    assert gzip.decompress(new) == (header + "\n" + rows).encode()


def test_a_cell_left_for_later_waits_for_another_live_process_replaying_its_transcript(tmp_path: Path) -> None:
    import socket
    import sys
    import threading

    from ctxbench.cell_reuse import CellSharing, JobSharing

    share = CellSharing(JobSharing(tmp_path, "key", {"w": 0.7}, {}), tmp_path / ".reuse" / "t")
    share.folder.mkdir(parents=True)
    host = socket.gethostname()
    (share.folder / "mine.computing").write_text(f"{host} {os.getpid() + 10**7}")  # its own mark: no wait
    assert share.wait_for_others("mine", limit=5) < 1
    dead = subprocess.Popen([sys.executable, "-c", "pass"])  # a process that has ended
    dead.wait()
    (share.folder / "dead.computing").write_text(f"{host} {dead.pid}")
    (share.folder / "elsewhere.computing").write_text(f"other-host {os.getpid()}")
    assert share.wait_for_others("mine", limit=5) < 1  # a dead process's mark, or another host's
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (share.folder / "other.computing").write_text(f"{host} {live.pid}")
        assert share.wait_for_others("mine", limit=0.3) >= 0.3  # still replaying: waited up to the limit
        threading.Timer(0.3, (share.folder / "other.computing").unlink).start()  # its replay ends
        assert 0.3 <= share.wait_for_others("mine", limit=5) < 4
    finally:
        live.kill()
        live.wait()
