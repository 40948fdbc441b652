"""The agent's tool schemas: recorded by the importers, counted by the simulated provider in every
request (and cached as a prefix), sized by the estimators that learn from reports."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from ctxbench.core import ModelSpec
from ctxbench.replay.engine import replay
from ctxbench.replay.prefix_cache import CacheRules, PrefixCache
from ctxbench.strategies.none import FullHistory
from ctxbench.tokens.counting import TokenCounter, tools_tokens
from ctxbench.tokens.estimators import AnchoredEstimator, EmaEstimator, ExactEstimator, FixedRatioEstimator
from ctxbench.tokens.provider_fidelity import estimator_rows, measure
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts.importer import TranscriptWarning, import_file
from ctxbench.transcripts.model import Message, ToolCall, Transcript
from ctxbench.transcripts.tool_schemas import tool_schemas, tools_message, tools_text

BASH: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command in the repository and return its output. " * 8,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    },
}


def imported(path: Path, doc: Any) -> tuple[list[Transcript], list[str]]:
    path.write_text(json.dumps(doc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TranscriptWarning)
        transcripts = import_file(path)
    return transcripts, [str(w.message) for w in caught if issubclass(w.category, TranscriptWarning)]


def test_request_logs_keep_their_tools(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "done"}]
    [t], _ = imported(tmp_path / "openai.json", {"messages": messages, "tools": [BASH]})
    assert tool_schemas(t) == [BASH]
    [t], _ = imported(tmp_path / "legacy.json", {"messages": messages, "functions": [BASH["function"]]})
    assert tool_schemas(t) == [BASH["function"]]
    anthropic_tool = {"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}
    doc = {"system": "be brief", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    [t], _ = imported(tmp_path / "anthropic.json", {**doc, "tools": [anthropic_tool]})
    assert t.source["format"] == "anthropic" and tool_schemas(t) == [anthropic_tool]
    [t], _ = imported(tmp_path / "plain.json", {"messages": messages})
    assert tool_schemas(t) == [] and tools_message(t) is None


def test_a_tool_that_is_not_an_object_is_dropped_with_a_warning(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "fix it"}]
    [t], warned = imported(tmp_path / "bad.json", {"messages": messages, "tools": [BASH, "bash", 3]})
    assert tool_schemas(t) == [BASH]
    assert any("bad.json:$.tools: 2 tool definition(s) that are not objects dropped" in w for w in warned)


def test_openhands_records_the_system_events_tools(shared_transcripts: Path) -> None:
    path = shared_transcripts / "openhands-multi-swe-bench-example/evaluation/benchmarks/multi_swe_bench/examples"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranscriptWarning)
        transcripts = import_file(path / "output.jsonl")
    raw = json.loads((path / "output.jsonl").read_text().splitlines()[0])["history"][0]["args"]["tools"]
    assert len(transcripts) == 3 and tool_schemas(transcripts[0]) == raw
    assert [t["function"]["name"] for t in tool_schemas(transcripts[0])][:1] == ["execute_bash"]


def with_tools(transcript: Transcript, tools: list[dict[str, Any]]) -> Transcript:
    return Transcript(transcript.id, transcript.messages, source=transcript.source, metadata={"tools": tools})


def small_run(calls: int = 4) -> Transcript:
    messages = [Message("system", "You are a coding agent."), Message("user", "Fix the parser.")]
    for i in range(calls):
        messages.append(Message("assistant", f"step {i}", tool_calls=(ToolCall(f"c{i}", "bash", '{"cmd": "ls"}'),)))
        messages.append(Message("tool", "parser.py\n" * (50 + i), tool_call_id=f"c{i}", name="bash"))
    messages.append(Message("assistant", "done"))
    return Transcript("run", messages, source={"format": "openai", "model": "gpt-4o"})


def run_none(transcript: Transcript, window: int = 128_000, cache: CacheRules | None = None) -> list[dict[str, Any]]:
    model = ModelSpec(name="gpt-4o", tokenizer="o200k_base", context_window=window, reserved_output_tokens=1000)
    if cache is not None:
        model = dataclasses.replace(model, cache=cache)
    counter = TokenCounter(get_tokenizer("o200k_base"))
    return replay(transcript, FullHistory(), ExactEstimator("o200k_base"), model, counter).calls


def test_every_request_carries_the_tool_schemas() -> None:
    bare, tooled = small_run(), with_tools(small_run(), [BASH] * 3)
    extra = tools_tokens(get_tokenizer("o200k_base"), tooled)
    assert extra == get_tokenizer("o200k_base").count(tools_text(tooled)) > 100
    plain, full = run_none(bare), run_none(tooled)
    assert [c["tokens_sent"] - p["tokens_sent"] for p, c in zip(plain, full, strict=True)] == [extra] * len(plain)
    assert [c["tokens_uncompacted"] - p["tokens_uncompacted"] for p, c in zip(plain, full, strict=True)] == [
        extra
    ] * len(plain)
    # A window that fits the messages but not the messages and the schemas: the provider rejects.
    tight = max(c["tokens_sent"] for c in plain) + 1000 + extra // 2
    assert all(c["accepted"] for c in run_none(bare, tight))
    assert not all(c["accepted"] for c in run_none(tooled, tight))


def test_the_schemas_are_cached_with_the_prefix() -> None:
    rules = CacheRules(provider="openai", min_tokens=1, step_tokens=1, read_price_per_mtok=1.25)
    tooled = with_tools(small_run(), [BASH] * 3)
    extra = tools_tokens(get_tokenizer("o200k_base"), tooled)
    calls = run_none(tooled, cache=rules)
    plain = run_none(small_run(), cache=rules)
    # From the second call on, the previous request (schemas first) is read from the cache.
    assert [c["cached_tokens"] - p["cached_tokens"] for p, c in zip(plain[1:], calls[1:], strict=True)] == [extra] * (
        len(calls) - 1
    )
    cache = PrefixCache(rules, prefix_tokens=500)
    messages = [Message("user", "x " * 300)]
    cache.request(messages, lambda m: 300, 800)
    assert cache.request([Message("user", "other")], lambda m: 3, 503).cached_tokens == 500  # only the schemas


def test_estimators_that_learn_from_reports_size_the_schemas() -> None:
    tools = Message("system", json.dumps(BASH))
    messages = [Message("user", "a" * 400)]
    ema, anchored = EmaEstimator(), AnchoredEstimator()
    ratio, exact = FixedRatioEstimator(4.0), ExactEstimator("o200k_base")
    before = [e.prompt(messages) for e in (ema, anchored, ratio, exact)]
    for e in (ema, anchored, ratio, exact):
        e.size_tools(tools)
    after = [e.prompt(messages) for e in (ema, anchored, ratio, exact)]
    grown = tools.char_count // 4
    assert after[0] - before[0] in (grown, grown + 1) and after[1] == after[0]
    assert after[2:] == before[2:]  # the seed's len/4 and DB-GPT-style exact counts size messages only
    ema.observe(messages, 400 // 4 + grown)  # a report that includes the schemas at 4 chars/token
    assert ema.cpt == pytest.approx((400 + tools.char_count) / (100 + grown))


def test_dev_set_openhands_counts_its_schemas_and_estimates_within_the_targets(shared_transcripts: Path) -> None:
    """On the dev set's OpenHands run (llama-4-maverick, 105 calls with usage): counting the recorded
    schemas brings the replay closer to the provider and the report-learning estimators within
    about 1.5% (they were 2.1% and 6.1% without the schemas)."""
    from ctxbench.tokens.calibrate import load_any

    transcripts = load_any([shared_transcripts / "openhands-multi-swe-bench-example"])
    rows = {r["model"]: r for r in measure(transcripts).fidelity_rows()}
    row = rows["openai/openrouter-llama-4-maverick"]
    bare = measure([with_tools(t, []) for t in transcripts]).fidelity_rows()[0]
    assert row["tool_schema_tokens"] > 1000 and row["median_ratio"] > bare["median_ratio"] + 0.05
    assert row["fitted_overhead_tokens"] < bare["fitted_overhead_tokens"] - 1000
    mape = {r["estimator"]: r["mape"] for r in estimator_rows(transcripts) if r["source"] == "openhands"}
    assert mape["anchored"] < 1.5 and mape["ema"] < 1.5
    assert mape["anchored"] == min(mape.values())
