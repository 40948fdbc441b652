"""End-to-end: real `ctxbench run` processes (Hydra multirun), resume, and bad input."""

import json
import subprocess
from pathlib import Path

from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def summaries(root: Path) -> dict[str, dict]:
    return {
        f"{p.parent.parent.parent.name}/{p.parent.name}": json.loads(p.read_text()) for p in root.rglob("summary.json")
    }


def test_multirun_writes_resumable_cells_and_prints_comparison(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=25, tid="a")])
    write_transcripts(data / "b.jsonl", [coding_transcript(rounds=15, seed=1, tid="b")])
    out = tmp_path / "results"
    args = [
        "run",
        "-m",
        "strategy=none,sliding_window",
        f"dataset.paths=[{data}]",
        f"output.root={out}",
        "model=gpt-4-32k",
        "model.context_window=8000",
        "model.reserved_output_tokens=1000",
        "progress=false",
    ]
    first = run(*args)
    assert first.returncode == 0, first.stderr
    cells = summaries(out)
    assert len(cells) == 4  # 2 transcripts x 2 strategies
    assert "savings_vs_none" in first.stdout and "sliding_window" in first.stdout
    none_a = next(s for k, s in cells.items() if k.startswith("none/") and s["cell"]["transcript"] == "a")
    assert none_a["metrics"]["failed_calls"] > 0
    assert none_a["schema_version"] == "ctxbench.results/1" and none_a["cell"]["tokenizer"] == "cl100k_base"
    assert (out / "default" / "cells").is_dir()

    # Interrupt simulation: one cell lost its summary. A re-run recomputes only that cell.
    victim = next(p for p in out.rglob("summary.json") if "sliding_window" in str(p))
    victim.unlink()
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("summary.json")}
    second = run(*args)
    assert second.returncode == 0, second.stderr
    assert second.stderr.count("(1 reused)") == 1 and second.stderr.count("(2 reused)") == 1  # a line per job
    sweep = sorted((out / "default" / "jobs").iterdir())[-1]
    cell_lines = [
        line for log in sweep.glob("*/*.log") for line in log.read_text().splitlines() if "ctxbench.cells" in line
    ]
    assert len(cell_lines) == 5 and sum(" skip " in line for line in cell_lines) == 3  # a line per cell, in the log
    assert sum("not a complete cell" in line for line in cell_lines) == 1  # and why the victim is recomputed
    assert victim.exists()
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())
    recomputed = json.loads(victim.read_text())
    original = next(s for s in cells.values() if s["cell"]["config_hash"] == recomputed["cell"]["config_hash"])
    assert recomputed["metrics"] == original["metrics"]  # deterministic


def test_changed_threshold_makes_a_new_cell(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=10, tid="a")])
    common = [f"dataset.paths=[{data}]", f"output.root={tmp_path / 'r'}", "progress=false", "strategy=sliding_window"]
    assert run("run", *common).returncode == 0
    assert run("run", *common, "strategy.budget_ratio=0.5").returncode == 0
    assert len(summaries(tmp_path / "r")) == 2


def test_bad_input_is_one_line_and_keeps_written_results(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=5, tid="a")])
    out = tmp_path / "r"
    assert run("run", f"dataset.paths=[{data}]", f"output.root={out}", "progress=false").returncode == 0
    (data / "z.jsonl").write_text('{"id": "z", "messages": [\n', encoding="utf-8")
    bad = run("run", f"dataset.paths=[{data}]", f"output.root={out}", "progress=false", "--strict")
    assert bad.returncode != 0
    assert "Traceback" not in bad.stderr
    assert "z.jsonl:line 1: not valid JSON" in bad.stderr
    assert len(summaries(out)) == 1


def test_unknown_strategy_and_tokenizer_errors_are_clear(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=3, tid="a")])
    bad = run("run", f"dataset.paths=[{data}]", f"output.root={tmp_path}", "model.tokenizer=nope", "progress=false")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "unknown tokenizer 'nope'; available:" in bad.stderr


def test_help_lists_every_subcommand():
    from ctxbench.cli import COMMANDS

    out = run("--help")
    assert out.returncode == 0
    for name in COMMANDS:
        assert f"  {name} " in out.stdout


def test_main_job_log_is_short_names_the_results_and_the_next_command(tmp_path):
    """The main job's output piped to a file (a CI log): no progress-bar redraws, one line per
    job, the table, where the results are and what to run next; under 2 KB (issue 18)."""
    log = tmp_path / "ci.log"
    with log.open("wb") as sink:
        done = subprocess.run(
            [*CTXBENCH, "run", "-m", "dataset.limit=1"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            timeout=300,
        )
    text = log.read_text("utf-8")
    assert done.returncode == 0, text
    assert "\r" not in text and "\x1b[" not in text  # no bar redraws, no cursor codes
    assert len(log.read_bytes()) < 2048, f"{len(log.read_bytes())} bytes:\n{text}"
    assert text.count(" on gpt-4o [dataset.limit=1]: 1 cell, 91 calls, ") == 5 and "savings_vs_none" in text
    assert "Results: results/default/cells (5 cells" in text
    assert "Next: ctxbench report results/default --out results/default/report" in text
    assert len(list((tmp_path / "results" / "default" / "cells").glob("*/*/*/summary.json"))) == 5
    quiet = subprocess.run(
        [*CTXBENCH, "run", "-q", "-m", "dataset.limit=1"], capture_output=True, text=True, cwd=tmp_path
    )
    assert quiet.returncode == 0 and quiet.stderr == ""  # all reused; nothing but the table and the two lines
    assert "Results: " in quiet.stdout


def test_progress_bars_only_on_a_terminal_and_never_with_tqdm_disable(monkeypatch):
    import os
    import pty

    from ctxbench.progress import show_progress

    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w") as terminal, open(os.devnull, "w") as file:
            monkeypatch.delenv("TQDM_DISABLE", raising=False)
            assert show_progress("auto", terminal) and not show_progress("auto", file)
            assert show_progress(True, file) and show_progress("true", file) and not show_progress(False, terminal)
            monkeypatch.setenv("TQDM_DISABLE", "1")
            assert not show_progress("auto", terminal) and not show_progress(True, terminal)
    finally:
        os.close(leader)


def test_config_errors_exit_2_with_one_line(tmp_path):
    for override, words in [("strategy=nope", "Could not find 'strategy/nope'"), ("strategy.x=1", "strategy.x")]:
        bad = subprocess.run([*CTXBENCH, "run", override], capture_output=True, text=True, cwd=tmp_path)
        assert bad.returncode == 2, bad.stderr
        assert bad.stderr.startswith("ctxbench run: error: ") and words in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
