"""DB-GPT strategy as configured (ctxbench/configs/strategy/dbgpt.yaml): seed defaults, budget, states,
DB-GPT counting, status events of a real replay, and an end-to-end `ctxbench run`."""

import json
import random
import subprocess
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ctxbench.build import build_estimator, build_model, build_strategy
from ctxbench.llm import ExtractiveSummariser
from ctxbench.replay.engine import replay
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.dbgpt import DbgptEstimator
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts import write_transcripts
from ctxbench.transcripts.model import Message, ToolCall, Transcript
from tests.conftest import CTXBENCH, ROOT

CONFIG_DIR = ROOT / "ctxbench" / "configs"
SEED_DEFAULTS = {  # the seed's [service.web.agent_context] block
    "max_context_tokens": 120000,
    "reserved_tokens": 4096,
    "warning_threshold": 0.70,
    "error_threshold": 0.90,
    "critical_threshold": 0.95,
    "min_keep_recent_rounds": 3,
    "max_observation_age_rounds": 5,
    "truncated_observation_max_chars": 200,
    "min_keep_tokens": 10000,
    "max_compact_failures": 3,
}
ORDER = [None, "layer1", "layer2", "layer3"]


def react_transcript(rounds: int = 40, seed: int = 0, tid: str = "react40") -> Transcript:
    """A DB-GPT ReAct conversation: long thoughts and big SQL-result observations."""
    rng = random.Random(seed)
    words = [
        "select",
        "from",
        "where",
        "revenue",
        "region",
        "table",
        "column",
        "value",
        "sum",
        "group",
        "order",
        "limit",
        "join",
    ]
    messages = [
        Message("system", "You are a ReAct data agent."),
        Message("user", "Find the top region by revenue in sales.db and report it."),
    ]
    for i in range(rounds):
        thought = " ".join(rng.choice(words) for _ in range(300))
        messages.append(
            Message(
                "assistant",
                f"Thought: step {i} {thought}\nAction Intention: query {i}\nAction Reason: need rows\n"
                f'Action: sql_query\nAction Input: {{"sql": "SELECT region, revenue FROM t{i}"}}',
            )
        )
        rows = "\n".join(f"| r{i}_{j} | {rng.randint(0, 10**6)} |" for j in range(250))
        messages.append(Message("user", f"Observation: {rows}"))
    messages.append(Message("assistant", 'Thought: done\nAction: terminate\nAction Input: {"result": "north"}'))
    return Transcript(tid, messages, source={"format": "test"})


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=["strategy=dbgpt", *overrides])


def test_params_are_the_seed_defaults_plus_snapshot_settings():
    params = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "strategy" / "dbgpt.yaml").params)
    assert {k: params[k] for k in SEED_DEFAULTS} == SEED_DEFAULTS
    assert params["snapshots"] is True and params["task_progress"] is True


def test_budget_follows_seed_default_null_and_non_positive():
    cases = {("model=gpt-4o",): 115904, ("model=gpt-4-32k", "strategy.params.max_context_tokens=null"): 32768 - 4096}
    cases[("model=gpt-4o", "strategy.params.max_context_tokens=0")] = 115904  # non-positive falls back to 120000
    cases[("model=gpt-4-32k", "strategy.params.reserved_tokens=1000", "strategy.params.max_context_tokens=20000")] = (
        19000
    )
    for extra, budget in cases.items():
        cfg = composed(*extra)
        assert build_strategy(cfg).budget.effective(build_model(cfg)) == budget, extra


def test_five_states():
    strategy = build_strategy(composed())
    assert [strategy.classify(r) for r in (0.0, 0.6999, 0.70, 0.8999, 0.90, 0.9499, 0.95, 0.9999, 1.0, 3.0)] == [
        "normal", "normal", "warning", "warning", "error", "error", "critical", "critical", "overflow", "overflow",
    ]  # fmt: skip


def test_estimator_is_dbgpt_counting():
    cfg = composed("model=gpt-4-32k")
    estimator = build_estimator(cfg)
    assert isinstance(estimator, DbgptEstimator) and estimator.name == "dbgpt:cl100k_base"
    assert DbgptEstimator("gpt-4o").encoding == "o200k_base"
    assert DbgptEstimator("claude-sonnet-4").encoding == "cl100k_base"  # not an OpenAI model
    text = "SELECT region, SUM(revenue) FROM sales GROUP BY region; -- naïve ünïcode"
    message = Message("user", text)
    assert estimator.message(message) == get_tokenizer("cl100k_base").count(text)  # content only, no framing
    call = Message("assistant", "", tool_calls=(ToolCall("c1", "sql_query", '{"sql": "SELECT 1"}'),))
    assert estimator.message(call) == get_tokenizer("cl100k_base").count('sql_query {"sql": "SELECT 1"}')
    fallback = DbgptEstimator("text-davinci-003")  # p50k_base: not available offline -> len // 4
    assert fallback.name == "dbgpt:len4" and fallback.message(Message("user", text)) == len(text) // 4


