"""strategy=langchain_middleware: LangChain 1.5.0's own SummarizationMiddleware (a rewrite) and
ContextEditingMiddleware (a per-call view) driven by the replay, offline, with ctxbench's summariser
as the chat model behind the summary."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from ctxbench.build import build_estimator, build_model, build_strategy, build_summariser
from ctxbench.replay.engine import replay
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts import load_transcripts
from ctxbench.transcripts.model import Transcript
from ctxbench.upstream import missing
from tests.conftest import ROOT
from tests.upstream_required import fail_if_missing

REASON = missing("langchain_middleware")


@pytest.fixture(autouse=True)
def _installed() -> None:
    fail_if_missing("langchain_middleware", REASON)


CONFIG_DIR = ROOT / "ctxbench" / "configs"
BUNDLED = ROOT / "ctxbench" / "data" / "bundled"


def _replay(transcript: Transcript, kind: str, *overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["strategy=langchain_middleware", f"strategy.params.kind={kind}", *overrides])
    model = build_model(cfg)
    strategy = build_strategy(cfg)
    result = replay(
        transcript,
        strategy,
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer(model.tokenizer)),
        summariser=build_summariser(cfg, None),
    )
    return strategy, result


def test_summarization_rewrites_the_history_with_langchains_summary_message() -> None:
    (transcript,) = load_transcripts([BUNDLED / "coding_090k.jsonl"])
    strategy, result = _replay(transcript, "summarization", "model=gpt-4-32k")
    summary = result.summary
    assert strategy.compaction == "rewrite"
    assert summary["calls"] == len(transcript.call_indices)
    assert summary["failed_calls"] == 0 and summary["invalid_requests"] == 0
    assert summary["layers"].get("langchain_summarization", 0) > 0 and summary["savings"] > 0.3
    # the extractive summariser wrote LangChain's summary, which LangChain wraps in its own human message
    assert any(e["type"] == "compaction.summary" for e in result.events)
    notes = [m for m in result.working if m.content.startswith("Here is a summary of the conversation to date:")]
    assert len(notes) == 1 and notes[0].role == "user"
    # the system prompt sits outside the agent state (create_agent(system_prompt=...)): never summarised
    assert result.working[0] is transcript.messages[0] and result.working[0].role == "system"


def test_context_editing_is_a_view_that_clears_old_tool_results() -> None:
    (transcript,) = load_transcripts([BUNDLED / "coding_090k.jsonl"])
    strategy, result = _replay(transcript, "context_editing", "model=gpt-4-32k")
    assert strategy.compaction == "view"
    assert result.summary["failed_calls"] == 0 and result.summary["invalid_requests"] == 0
    assert result.summary["layers"].get("langchain_context_editing", 0) > 0 and result.summary["savings"] > 0.3
    tools = [m for m in result.working if m.role == "tool"]
    cleared = [m for m in tools if m.content == "[cleared]"]
    # ClearToolUsesEdit keeps the 3 most recent tool results (the last prompt, plus the reply after it)
    assert cleared and all(m.content != "[cleared]" for m in tools[-3:])


def test_react_observations_are_not_tool_messages_to_langchain() -> None:
    # ClearToolUsesEdit clears ToolMessages only: a ReAct transcript's observations are user messages,
    # so it never fires there and the provider rejects what grows past the window (upstream behaviour).
    (transcript,) = load_transcripts([BUNDLED / "sql_060k.jsonl"])
    _, result = _replay(transcript, "context_editing", "model=gpt-4-32k")
    assert "langchain_context_editing" not in result.summary["layers"]
    assert result.summary["overflow_errors"] > 0


@pytest.mark.parametrize("kind", ["summarization", "context_editing"])
def test_dev_set_transcript_runs(shared_transcripts: Path, kind: str) -> None:
    from ctxbench.transcripts.importer import import_file

    # SWE-agent's function-calling replay: tool calls and tool results (ClearToolUsesEdit clears ToolMessages)
    path = next(shared_transcripts.rglob("*function_calling*/*.traj"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (transcript,) = import_file(path)
    _, result = _replay(transcript, kind, "model=gpt-4o", "model.context_window=12000")
    assert result.summary["calls"] == len(transcript.call_indices) and result.summary["invalid_requests"] == 0
    assert result.summary["compacted_calls"] > 0
    assert all(e["type"] != "compaction.failure" for e in result.events)


def test_unknown_kind_is_a_config_error() -> None:
    from ctxbench.errors import ConfigError

    with pytest.raises(ConfigError, match="kind must be one of"):
        _replay(Transcript("t", []), "magic")


def test_default_trim_can_leave_nothing_to_summarise() -> None:
    # LangChain trims what it summarises to its last 4000 tokens starting on a human message
    # (trim_messages(start_on="human")); in a tool loop that span often holds none, and LangChain then
    # writes "Previous conversation was too long to summarize." without calling the model.
    # trim_tokens_to_summarize=null sends the whole span: every compaction is a real summary.
    (transcript,) = load_transcripts([BUNDLED / "coding_090k.jsonl"])
    for trim, too_long in (("4000", True), ("null", False)):
        _, result = _replay(
            transcript, "summarization", "model=gpt-4-32k", f"strategy.params.trim_tokens_to_summarize={trim}"
        )
        compacted = [c["call"] for c in result.calls if c["layers"]]
        summarised = [e["call"] for e in result.events if e["type"] == "compaction.summary"]
        assert compacted and (set(summarised) != set(compacted)) is too_long
