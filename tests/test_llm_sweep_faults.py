"""A real `ctxbench run -m` with judge=llm against a real HTTP server on 127.0.0.1 that answers
with HTTP 500, 429, timeouts, empty and prose replies by turn: every cell of dbgpt, five_layer
and anchored_summary finishes, each failure is counted by role and kind (in summary.json, as
events, in the printed table) and the retries reach the server. A judge that says "correct" to
everything is flagged by the control answers in the table."""

import dataclasses
import json
import re
import subprocess
from collections import Counter
from pathlib import Path

from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript
from tests.llm_server import LLMServer

# One behaviour per request, in turn: failures that a retry gets past and failures that stay.
SCRIPT = [
    "ok", "error", "ok", "rate_limit", "rate_limit", "ok", "slow", "ok",
    "empty", "ok", "malformed", "ok", "error", "error", "ok", "slow", "slow", "ok",
]  # fmt: skip


FIVE_LAYER_SUMMARISING = """defaults: [five_layer, _self_]
proactive: []
reactive:
  - layer:
      _target_: ctxbench.layers.degraded_summary.DegradedSummary
      max_recent: ${strategy.params.max_recent_messages}
      attempts: 2
      backoff_min_ms: 1
      backoff_max_ms: 2
      max_summary_tokens: 500
      summary_prompt: five_layer_summary.txt
      merge_prompt: five_layer_merge.txt
    from_attempt: 0
"""


def model(request: dict) -> str:
    """A well-behaved model when the server lets it answer: summaries with the headings asked
    for, the port number as the answer, exact grades."""
    text = "\n".join(str(m["content"]) for m in request["messages"])
    if "exactly these headings" in text:
        span = text.split("<conversation>", 1)[-1].split("</conversation>", 1)[0]
        headings = [h for h in text.rsplit("exactly these headings", 1)[1].splitlines() if h.startswith("## ")]
        gist = " ".join(span.split()[:12])
        return "\n".join(f"{h}\n- {gist}" for h in headings)
    if "=== CONTEXT ===" in text:
        found = re.search(r"\b\d{5}\b", text.split("=== CONTEXT ===", 1)[1])
        return found.group(0) if found else "UNKNOWN"
    gold = re.search(r"Gold answer: (.*)", text).group(1).strip()
    given = re.search(r"Answer given: (.*)", text).group(1).strip()
    return json.dumps({"correct": gold == given, "score": 5 if gold == given else 0})


def yes_man(request: dict) -> str:
    text = "\n".join(str(m["content"]) for m in request["messages"])
    return model(request) if "Gold answer" not in text else '{"correct": true, "score": 5}'


def write_configs(conf: Path, api_base: str) -> None:
    role = {
        "model": "openai/scripted",
        "api_base": api_base,
        "timeout": 1.0,
        "num_retries": 1,
        "retry_min_seconds": 0.01,
        "retry_max_seconds": 0.02,
        "input_price_per_mtok": 1.0,
        "output_price_per_mtok": 2.0,
        "cassette": {"mode": "live"},
    }
    (conf / "llm").mkdir(parents=True)
    (conf / "llm" / "flaky.yaml").write_text(json.dumps({"summariser": role, "answerer": role, "judge": role}))
    # DB-GPT's budget is its own setting (120k by default): a small one here, so Layer 3 summarises.
    (conf / "strategy").mkdir()
    (conf / "strategy" / "dbgpt_small.yaml").write_text(
        "defaults: [dbgpt, _self_]\nparams: {max_context_tokens: 7000, reserved_tokens: 1000, min_keep_tokens: 6000}\n"
    )
    # five_layer summarises only when pruning did not make the prompt fit: summarise straight away here.
    (conf / "strategy" / "five_layer_summarising.yaml").write_text(FIVE_LAYER_SUMMARISING)


def sweep(tmp_path: Path, server: LLMServer, strategies: str, out: str) -> tuple[str, list[Path]]:
    data = tmp_path / "data"
    transcript = coding_transcript(rounds=24, lines_per_output=60, tid="a")
    # A tool five_layer does not clear (its whitelist has Bash), so its history grows to a summary.
    transcript.messages[:] = [
        dataclasses.replace(
            m,
            name="run_checks" if m.role == "tool" else m.name,
            tool_calls=tuple(dataclasses.replace(c, name="run_checks") for c in m.tool_calls),
        )
        for m in transcript.messages
    ]
    write_transcripts(data / "a.jsonl", [transcript])
    args = [
        "run",
        "-m",
        "--config-dir",
        str(tmp_path / "conf"),
        f"strategy={strategies}",
        "llm=flaky",
        "judge=llm",
        f"dataset.paths=[{data}]",
        f"output.root={tmp_path / out}",
        "model=gpt-4-32k",
        "model.context_window=8000",
        "model.reserved_output_tokens=1000",
        "progress=false",
    ]
    done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done.stdout, sorted((tmp_path / out).rglob("summary.json"))


def test_every_cell_finishes_and_every_failure_is_counted_by_role_and_kind(tmp_path):
    with LLMServer(script=SCRIPT, reply=model, sleep_seconds=2.5) as server:
        write_configs(tmp_path / "conf", server.api_base)
        stdout, summaries = sweep(tmp_path, server, "dbgpt_small,five_layer_summarising,anchored_summary", "flaky")
        requests = len(server.requests)
    assert len(summaries) == 3
    kinds: Counter = Counter()
    roles: set = set()
    calls = 0
    for path in summaries:
        metrics = json.loads(path.read_text())["metrics"]
        assert metrics["compaction_calls"] > 0 and metrics["judge_calls"] > 0
        events = [json.loads(line) for line in (path.parent / "events.jsonl").read_text().splitlines()]
        failed = Counter((e["role"], e["kind"]) for e in events if e["type"] == "llm.failure")
        counted = Counter({(r, k): n for r, ks in metrics["llm_failures"].items() for k, n in ks.items()})
        assert failed == counted  # every failure counted is an event, and the other way round
        assert metrics["llm_failures_total"] == sum(counted.values())
        kinds.update(k for (_, k), n in counted.items() for _ in range(n))
        roles.update(metrics["llm_failures"])
        calls += metrics["compaction_calls"] + metrics["judge_calls"]
        retried = metrics["compaction_retries"] + metrics["judge_retries"]
        assert metrics["total_cost_usd"] == round(
            metrics["agent_cost_usd"] + metrics["compaction_cost_usd"] + metrics["judge_cost_usd"], 6
        )
        assert metrics["unjudged"] <= metrics["probes"] * 10
        calls += retried  # each retry is one more request
    assert {"error", "rate_limit", "timeout", "empty", "malformed"} <= set(kinds)
    assert {"summariser", "judge"} <= roles
    assert calls == requests  # every request the server saw is a call or a retry, no more
    assert "llm_failures" in stdout and "S:" in stdout and "J:" in stdout


def test_a_judge_that_says_correct_to_everything_is_flagged_in_the_table(tmp_path):
    with LLMServer(reply=yes_man) as server:
        write_configs(tmp_path / "conf", server.api_base)
        stdout, (summary,) = sweep(tmp_path, server, "sliding_window", "yes")
    metrics = json.loads(summary.read_text())["metrics"]
    assert metrics["judge_false_positive_rate"] == 1.0 and metrics["judge_trusted"] is False
    assert "untrusted FP 100%" in stdout
    assert (summary.parent / "judge_controls.jsonl").exists()
