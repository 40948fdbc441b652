"""The whole LLM-judged path replayed offline from real-model cassettes: Qwen2.5-Coder-0.5B-Instruct
served by llama.cpp summarised (anchored_summary), answered and graded two short dev transcripts
(scripts/record_local_cassettes.sh), with the probes in probes.json. With llm=replay and no
server, the run must find every request in the cassettes and reproduce the recorded metrics exactly."""

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CTXBENCH, ROOT

CASSETTES = ROOT / "tests" / "data" / "cassettes" / "local"
TRANSCRIPTS = (
    "swe-agent-official/trajectories/demonstrations/ctf/crypto/katy.traj",
    "swe-agent-official/trajectories/demonstrations/ctf/rev/rock.traj",
)
# Everything the LLMs decided; none of it may differ between the recording and its replay.
COMPARED = (
    "layers",
    "summaries",
    "tokens_sent_total",
    "compaction_calls",
    "compaction_cache_hits",
    "judge_calls",
    "judge_cache_hits",
    "llm_failures",
    "retention_all",
    "unjudged",
    "judge_agreement",
    "judge_control",
    "cost_usd",
)


def test_real_model_cassettes_replay_the_llm_judged_run_offline(shared_transcripts: Path, tmp_path: Path):
    expected_file = CASSETTES / "expected_metrics.json"
    if not expected_file.exists():
        pytest.skip("no real-model cassettes recorded yet (bash scripts/record_local_cassettes.sh)")
    data = tmp_path / "data"
    imported = subprocess.run(
        [*CTXBENCH, "import", *(str(shared_transcripts / t) for t in TRANSCRIPTS), "--out", str(data)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert imported.returncode == 0, imported.stderr
    # The probes the cassettes were recorded with, given as the transcripts' own: the requests stay
    # the recorded ones whatever the extractor asks today (re-record to follow it).
    recorded = json.loads((CASSETTES / "probes.json").read_text("utf-8"))
    for path in data.glob("*.jsonl"):
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        for row in rows:
            row["probes"] = recorded[row["id"]]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    roles = [f"llm.{r}.cassette.dir={CASSETTES}" for r in ("summariser", "answerer", "judge")]
    args = ["run", "-m", "+experiment=local_cassettes", "llm=replay", f"dataset.paths=[{data}]"]
    args += [f"output.root={tmp_path / 'out'}", "progress=false", *roles]
    done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]  # a request not in the cassettes stops the run (CassetteMiss)
    replayed = {}
    for path in (tmp_path / "out").rglob("summary.json"):
        summary = json.loads(path.read_text("utf-8"))
        assert summary["cell"]["summariser"] == "llm:openai/local-model"
        replayed[summary["cell"]["transcript"]] = summary["metrics"]
    expected = json.loads(expected_file.read_text("utf-8"))
    assert sorted(replayed) == sorted(expected) == ["katy", "rock"]
    for transcript, metrics in expected.items():
        assert metrics["compaction_calls"] > 0 and metrics["judge_calls"] > 0
        assert {k: replayed[transcript].get(k) for k in COMPARED} == {k: metrics.get(k) for k in COMPARED}
