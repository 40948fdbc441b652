"""End to end: real Hydra multiruns (basic and joblib launchers), resume after a lost cell,
`ctxbench report` over the sweep, and the baseline/check gate passing and failing."""

from __future__ import annotations

import csv
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctxbench.transcripts.canonical import write_transcripts
from ctxbench.transcripts.model import Message, ToolCall, Transcript

CTXBENCH = [sys.executable, "-m", "ctxbench.cli"]


def make_transcript(tid: str, rounds: int, size: int, seed: int) -> Transcript:
    rnd = random.Random(seed)
    msgs = [Message("system", "You are a careful coding agent."), Message("user", "Fix the build of repo alpha.")]
    for r in range(rounds):
        call_id = f"c{r}"
        args = json.dumps({"cmd": f"ls dir{r}"})
        msgs.append(Message("assistant", f"Step {r}: list files.", tool_calls=(ToolCall(call_id, "bash", args),)))
        body = " ".join(f"file_{r}_{i}.py size={rnd.randint(1, 9999)}" for i in range(size))
        msgs.append(Message("tool", body, tool_call_id=call_id, name="bash"))
    msgs.append(Message("assistant", "Done."))
    return Transcript(tid, msgs)


def run(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    done = subprocess.run([*CTXBENCH, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"ctxbench {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A two-job multirun (none, sliding_window) on gpt-4-32k over two small transcripts
    (one of them grows past the 32k window, so `none` overflows)."""
    tmp = tmp_path_factory.mktemp("sweep")
    data = tmp / "data"
    data.mkdir()
    write_transcripts(data / "small.jsonl", [make_transcript("t1", 30, 120, 1), make_transcript("t2", 12, 60, 2)])
    common = [f"dataset.paths=[{data}]", "model=gpt-4-32k", "progress=false"]
    done = run("run", "-m", "strategy=none,sliding_window", *common, f"output.root={tmp / 'good'}", cwd=tmp)
    return {"tmp": tmp, "data": data, "root": tmp / "good" / "default", "common": common, "log": done}  # type: ignore[dict-item]


def summaries(root: Path) -> dict[Path, float]:
    return {p: p.stat().st_mtime_ns for p in sorted(root.glob("cells/*/*/*/summary.json"))}


def test_multirun_writes_one_cell_per_strategy_and_transcript(sweep: dict) -> None:
    found = summaries(sweep["root"])
    assert len(found) == 4
    assert {p.parts[-4] for p in found} == {"none", "sliding_window"}
    jobs = sorted(sweep["root"].glob("jobs/*/*/cells.json"))
    assert len(jobs) == 2
    assert "sliding_window" in sweep["log"].stdout  # the comparison table printed after the sweep


def test_rerun_recomputes_only_the_lost_cell(sweep: dict, tmp_path: Path) -> None:
    root = sweep["root"]
    before = summaries(root)
    lost = next(p for p in before if p.parts[-4] == "sliding_window" and p.parent.name.startswith("t1-"))
    lost.unlink()
    done = run(
        "run", "-m", "strategy=none,sliding_window", *sweep["common"], f"output.root={root.parent}", cwd=tmp_path
    )
    after = summaries(root)
    assert set(after) == set(before)
    changed = [p for p in after if after[p] != before[p]]
    assert changed == [lost]
    reused = sum(int(n) for n in re.findall(r"\((\d+) reused\)", done.stderr))
    assert reused == 3  # the three complete cells were reused, and logged as such


def test_joblib_launcher_runs_the_same_sweep(sweep: dict, tmp_path: Path) -> None:
    out = tmp_path / "jl"
    run(
        "run",
        "-m",
        "strategy=none,sliding_window",
        "hydra/launcher=joblib",
        *sweep["common"],
        f"output.root={out}",
        cwd=tmp_path,
    )
    mine = {p.relative_to(out / "default"): json.loads(p.read_text())["metrics"] for p in summaries(out / "default")}
    theirs = {p.relative_to(sweep["root"]): json.loads(p.read_text())["metrics"] for p in summaries(sweep["root"])}
    assert mine.keys() == theirs.keys() and len(mine) == 4
    for key in mine:  # same numbers whichever launcher ran the jobs
        assert mine[key]["tokens_sent_total"] == theirs[key]["tokens_sent_total"]


def test_report_over_the_multirun(sweep: dict) -> None:
    out = sweep["tmp"] / "report"
    jobs = next(sweep["root"].glob("jobs/*"))  # the multirun folder itself
    done = run(
        "report", str(jobs), "--out", str(out), "--format", "html,md,csv,parquet", "--no-progress", cwd=sweep["tmp"]
    )
    assert "wrote" in done.stdout
    page = (out / "report.html").read_text()
    assert page.count("src='data:image/png;base64,") >= 4
    assert "http://" not in page and "https://" not in page  # self-contained
    markdown = (out / "report.md").read_text()
    for png in ("tokens_over_calls", "overflow_and_retries", "estimator_error", "cost_split"):
        assert f"](plots/{png}.png)" in markdown
        assert (out / "plots" / f"{png}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with (out / "comparison.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(r["strategy"] for r in rows) == ["none", "sliding_window"]
    none = next(r for r in rows if r["strategy"] == "none")
    assert int(none["overflow_errors"]) > 0  # t1 outgrows the 32k window without compaction
    assert (out / "calls.parquet").exists()


def test_gate_passes_on_same_results_and_fails_on_a_worse_strategy(sweep: dict) -> None:
    tmp, root = sweep["tmp"], sweep["root"]
    baseline = tmp / "baseline.json"
    run("baseline", str(root), "--out", str(baseline), cwd=tmp)
    entries = json.loads(baseline.read_text())["entries"]
    assert {e["strategy"] for e in entries} == {"none", "sliding_window"}

    same = run("check", "--baseline", str(baseline), str(root), cwd=tmp)
    assert "OK" in same.stdout

    # Same strategy name, worse behaviour: a sliding window that fills the whole budget saves less.
    conf = tmp / "conf" / "strategy"
    conf.mkdir(parents=True)
    (conf / "sliding_window_loose.yaml").write_text(
        "name: sliding_window\n_target_: ctxbench.strategies.sliding_window.SlidingWindow\nbudget_ratio: 1.0\n"
    )
    bad = tmp / "bad"
    run(
        "run",
        "-m",
        "strategy=none,sliding_window_loose",
        f"hydra.searchpath=[file://{tmp / 'conf'}]",
        *sweep["common"],
        f"output.root={bad}",
        cwd=tmp,
    )
    worse = run("check", "--baseline", str(baseline), str(bad), cwd=tmp, check=False)
    # The drop passes the tolerance, but on two transcripts (one fits the window either way) the paired interval
    # of the difference includes zero: noise, not a regression (tests/test_gate_paired.py has the failing case).
    moved = [line for line in worse.stdout.splitlines() if "sliding_window" in line and "savings" in line]
    assert worse.returncode == 0 and len(moved) == 1 and "within noise" in moved[0], worse.stdout + worse.stderr

    # A looser tolerance lets the same drop through.
    loose = run("check", "--baseline", str(baseline), str(bad), "--tolerance", "savings=0.5", cwd=tmp)
    assert loose.returncode == 0


@pytest.mark.slow
def test_ray_launcher_runs_the_sweep(sweep: dict, tmp_path: Path) -> None:
    """Needs the `ray` extra (pip install -e '.[ray]'); starts a local Ray instance."""
    pytest.importorskip("ray")
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    out = tmp_path / "ray"
    run(
        "run",
        "-m",
        "strategy=none,sliding_window",
        "hydra/launcher=ray",
        *sweep["common"],
        f"output.root={out}",
        cwd=tmp_path,
    )
    assert len(summaries(out / "default")) == 4
