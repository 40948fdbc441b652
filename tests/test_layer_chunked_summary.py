"""Strategy 4: the 9-section summary, chunking that never splits a call from its result, merging."""

from __future__ import annotations

from typing import Any

from ctxbench.layers.chunked_summary import (
    SECTIONS,
    SUMMARY_KEY,
    SUMMARY_PREFIX,
    ChunkedSummary,
    ChunkPlan,
    load_prompt,
)
from ctxbench.layers.prune_history import PruneHistory
from ctxbench.llm import ExtractiveSummariser, FaultConfig, FaultInjectingSummariser, SummaryRequest
from ctxbench.tokens.estimators import EmaEstimator
from ctxbench.transcripts.model import Message
from tests.five_layer_helpers import assert_valid, call, make_ctx


class RecordingSummariser(ExtractiveSummariser):
    """The real extractive summariser, keeping each request it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[SummaryRequest] = []

    def summarise(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return super().summarise(request)


def test_nine_sections_in_order_and_in_both_prompts() -> None:
    assert SECTIONS == (
        "Primary Request and Intent",
        "Key Technical Concepts",
        "Files and Code Sections",
        "Errors and fixes",
        "Problem Solving",
        "All user messages",
        "Pending Tasks",
        "Current Work",
        "Optional Next Step",
    )
    for name in ("five_layer_summary.txt", "five_layer_merge.txt"):
        text, sha = load_prompt(name)
        positions = [text.index(s) for s in SECTIONS]
        assert positions == sorted(positions) and len(sha) == 12
    merge, _ = load_prompt("five_layer_merge.txt")
    for must in ("Active tasks", "progress", "Decisions", "TODOs"):
        assert must in merge


def _history(rounds: int, size: int, tool: str = "bash") -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "Migrate the billing DB; keep invoice ids.")]
    for i in range(rounds):
        messages += call(f"c{i}", tool, f"line {i} " * (size // 8), text=f"step {i}")
    messages.append(Message("user", "status?"))
    return messages


def test_small_history_one_call_then_system_first_user_summary_recent() -> None:
    """(Small histories fit in any token-sized tail: these tests keep the recent messages by count.)"""
    summariser = RecordingSummariser()
    ctx = make_ctx(16_000, summariser)
    messages = _history(6, 400)  # 15 messages: N = 5
    out = ChunkedSummary(tail_by="messages").apply(messages, ctx)
    assert [r.purpose for r in summariser.requests] == ["five_layer_summary"]
    request = summariser.requests[0]
    assert request.sections == SECTIONS and "Primary Request and Intent" in request.instructions
    assert "[tool bash]: line 0" in request.source_text and "[tool call bash]" in request.source_text
    assert out[:2] == messages[:2]
    assert out[2].content.startswith(SUMMARY_PREFIX) and out[2].pinned and SUMMARY_KEY in out[2].metadata
    assert out[3:] == messages[-5:]
    assert_valid(out)
    event = ctx.events[-1]
    assert event["type"] == "five_layer.summary" and event["level"] == 1 and event["usage"]["records"] == 1


def test_no_chunking_at_or_below_50000_chars() -> None:
    messages = _history(10, 4000)[2:-1]
    assert sum(m.char_count for m in messages) <= 50_000
    assert len(ChunkPlan().split(messages, EmaEstimator(), 16_000)) == 1


def _pairs_intact(chunk: list[Message]) -> bool:
    calls = {c.id for m in chunk for c in m.tool_calls}
    results = {m.tool_call_id for m in chunk if m.role == "tool"}
    return calls == results


def test_long_history_at_most_4_chunks_and_pairs_never_split() -> None:
    messages = _history(40, 3000)[2:-1]  # ~120,000 chars
    chunks = ChunkPlan().split(messages, EmaEstimator(), 16_000)
    assert len(chunks) == 4  # the ratios ask for more (chunk budget 1920 tokens), capped at 4
    assert [m for c in chunks for m in c] == messages
    assert all(_pairs_intact(c) for c in chunks)


def test_large_window_uses_default_parts() -> None:
    messages = _history(20, 3000)[2:-1]  # ~60,000 chars, ~15k tokens: fits one 128k-window chunk
    chunks = ChunkPlan().split(messages, EmaEstimator(), 128_000)
    assert len(chunks) == 2 and all(_pairs_intact(c) for c in chunks)


def test_boundaries_fall_between_groups_even_with_parallel_calls() -> None:
    from ctxbench.transcripts.model import ToolCall

    messages: list[Message] = []
    for i in range(12):
        calls = tuple(ToolCall(f"c{i}_{k}", "grep", "{}") for k in range(3))
        messages.append(Message("assistant", "", tool_calls=calls))
        messages += [Message("tool", "r" * 2000, tool_call_id=c.id) for c in calls]
    for chunk in ChunkPlan().split(messages, EmaEstimator(), 16_000):
        assert chunk[0].role == "assistant" and _pairs_intact(chunk)


def test_adaptive_ratio() -> None:
    plan = ChunkPlan()
    assert plan.adaptive_ratio([100] * 10, 16_000) == 0.4
    # average 2000 tokens x 1.2 / 16000 = 0.15 > 0.1: 0.4 - min(0.3, 0.25) = 0.15
    assert abs(plan.adaptive_ratio([2000] * 10, 16_000) - 0.15) < 1e-9
    assert plan.chunk_tokens([100] * 10, 16_000) == int((16_000 * 0.4 - 4096) / 1.2)


def test_chunks_summarised_then_merged() -> None:
    summariser = RecordingSummariser()
    ctx = make_ctx(16_000, summariser)
    out = ChunkedSummary().apply(_history(40, 3000), ctx)
    purposes = [r.purpose for r in summariser.requests]
    assert purposes == ["five_layer_chunk"] * 4 + ["five_layer_merge"]
    merge = summariser.requests[-1]
    assert merge.source_text.startswith("[Chunk 1 — oldest messages]")
    assert "[Chunk 4 — most recent messages]" in merge.source_text
    assert "MUST PRESERVE" in merge.instructions and merge.sections == SECTIONS
    assert ctx.events[-1]["chunks"] == 4 and ctx.events[-1]["merged"]
    assert_valid(out)


def test_summary_after_prune_sees_the_pruned_messages() -> None:
    summariser = RecordingSummariser()
    ctx = make_ctx(16_000, summariser)
    history = _history(8, 200)
    history[4] = history[4].replace(content="the invoice prefix is INV-2291")  # a tool result pruned below
    pruned = PruneHistory().apply(history, ctx)
    assert "INV-2291" not in " ".join(m.content for m in pruned)
    ChunkedSummary().apply(pruned, ctx)
    assert "INV-2291" in summariser.requests[0].source_text


def test_a_later_summary_replaces_the_earlier_one() -> None:
    ctx = make_ctx(16_000, ExtractiveSummariser())
    first = ChunkedSummary(tail_by="messages").apply(_history(8, 200), ctx)
    grown = first + [m for i in range(8) for m in call(f"n{i}", "bash", f"later {i}")] + [Message("user", "go")]
    second = ChunkedSummary(tail_by="messages").apply(grown, ctx)
    assert sum(1 for m in second if SUMMARY_KEY in m.metadata) == 1
    assert ctx.events[-1]["summarised"] > 8


def test_retries_record_backoff_without_sleeping() -> None:
    summariser = FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=2))
    ctx = make_ctx(16_000, summariser)
    ChunkedSummary(tail_by="messages").apply(_history(6, 400), ctx)
    event: dict[str, Any] = ctx.events[-1]
    assert event["level"] == 1 and event["attempts"] == 3 and event["failures"] == ["error", "error"]
    first, second = event["backoff_ms"]
    assert 500 <= first <= 600 and 800 <= second <= 1200  # 500 then 1000, +-20%, never below 500
    assert event["usage"]["faults"] == 2
    again = make_ctx(16_000, FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=2)))
    ChunkedSummary(tail_by="messages").apply(_history(6, 400), again)
    assert again.events[-1]["backoff_ms"] == event["backoff_ms"]  # deterministic


def test_backoff_capped_at_5000() -> None:
    import random

    layer = ChunkedSummary()
    assert all(layer.backoff_ms(k, random.Random(k)) <= 5000 for k in range(1, 12))
    assert layer.backoff_ms(10, random.Random(0)) >= 4000


def test_strategy_4_alone_leaves_messages_when_the_summary_fails() -> None:
    ctx = make_ctx(16_000, FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=99)))
    messages = _history(6, 400)
    assert ChunkedSummary(tail_by="messages").apply(messages, ctx) is messages
    assert ctx.events[-1]["failed"] == "error" and ctx.events[-1]["attempts"] == 3


# --- the kept tail sized in tokens, as OpenClaw's compaction keeps it (issue 26) ----------------------


def test_after_a_prune_the_summary_keeps_a_tail_that_fits_the_prompt_budget() -> None:
    """A prune on a 12k window keeps the last 6 messages; when those are large the summary used to keep
    all six and replace the short notice by a longer summary (the prompt grew, the retry failed again).
    Sized in tokens (what is left of the prompt budget after the head and the summary), it fits."""
    ctx = make_ctx(12_000, summariser=ExtractiveSummariser())
    messages = _history(20, 14_000)  # results of ~3.5k tokens: the 6 recent messages alone are over the budget
    pruned = PruneHistory().apply(messages, ctx)
    budget = ctx.model.prompt_budget
    by_messages = ChunkedSummary(tail_by="messages").apply(pruned, ctx)
    assert ctx.estimator.prompt(by_messages) >= ctx.estimator.prompt(pruned)  # the old reading: no rescue
    out = ChunkedSummary().apply(pruned, ctx)
    assert ctx.estimator.prompt(out) <= budget < ctx.estimator.prompt(by_messages)
    assert out[-1] is messages[-1] and out[0] is messages[0] and out[1].content.startswith(SUMMARY_PREFIX)
    assert_valid(out)
    assert ctx.events[-1]["kept_recent_tokens"] <= ctx.events[-1]["keep_recent_budget"]


def test_the_tail_walks_back_to_keep_recent_tokens_and_never_starts_on_a_tool_result() -> None:
    ctx = make_ctx(128_000, summariser=ExtractiveSummariser())
    messages = _history(60, 4_000)  # ~1k tokens per result
    out = ChunkedSummary(keep_recent_tokens=5_000).apply(messages, ctx)
    summary_at = next(i for i, m in enumerate(out) if SUMMARY_KEY in m.metadata)
    tail = out[summary_at + 1 :]
    assert tail[0].role != "tool"
    kept = sum(ctx.estimator.message(m) for m in tail)
    assert 3_000 < kept <= 5_000  # Pi's keepRecentTokens, here 5,000: about that much, never more
    assert_valid(out)


def test_the_summary_is_sized_to_the_room_the_head_and_tail_leave() -> None:
    """A long system prompt and task (an OpenHands run on a 12k window) leave less than the 2,000 summary
    tokens: the summary is asked for what fits (OpenClaw truncates its summary to fit the budget)."""
    ctx = make_ctx(12_000, summariser=ExtractiveSummariser())
    messages = _history(20, 14_000)
    messages[0] = Message("system", "You are a careful agent. " * 1200)  # ~7,500 tokens of system prompt
    pruned = PruneHistory().apply(messages, ctx)
    out = ChunkedSummary().apply(pruned, ctx)
    event = ctx.events[-1]
    assert 256 <= event["summary_max_tokens"] < 2000
    assert ctx.estimator.prompt(out) <= ctx.model.prompt_budget


def test_the_task_is_summarised_and_only_the_system_prompt_kept_beside_the_summary() -> None:
    """OpenClaw's compaction (Pi's prepareCompaction) summarises everything before the kept tail, the
    first user message too; the system prompt is sent beside the messages. On a 12k window a long task
    (an OpenHands issue) kept verbatim leaves no room for the newest result: summarised, it fits.
    ``head="task"`` keeps it, the reading before."""
    ctx = make_ctx(12_000, summariser=ExtractiveSummariser())
    messages = _history(10, 3_000)
    messages[0] = Message("system", "You are a careful agent. " * 800)  # ~4,000 tokens
    messages[1] = Message("user", "Fix the billing export; keep invoice ids. " + "Details of the issue. " * 700)
    pruned = PruneHistory().apply(messages, ctx)
    kept_task = ChunkedSummary(head="task").apply(pruned, ctx)
    assert kept_task[1] is messages[1] and ctx.estimator.prompt(kept_task) > ctx.model.prompt_budget
    out = ChunkedSummary().apply(pruned, ctx)
    assert [m.role for m in out[:2]] == ["system", "user"] and out[1].content.startswith(SUMMARY_PREFIX)
    assert all(m is not messages[1] for m in out)
    assert "Fix the billing export" in out[1].content  # the task is in the summary
    assert out[-1] is messages[-1] and ctx.estimator.prompt(out) <= ctx.model.prompt_budget
    assert_valid(out)


def test_a_newest_message_that_is_kept_anyway_leaves_no_tail_and_no_crash() -> None:
    """The newest message pinned (or, with head="task", the task itself): it stays last, the rest is
    summarised (an IndexError before, seen on the dev set at an 8k window)."""
    ctx = make_ctx(12_000, summariser=ExtractiveSummariser())
    messages = [*_history(10, 4_000), Message("user", "Remember: invoice ids are never reused.", pinned=True)]
    out = ChunkedSummary().apply(messages, ctx)
    assert out[-1] is messages[-1] and any(SUMMARY_KEY in m.metadata for m in out)
    assert_valid(out)
    task_last = [Message("system", "sys"), Message("assistant", "Hello."), Message("user", "Fix the export.")]
    assert ChunkedSummary(head="task").apply(task_last, ctx)[-1] is task_last[-1]
