"""The LLM judge end to end: a real HTTP model server on 127.0.0.1, a real `ctxbench run
judge=llm` in record mode, then the same run replayed from the cassette with the server stopped."""

import json
import re
import subprocess
from pathlib import Path

from ctxbench.judges.agreement import agreement, cohen_kappa
from ctxbench.judges.llm import LLMJudge, parse_grade
from ctxbench.llm import build_client
from ctxbench.transcripts import Message, Probe, write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript
from tests.llm_server import LLMServer


def scripted_reply(prompt: str) -> str:
    """A scripted model: answers with the first 5-digit number in the context; grades by
    checking the gold value is in the answer. Deterministic, so record/replay can be compared."""
    if "=== CONTEXT ===" in prompt:
        context = prompt.split("=== CONTEXT ===", 1)[1].split("=== END CONTEXT ===", 1)[0]
        found = re.search(r"\b\d{5}\b", context)
        return found.group(0) if found else "UNKNOWN"
    gold = re.search(r"Gold answer: (.*)", prompt).group(1).strip()
    answer = re.search(r"Answer given: (.*)", prompt).group(1).strip()
    correct = gold.lower() in answer.lower()
    return json.dumps({"correct": correct, "score": 5 if correct else 0, "accuracy": 5 if correct else 0})


def scripted_model(request: dict) -> str:
    return scripted_reply("\n".join(m["content"] for m in request["messages"]))


def ScriptedModelServer() -> LLMServer:  # noqa: N802 (reads like the class it returns)
    return LLMServer(reply=scripted_model)


def llm_config(path: Path, api_base: str, mode: str, cassettes: Path) -> None:
    role = {
        "model": "openai/scripted",
        "api_base": api_base,
        "num_retries": 0,
        "timeout": 30,
        "input_price_per_mtok": 1.0,
        "output_price_per_mtok": 2.0,
        "cassette": {"mode": mode, "dir": str(cassettes)},
    }
    text = json.dumps({"summariser": "extractive", "answerer": role, "judge": role})
    (path / "llm").mkdir(parents=True, exist_ok=True)
    (path / "llm" / f"scripted_{mode}.yaml").write_text(text, encoding="utf-8")  # JSON is YAML


def run_llm_judged(tmp_path: Path, data: Path, mode: str, out: str) -> dict:
    args = [
        "run",
        "--config-dir",
        str(tmp_path / "conf"),
        f"llm=scripted_{mode}",
        "judge=llm",
        "strategy=sliding_window",
        "strategy.keep_first_user=false",
        f"dataset.paths=[{data}]",
        f"output.root={tmp_path / out}",
        "model=gpt-4-32k",
        "model.context_window=8000",
        "model.reserved_output_tokens=1000",
        "progress=false",
    ]
    done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    (summary,) = list((tmp_path / out).rglob("summary.json"))
    return json.loads(summary.read_text())["metrics"]


def test_record_then_replay_with_server_stopped_gives_identical_scores(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=30, tid="a")])
    cassettes = tmp_path / "rec" / "default" / "cassettes"  # a recording run writes inside its results folder
    with ScriptedModelServer() as server:
        llm_config(tmp_path / "conf", server.api_base, "record", cassettes)
        llm_config(tmp_path / "conf", server.api_base, "replay", cassettes)
        recorded = run_llm_judged(tmp_path, data, "record", "rec")
    replayed = run_llm_judged(tmp_path, data, "replay", "rep")  # server is stopped now
    keys = ["retention_all", "retention_by_kind", "dropped", "judge_agreement", "judge_calls", "judge_control"]
    assert {k: recorded[k] for k in keys} == {k: replayed[k] for k in keys}
    assert recorded["judge_calls"] > 0 and recorded["judge_cost_usd"] > 0
    # The sliding window drops the task message, so the port is lost (the probe counts as trivial,
    # stated in the first user message, so it is in retention_all only)...
    assert recorded["retention_all"] == 0.0 and recorded["unjudged"] == 0
    # ...and the deterministic judge beside it agrees on every verdict.
    assert recorded["judge_agreement"]["deterministic"]["accuracy"] == 1.0
    assert recorded["judge_agreement"]["repeat"]["accuracy"] == 1.0
    assert list(cassettes.glob("*.jsonl"))


def test_llm_judge_scores_kept_and_lost_through_a_real_server(tmp_path):
    probe = Probe("port", "Which port?", "47213", "recall", 0)
    with ScriptedModelServer() as server:
        role = {"model": "openai/scripted", "api_base": server.api_base, "num_retries": 0}
        judge = LLMJudge(build_client(role, tmp_path, "answerer"), build_client(role, tmp_path, "judge"))
        kept = judge.judge(probe, [Message("user", "the server listens on 47213")])
        lost = judge.judge(probe, [Message("user", "nothing here")])
    assert (kept.status, kept.score, kept.answer) == ("kept", 5.0, "47213")
    assert (lost.status, lost.answer) == ("lost", "UNKNOWN")


def test_parse_grade_and_kappa():
    assert parse_grade('Sure: {"correct": true, "score": 4}') == {"correct": True, "score": 4}
    assert parse_grade("no json here") is None
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == 0.5
    assert agreement([True, False], [True, False]) == {"n": 2, "accuracy": 1.0, "kappa": 1.0}
