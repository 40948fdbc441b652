"""The tokens plot draws a strategy's thresholds as the cell used them (issue 27: DB-GPT at a 16k
window drew 81k/104k/110k from its config while its events said "budget": 11904)."""

import json
import subprocess
from pathlib import Path

from ctxbench.report.load import gather
from ctxbench.report.plots import threshold_lines
from tests.conftest import CTXBENCH, ROOT


def test_dbgpt_thresholds_are_the_budget_its_events_report(tmp_path):
    run = [*CTXBENCH, "run", "strategy=dbgpt", "model.context_window=16000", f"output.root={tmp_path}"]
    run += ["dataset.include=[synth-sql_060k]", "progress=false"]
    done = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    rs = gather([tmp_path / "default"])
    (cell,) = [str(p) for p in rs.paths]
    events = [json.loads(line) for line in Path(cell, "events.jsonl").read_text().splitlines()]
    (budget,) = {e["budget"] for e in events if e["type"] == "context.status"}
    assert budget == 16000 - 4096
    levels = [level for _, level in threshold_lines(rs, [cell])]
    assert levels == [round(0.7 * budget), round(0.9 * budget)]
    # Without the recorded prompts (output.contexts=false), the same levels from the events' budget.
    (tmp_path / "default" / "cells").rename(tmp_path / "kept")
    done = subprocess.run([*run, "output.contexts=false"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    rs = gather([tmp_path / "default"])
    levels = sorted({level for _, level in threshold_lines(rs, [str(p) for p in rs.paths])})
    assert [round(v) for v in levels][:2] == [round(0.7 * budget), round(0.9 * budget)]
    assert max(levels) < 16000
