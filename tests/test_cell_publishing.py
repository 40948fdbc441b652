"""Cells are computed privately and published with one rename under a per-cell lock (issue 17.3):
two identical sweeps into the same output end as one clean run; kill -9 then re-run ends identical."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript


def dataset(folder: Path) -> Path:
    write_transcripts(folder / "a.jsonl", [coding_transcript(rounds=30, tid="a")])
    write_transcripts(folder / "b.jsonl", [coding_transcript(rounds=20, seed=1, tid="b")])
    return folder


def args(data: Path, out: Path) -> list[str]:
    return [
        "run",
        "-m",
        "strategy=dbgpt,sliding_window",
        f"dataset.paths=[{data}]",
        f"output.root={out}",
        "model=gpt-4-32k",
        "model.context_window=8000",
        "model.reserved_output_tokens=1000",
        "progress=false",
    ]


def start(data: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [*CTXBENCH, *args(data, out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(proc: subprocess.Popen) -> str:
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    return stdout + stderr


def cell_files(out: Path) -> dict[str, bytes]:
    """Every file of every cell, by path under cells/; summary.json without its creation time."""
    files: dict[str, bytes] = {}
    for path in sorted((out / "default" / "cells").rglob("*")):
        if not path.is_file() or path.name.endswith(".lock"):
            continue
        data = path.read_bytes()
        if path.name == "summary.json":
            summary = json.loads(data)
            summary.pop("created")
            data = json.dumps(summary, sort_keys=True).encode()
        elif path.name == "manifest.json":  # its sha256 of summary.json covers the creation time
            manifest = json.loads(data)
            manifest["files"].pop("summary.json")
            data = json.dumps(manifest, sort_keys=True).encode()
        files[path.relative_to(out / "default" / "cells").as_posix()] = data
    return files


def clean_run(tmp_path: Path, data: Path, out: Path) -> dict[str, bytes]:
    """The cells of one undisturbed run into ``out`` (then removed, so the next run uses the same path)."""
    finish(start(data, out))
    files = cell_files(out)
    assert any(name.endswith("op_snapshots.jsonl") for name in files)  # dbgpt wrote its snapshot store
    shutil.rmtree(out)
    return files


def test_two_identical_sweeps_started_together_end_as_one_clean_run(tmp_path: Path) -> None:
    data, out = dataset(tmp_path / "data"), tmp_path / "results"
    expected = clean_run(tmp_path, data, out)
    first, second = start(data, out), start(data, out)
    logs = finish(first) + finish(second)
    assert "Traceback" not in logs
    assert cell_files(out) == expected  # no duplicated snapshot line, no half-written cell
    assert not list((out / "default" / "cells").rglob(".tmp-*"))


def test_a_cell_another_run_holds_is_neither_written_nor_recomputed(tmp_path: Path) -> None:
    from ctxbench.atomic import FolderLock

    data, out = dataset(tmp_path / "data"), tmp_path / "results"
    expected = clean_run(tmp_path, data, out)
    held = next(name for name in expected if name.startswith("dbgpt/") and name.endswith("summary.json"))
    cell = out / "default" / "cells" / Path(held).parent
    lock = FolderLock(cell)  # this test process plays the other run computing that cell
    assert lock.acquire(blocking=False)
    proc = start(data, out)
    try:
        deadline = time.monotonic() + 120
        # The jobs run one after the other: the dbgpt job's other cell, then it waits for this one.
        others = [n for n in expected if n.startswith("dbgpt/") and n.endswith("summary.json") and n != held]
        while not all((out / "default" / "cells" / n).exists() for n in others):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(0.5)
        assert not cell.exists()  # every other cell is done; this one waits for its lock
        assert proc.poll() is None
    finally:
        lock.release()
    logs = finish(proc)
    assert "waiting for" in logs
    assert cell_files(out) == expected


def test_kill_9_then_rerun_ends_identical_and_takes_the_lock_over(tmp_path: Path) -> None:
    data, out = dataset(tmp_path / "data"), tmp_path / "results"
    expected = clean_run(tmp_path, data, out)
    proc = start(data, out)
    deadline = time.monotonic() + 120
    while not list(out.rglob(".tmp-*")):  # mid-cell: a cell's private folder exists
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list(out.rglob(".tmp-*")) and list(out.rglob(".*.lock"))  # what the killed run left
    finish(start(data, out))
    assert cell_files(out) == expected
    assert not list(out.rglob(".tmp-*"))