def _replay(tmp_path: Path, *overrides: str):
    cfg = composed("model=gpt-4-32k", "strategy.params.max_context_tokens=null", *overrides)
    model, strategy = build_model(cfg), build_strategy(cfg)
    result = replay(
        react_transcript(),
        strategy,
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer(model.tokenizer)),
        workdir=tmp_path,
        summariser=ExtractiveSummariser(),
    )
    return strategy, result


def test_status_events_follow_every_count_and_layer(tmp_path):
    strategy, result = _replay(tmp_path)
    by_call: dict[int, list[dict]] = {}
    for event in result.events:
        if event["type"] == "context.status":
            by_call.setdefault(event["call"], []).append(event)
    assert sorted(by_call) == list(range(len(result.calls)))
    escalated = 0
    for call, events in by_call.items():
        assert set(events[0]) == {"call", "type", "used", "budget", "ratio", "state", "compact_layer"}
        layers = [e["compact_layer"] for e in events]
        assert layers == ORDER[: len(layers)], (call, layers)  # progressive: null, layer1, layer2, layer3
        for event in events:
            assert event["budget"] == 28672
            assert event["ratio"] == round(event["used"] / 28672, 4)
            assert event["state"] == strategy.classify(event["used"] / 28672)
        # Layer 1 runs (and reports) at warning and above; Layer 2 only if still at warning after it.
        assert (len(layers) > 1) == (events[0]["state"] != "normal")
        if len(layers) > 1:
            escalated += 1
            assert (len(layers) > 2) == (events[1]["state"] != "normal")
        assert result.calls[call]["state"] == events[-1]["state"]
    assert escalated >= 5
    metrics = result.summary
    assert metrics["layers"].get("layer1", 0) > 0 and metrics["layers"].get("layer2", 0) > 0
    assert metrics["invalid_requests"] == 0 and metrics["failed_calls"] == 0


def test_lower_error_threshold_brings_in_layer3(tmp_path):
    # Layer 2 may keep up to 26000 tokens (> 0.8 of the budget): after Layers 1 and 2 ran (and
    # reported), the prompt is still at error, so Layer 3 summarises in the same call.
    _, result = _replay(tmp_path, "strategy.params.error_threshold=0.8", "strategy.params.min_keep_tokens=26000")
    assert result.summary["layers"].get("layer3", 0) > 0
    full = [c["call"] for c in result.calls if "layer3" in c["layers"]]
    for call in full:
        status = [e for e in result.events if e["call"] == call and e["type"] == "context.status"]
        assert [e["compact_layer"] for e in status] == ORDER
        assert status[2]["ratio"] >= 0.8 > status[3]["ratio"]
    summaries = [e for e in result.events if e["type"] == "compaction.summary"]
    assert summaries and all(e["summariser"] == "extractive" for e in summaries)
    assert any(m.content.startswith("[Context Summary of ") for m in result.working)


def test_layer4_rescues_a_call_the_proactive_layers_cannot_shrink(tmp_path):
    """Three ~10k-token observations: Layer 1 has no old round, Layer 2 keeps its 3 rounds, Layer 3
    has no summariser; the provider rejects with a matching error, Layer 4 keeps 2 rounds, the
    retry is accepted."""
    messages = [Message("system", "agent"), Message("user", "task")]
    for i in range(6):
        messages.append(Message("assistant", f"Thought: {i}\nAction: read\nAction Input: x"))
        messages.append(Message("user", "Observation: " + " ".join(f"row{j}" for j in range(3500))))
    messages.append(Message("assistant", "Thought: done"))
    cfg = composed("model=gpt-4-32k", "strategy.params.max_context_tokens=null")
    model = build_model(cfg)
    transcript = Transcript("big", messages)
    result = replay(
        transcript,
        build_strategy(cfg),
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer(model.tokenizer)),
        summariser=None,
    )
    assert [c["accepted"] for c in result.calls] == [True] * 7
    assert [c["retries"] for c in result.calls] == [0, 0, 0, 1, 1, 1, 1]
    last = result.calls[-1]
    assert last["overflow_errors"] == 1 and last["retries"] == 1 and last["accepted"]
    assert last["layers"][-1] == "layer4"
    status = [e for e in result.events if e["call"] == last["call"] and e["type"] == "context.status"]
    assert status[-1]["compact_layer"] == "layer4"


