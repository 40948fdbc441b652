"""End to end: `ctxbench run strategy=five_layer` (the real Hydra app, in a subprocess) on a small
transcript built here, with a 16,000-token window so every layer has work to do."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from ctxbench.transcripts import write_transcripts
from ctxbench.transcripts.model import Message, ToolCall, Transcript
from tests.conftest import CTXBENCH, ROOT

WINDOW = 16_000


def _lines(rng: random.Random, prefix: str, chars: int) -> str:
    out, size = [], 0
    while size < chars:
        line = f"{prefix} row={len(out)} id={rng.getrandbits(40):x} value={rng.random():.6f} ok"
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def five_layer_transcript(seed: int = 0) -> Transcript:
    """Reads, bash runs, a write, then large results of a tool the whitelist does not cover."""
    rng = random.Random(seed)
    msgs = [
        Message("system", "You are a careful data agent."),
        Message("user", "Reconcile the ledger. The audit id is AUD-7731; never delete rows."),
    ]
    n = 0

    def call(tool: str, body: str, text: str = "") -> None:
        nonlocal n
        cid = f"call_{n}"
        n += 1
        msgs.append(Message("assistant", text or f"Running {tool}.", tool_calls=(ToolCall(cid, tool, "{}"),)))
        msgs.append(Message("tool", body, tool_call_id=cid, name=tool))

    call("read_file", _lines(rng, "ledger.csv", 30_000))  # one result over the single-result budget
    for i in range(5):
        call("bash", _lines(rng, f"check_{i}", 6_000))  # old whitelisted results to compact
    call("write_file", "wrote reconcile.py (42 lines)")
    msgs.append(Message("user", "Now create the warehouse tables one by one."))
    for i in range(5):
        # a Write-type tool (kept by name and by what it does): only pruning helps
        call("create_table", _lines(rng, f"warehouse_t{i}", 15_500))
    msgs.append(Message("assistant", "Done: the ledger reconciles for audit AUD-7731."))
    return Transcript("t-five-layer", msgs, source={"format": "test"})


def run_five_layer(tmp_path: Path, *overrides: str) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    write_transcripts(data / "five.jsonl", [five_layer_transcript()])
    out = tmp_path / "results"
    cmd = [
        *CTXBENCH,
        "run",
        "strategy=five_layer",
        "model=gpt-4-32k",
        f"model.context_window={WINDOW}",
        f"dataset.paths=[{data}]",
        f"output.root={out}",
        "progress=false",
        *overrides,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cells = list(out.glob("*/cells/five_layer/*/*/summary.json"))
    assert len(cells) == 1, list(out.rglob("*"))
    return cells[0].parent


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_five_layer(tmp_path_factory.mktemp("five"))


def test_end_to_end_layers_retries_and_valid_requests(cell: Path) -> None:
    metrics = json.loads((cell / "summary.json").read_text())["metrics"]
    calls = _jsonl(cell / "calls.jsonl")
    events = _jsonl(cell / "events.jsonl")
    layers = metrics["layers"]
    assert layers.get("truncate_tool_result", 0) >= 1  # strategy 1: the 30,000-char read
    assert layers.get("compact_old_tool_results", 0) >= 1  # strategy 2: old bash outputs
    assert layers.get("prune_history", 0) >= 1  # strategy 3
    assert metrics["overflow_errors"] >= 1 and metrics["retries"] >= 1
    assert metrics["failed_calls"] == 0 and metrics["invalid_requests"] == 0
    assert all(c["request_problems"] == 0 for c in calls)
    assert metrics["estimator"]["name"] == "ema:0.3" and metrics["estimator"]["samples"] == len(calls)
    assert 0 < metrics["savings"] < 1
    kinds = {e["type"] for e in events}
    assert {"five_layer.truncate", "five_layer.compact", "five_layer.prune", "overflow_error"} <= kinds
    # When pruning alone is not enough (by the estimate), the same reaction summarises.
    summaries = [e for e in events if e["type"] == "five_layer.summary"]
    assert summaries and all(e["level"] == 1 for e in summaries)
    retried = {c["call"] for c in calls if c["retries"] >= 1}
    assert {e["call"] for e in summaries} <= retried


def test_end_to_end_degradation_under_injected_faults(tmp_path: Path) -> None:
    cell = run_five_layer(tmp_path, "+llm.faults.fail_first_n=1000")
    events = _jsonl(cell / "events.jsonl")
    summaries = [e for e in events if e["type"] == "five_layer.summary"]
    assert summaries and all(e["level"] == 3 for e in summaries)
    assert all(e["usage"]["faults"] == e["attempts"] for e in summaries)
    metrics = json.loads((cell / "summary.json").read_text())["metrics"]
    assert metrics["invalid_requests"] == 0


def _strategy_cfg(name: str):  # noqa: ANN202 - a DictConfig
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "ctxbench" / "configs"), version_base="1.3"):
        return compose("config", overrides=[f"strategy={name}", "model=gpt-4-32k"])


def test_config_builds_with_reference_constants_and_ema_estimator() -> None:
    from ctxbench.build import build_estimator, build_strategy
    from ctxbench.layers.compact_old_tool_results import CompactOldToolResults
    from ctxbench.layers.degraded_summary import DegradedSummary
    from ctxbench.layers.fit_tool_results import FitToolResults
    from ctxbench.layers.prune_history import PruneHistory
    from ctxbench.tokens.estimators import EmaEstimator

    cfg = _strategy_cfg("five_layer")
    strategy = build_strategy(cfg)
    estimator = build_estimator(cfg)
    assert isinstance(estimator, EmaEstimator)
    assert (estimator.alpha, estimator.cpt, estimator.min_cpt, estimator.max_cpt) == (0.3, 4.0, 1.0, 8.0)
    assert strategy.max_retries == 5
    truncate, compact, prune = (s.layer for s in strategy.proactive)
    assert (truncate.share, truncate.chars_per_token) == (0.5, 2)
    assert isinstance(compact, CompactOldToolResults) and compact.headroom == 0.75 and compact.protect_recent == 0
    assert isinstance(prune, PruneHistory)
    assert (strategy.proactive[2].when, strategy.proactive[2].of) == (0.9, "window")
    reactive_prune, summary, fit = strategy.reactive
    assert isinstance(reactive_prune.layer, PruneHistory) and reactive_prune.until_attempt == 0
    assert isinstance(summary.layer, DegradedSummary) and (summary.when, summary.forced_from_attempt) == (1.0, 1)
    assert (summary.layer.tail_by, summary.layer.head) == ("tokens", "system")
    assert isinstance(fit.layer, FitToolResults) and (fit.when, fit.forced_from_attempt) == (1.0, 1)
    assert (fit.layer.budget, fit.layer.safety_margin) == ("prompt", 1.2)
    plan = summary.layer.plan
    assert (plan.base_chunk_ratio, plan.min_chunk_ratio, plan.safety_margin, plan.default_parts) == (0.4, 0.15, 1.2, 2)
    assert (plan.min_messages_for_split, plan.summarization_overhead_tokens, plan.max_chunks) == (4, 4096, 4)
    assert summary.layer.attempts == 3 and summary.layer.backoff == (500, 5000, 0.2)
    assert strategy.is_overflow(type("E", (), {"text": "prompt is too long: 210000 tokens"})())
    assert not strategy.is_overflow(type("E", (), {"text": "Rate limit reached for requests"})())


def test_later_variant_config() -> None:
    from ctxbench.build import build_strategy

    strategy = build_strategy(_strategy_cfg("five_layer_v2"))
    compact = strategy.proactive[1].layer
    assert (compact.headroom, compact.protect_recent, compact.min_savings_ratio) == (0.8, 3, 0.2)
    assert strategy.name == "five_layer_v2"


def test_preemptive_prune_fires_on_the_ema_estimate() -> None:
    from ctxbench.build import build_estimator, build_strategy
    from tests.five_layer_helpers import make_ctx

    cfg = _strategy_cfg("five_layer")
    strategy = build_strategy(cfg)
    ctx = make_ctx(WINDOW)
    ctx.estimator = build_estimator(cfg)
    chat = [Message("system", "s"), Message("user", "task")]
    for i in range(20):
        chat += [Message("assistant", f"a{i} " + "w" * 5000), Message("user", f"u{i}")]
    # 100k chars / 4 = 25k estimated tokens > 0.9 x 16000: pruned before the call
    assert "prune_history" in _names(strategy, chat, ctx)
    ctx2 = make_ctx(WINDOW)
    ctx2.estimator = build_estimator(cfg)
    assert "prune_history" not in _names(strategy, chat[:8], ctx2)  # ~15k chars: 3.7k tokens
    # a better-calibrated EMA (2 chars/token) doubles the estimate: now it fires
    ctx2.estimator.observe(chat[:8], sum(m.char_count for m in chat[:8]) // 2)
    bigger = chat[:14]  # ~30k chars: 7.5k tokens at 4 chars/token, 15k at 2
    assert "prune_history" in _names(strategy, bigger, ctx2)


def _names(strategy, messages, ctx) -> list[str]:  # noqa: ANN001
    ctx.layers_applied = []
    strategy.before_call(list(messages), ctx)
    return ctx.layers_applied


def test_summary_follows_the_first_prune_when_the_estimate_is_still_over() -> None:
    """'If pruning is still insufficient' is judged on the estimate: the summary comes in the same
    reaction as the first prune (one rejected call, not two), and summarises what the prune removed and,
    its tail being sized in tokens, as many of the prune's recent messages as do not fit."""
    from ctxbench.build import build_estimator, build_strategy, build_summariser
    from ctxbench.replay.engine import replay
    from ctxbench.replay.provider import ModelSpec
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer

    cfg = _strategy_cfg("five_layer")
    model = ModelSpec(name="gpt-4-32k", context_window=WINDOW, reserved_output_tokens=4096, tokenizer="cl100k_base")
    result = replay(
        five_layer_transcript(),
        build_strategy(cfg),
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer("cl100k_base")),
        summariser=build_summariser(cfg, None),
    )
    summarised_calls = sorted({e["call"] for e in result.events if e["type"] == "five_layer.summary"})
    assert summarised_calls
    for call in summarised_calls:
        events = [e for e in result.events if e["call"] == call and e["type"] != "context.status"]
        kinds = [e["type"] for e in events]
        first_summary = kinds.index("five_layer.summary")
        assert kinds[:first_summary].count("overflow_error") == 1, kinds  # no second rejection before it
        prune = events[kinds.index("five_layer.prune")]
        summary = events[first_summary]
        assert prune["recent"] >= 6 and summary["summarised"] >= prune["removed"], (prune, events)
        assert summary["kept_recent_tokens"] <= summary["keep_recent_budget"]


@pytest.mark.parametrize(
    ("override", "allowed"),
    [
        ("compact_eligibility=names", "'by_action' | 'by_name' | 'all'"),
        ("summary_head=first", "'system' | 'task'"),
        ("fit_tool_results=always", "'prompt' | 'openclaw' | 'none'"),
    ],
)
def test_a_wrong_reading_is_the_params_systems_one_line_error(tmp_path: Path, override: str, allowed: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_transcripts(data / "five.jsonl", [five_layer_transcript()])
    cmd = [*CTXBENCH, "run", "strategy=five_layer", f"strategy.params.{override}", f"dataset.paths=[{data}]"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    key, value = override.split("=")
    assert f"strategy.params.{key}='{value}': must be {allowed}" in proc.stderr
    assert "ValueError" not in proc.stderr and "Traceback" not in proc.stderr
