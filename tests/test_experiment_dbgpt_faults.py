"""`+experiment=dbgpt_faults` exercises llm=faults where it matters (issue 17.7): on a bundled
transcript DB-GPT's Layer 3 runs, so summariser failures, the circuit breaker and the summaries
that got through show in summary.json and in the printed table."""

import json
import subprocess

from tests.conftest import CTXBENCH, ROOT


def test_dbgpt_reaches_layer3_and_faults_show_as_metrics(tmp_path):
    args = ["run", "-m", "+experiment=dbgpt_faults", "dataset.limit=1", "hydra/launcher=basic"]
    args += [f"output.root={tmp_path}", "progress=false"]
    done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cells = {}
    for path in tmp_path.rglob("summary.json"):
        summary = json.loads(path.read_text())
        llm = next(o for o in summary["cell"]["overrides"] if o.startswith("llm="))
        cells[llm] = summary["metrics"]
    offline, faults, random = cells["llm=offline"], cells["llm=faults"], cells["llm=faults_random"]
    # Without faults Layer 3 summarises; with 3 failures first the breaker opens and nothing does.
    assert offline["layers"]["layer3"] > 0 and offline["summaries"] > 0 and offline["summariser_failures"] == 0
    assert faults["circuit_breaker_trips"] == 1 and faults["summaries"] == 0
    assert faults["llm_failures"] == {"summariser": {"error": 3}} and faults["summariser_failures"] == 3
    # Random faults: failures of several kinds, summaries between them, no three in a row.
    assert random["summaries"] > 0 and random["circuit_breaker_trips"] == 0
    assert len(random["llm_failures"]["summariser"]) >= 3
    assert random["summariser_failures"] == sum(random["llm_failures"]["summariser"].values())
    header = next(line for line in done.stdout.splitlines() if "strategy" in line)
    for column in ("summaries", "summariser_failures", "breaker_trips", "llm_failures"):
        assert column in header
    assert "S:error=3" in done.stdout
