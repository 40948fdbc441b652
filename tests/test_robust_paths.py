"""Hostile names (issue 29): transcript ids like ``../../x`` or ``.hidden`` make cells that
``ctxbench.results.load`` returns, inside the results folder; ``output.name=../../x`` is refused
before Hydra writes anything (its job log, ``.hydra/``) outside ``output.root``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import ctxbench.results
from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CTXBENCH, "run", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_odd_transcript_ids_make_cells_that_load_returns(tmp_path: Path) -> None:
    ids = ["../../x", ".hidden", "..", "./a"]
    write_transcripts(tmp_path / "data" / "d.jsonl", [coding_transcript(rounds=3, tid=i) for i in ids])
    done = _run(f"dataset.paths=[{tmp_path / 'data'}]", f"output.root={tmp_path / 'out'}", "progress=false")
    assert done.returncode == 0, done.stderr
    cells = ctxbench.results.load(tmp_path / "out")
    assert sorted(cells["transcript"]) == sorted(ids)
    for folder in cells["cell_dir"]:
        assert Path(folder).resolve().is_relative_to((tmp_path / "out" / "default" / "cells").resolve())
        assert not Path(folder).name.startswith(".")
    outside = [p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "out") and "data" not in p.parts]
    assert outside == []


@pytest.mark.parametrize("name", ["../../x", "..", "/abs/x", "a/../../b"])
def test_an_output_name_outside_the_root_writes_nothing_outside(tmp_path: Path, name: str) -> None:
    write_transcripts(tmp_path / "work" / "data" / "d.jsonl", [coding_transcript(rounds=3, tid="a")])
    root = tmp_path / "work" / "out"
    before = {p for p in tmp_path.rglob("*")}
    done = _run(f"dataset.paths=[{tmp_path / 'work' / 'data'}]", f"output.root={root}", f"output.name={name}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "output.name" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "Error executing job" not in done.stderr, done.stderr  # refused before Hydra ran a job
    assert {p for p in tmp_path.rglob("*")} - before == set()  # not even inside the root
    assert not Path("/abs").exists()