def test_end_to_end_run(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "react.jsonl", [react_transcript()])
    out = tmp_path / "results"
    args = [
        "run",
        "-m",
        "strategy=dbgpt",
        "model=gpt-4-32k",
        "strategy.params.max_context_tokens=null",
        # warning < error is required (ctxbench/validation.py): Layer 2 keeping 23000 tokens leaves the
        # prompt above an error threshold of 0.75 of the 28672-token budget (Layer 3 runs), under 0.9.
        "strategy.params.min_keep_tokens=23000",
        "strategy.params.error_threshold=0.9,0.75",
        f"dataset.paths=[{data}]",
        f"output.root={out}",
        "progress=false",
    ]
    proc = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    cells = {}
    for summary in out.rglob("summary.json"):
        data_ = json.loads(summary.read_text())
        threshold = next(o for o in data_["cell"]["overrides"] if "error_threshold" in o).split("=")[1]
        cells[threshold] = (summary.parent, data_["metrics"])
    assert set(cells) == {"0.9", "0.75"}
    for threshold, (cell, metrics) in cells.items():
        calls = [json.loads(line) for line in (cell / "calls.jsonl").read_text().splitlines()]
        layers = {layer for c in calls for layer in c["layers"]}
        if threshold == "0.9":  # the default error threshold: Layers 1 and 2 suffice
            assert {"layer1", "layer2"} <= layers and "layer3" not in layers
        else:  # a lower error threshold than Layer 2's floor: the LLM summary runs
            assert "layer3" in layers
        assert metrics["invalid_requests"] == 0 and metrics["failed_calls"] == 0
        assert metrics["savings"] > 0.5
        lines = (cell / "op_snapshots.jsonl").read_text("utf-8").splitlines()
        snapshots = [json.loads(line)["path"] for line in lines]
        assert (
            len(snapshots) == 40
            and snapshots[2] == "/root/.dbgpt/workspace/op_snapshots/react40/step_003_sql_query.json"
        )
        events = [json.loads(line) for line in (cell / "events.jsonl").read_text().splitlines()]
        assert {e["compact_layer"] for e in events if e["type"] == "context.status"} >= {None} | layers


def _replay_with(summariser, *overrides: str, transcript: Transcript | None = None):
    cfg = composed("model=gpt-4-32k", "strategy.params.max_context_tokens=null", *overrides)
    model = build_model(cfg)
    return replay(
        transcript or react_transcript(),
        build_strategy(cfg),
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer(model.tokenizer)),
        summariser=summariser,
    )


def _status_by_call(result) -> dict[int, list]:
    by_call: dict[int, list] = {}
    for event in result.events:
        if event["type"] == "context.status":
            by_call.setdefault(event["call"], []).append(event["compact_layer"])
    return by_call


def test_after_the_breaker_opens_only_the_first_count_is_reported():
    """DB-GPT's manage_context returns right after its first status event once the breaker tripped."""
    from ctxbench.llm.faults import FaultConfig, FaultInjectingSummariser

    failing = FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=1000))
    result = _replay_with(failing, "strategy.params.error_threshold=0.35")
    opened = next(e["call"] for e in result.events if e["type"] == "circuit_breaker.open")
    by_call = _status_by_call(result)
    later = [layers for call, layers in by_call.items() if call > opened]
    # (the history then grows until the provider rejects it: Layer 4 still reacts, as in DB-GPT)
    assert later and all(layers in ([None], [None, "layer4"]) for layers in later), later
    # Before it opened, a failed Layer 3 reports nothing (DB-GPT raises past its status event).
    failed = {e["call"] for e in result.events if e["type"] == "compaction.failure"}
    assert all("layer3" not in by_call[call] for call in failed)


def test_layer4_reports_only_its_own_count():
    """DB-GPT's reactive_compact emits one status event, compact_layer layer4, and no fresh null one."""
    messages = [Message("system", "agent"), Message("user", "task")]
    for i in range(6):
        messages.append(Message("assistant", f"Thought: {i}\nAction: read\nAction Input: x"))
        messages.append(Message("user", "Observation: " + " ".join(f"row{j}" for j in range(3500))))
    messages.append(Message("assistant", "Thought: done"))
    result = _replay_with(None, transcript=Transcript("big", messages))
    last = result.calls[-1]
    assert last["layers"][-1] == "layer4"
    layers = _status_by_call(result)[last["call"]]
    assert layers.count(None) == 1 and layers[-1] == "layer4" and layers[-2] != None  # noqa: E711


def test_budget_is_the_smaller_of_the_setting_and_the_model_window():
    """max_context_tokens 120000 on a 32k model: DB-GPT plans against the model (min of the two)."""
    assert build_strategy(composed("model=gpt-4-32k")).budget.effective(build_model(composed("model=gpt-4-32k"))) == (
        32768 - 4096
    )
    cfg = composed("model=gpt-4o")  # 128k window: the setting is the smaller
    assert build_strategy(cfg).budget.effective(build_model(cfg)) == 120000 - 4096


def test_dbgpts_agent_readings_are_available_fixed_budget_and_500_char_observations():
    """DB-GPT 0.8.2's agent (ctxbench/upstream/differences.py): a fixed 120,000-token budget whatever the
    model (strategy.params.follow_model_window=false) and budget.py's truncated_observation_max_chars
    500 (the seed's TOML: 200, the default)."""
    cfg = composed("model=gpt-4-32k", "strategy.params.follow_model_window=false")
    assert build_strategy(cfg).budget.effective(build_model(cfg)) == 120000 - 4096
    cfg = composed("model=gpt-4-32k", "strategy.params.truncated_observation_max_chars=500")
    layer = next(step.layer for step in build_strategy(cfg).proactive if step.layer.name == "layer1")
    assert layer.max_chars == 500
    assert composed().strategy.params.truncated_observation_max_chars == 200
