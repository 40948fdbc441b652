"""Factory anchored iterative summarisation: only the newly evicted span is summarised and merged."""

from __future__ import annotations

from typing import Any

from ctxbench.layers.anchored_summary import DEFAULT_SECTIONS, AnchoredSummary, parse_sections
from ctxbench.llm import ExtractiveSummariser, FaultConfig, FaultInjectingSummariser, SummaryRequest
from ctxbench.replay.provider import ModelSpec, request_problems
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.estimators import ExactEstimator
from ctxbench.transcripts.model import Message, ToolCall, Transcript

ESTIMATOR = ExactEstimator("cl100k_base")


class Recording:
    """The real extractive summariser, remembering the requests it was sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.usage = inner.usage
        self.requests: list[SummaryRequest] = []

    def summarise(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return self.inner.summarise(request)


def ctx(summariser: Any, window: int = 128_000) -> StrategyContext:
    model = ModelSpec(context_window=window, reserved_output_tokens=1_000)
    return StrategyContext(model=model, estimator=ESTIMATOR, transcript=Transcript("t", []), summariser=summariser)


def rounds(start: int, count: int) -> list[Message]:
    out = []
    for i in range(start, start + count):
        out.append(
            Message(
                "assistant",
                f"Round {i}: I decided to edit src/mod_{i}.py because test_{i} failed.",
                tool_calls=(ToolCall(f"c{i}", "bash", f'{{"cmd": "pytest tests/test_{i}.py"}}'),),
            )
        )
        body = "\n".join([f"FAILED tests/test_{i}.py::test_case - AssertionError: marker_{i}"] + ["." * 60] * 30)
        out.append(Message("tool", body, tool_call_id=f"c{i}", name="bash"))
    return out


def head() -> list[Message]:
    return [Message("system", "You are an agent."), Message("user", "Task: make the suite pass on port 47213.")]


def test_without_a_summariser_nothing_changes() -> None:
    messages = [*head(), *rounds(0, 8)]
    assert AnchoredSummary().apply(messages, ctx(None)) is messages


def test_first_summary_replaces_the_evicted_span() -> None:
    summariser = Recording(ExtractiveSummariser())
    c = ctx(summariser)
    messages = [*head(), *rounds(0, 8)]
    out = AnchoredSummary(keep_recent_rounds=3).apply(messages, c)
    assert out[:2] == messages[:2]
    summary = out[2]
    assert summary.role == "user" and summary.pinned  # later forgetting layers keep it
    assert summary.content.startswith("[Anchored summary of 10 earlier messages; updated 1 times]")
    headings = [line[3:] for line in summary.content.splitlines() if line.startswith("## ")]
    assert headings == list(DEFAULT_SECTIONS)
    assert all(a is b for a, b in zip(out[3:], messages[-6:], strict=True))  # the last 3 rounds, verbatim
    assert len(out) == 3 + 6
    assert request_problems(out) == []
    assert "marker_0" in summariser.requests[0].source_text and "marker_5" not in summariser.requests[0].source_text
    event = c.events[-1]
    assert event["type"] == "anchored_summary" and event["merges"] == 1 and event["summary_of_summary"] == 0
    assert event["after"] < event["before"]


def test_second_summary_covers_only_the_new_span_and_merges_into_the_first() -> None:
    summariser = Recording(ExtractiveSummariser())
    c = ctx(summariser)
    layer = AnchoredSummary(keep_recent_rounds=3)
    first = layer.apply([*head(), *rounds(0, 8)], c)
    intent_after_first = list(layer.summary["Session Intent"])
    second = layer.apply([*first, *rounds(8, 4)], c)
    request = summariser.requests[1]
    # Only rounds 5..8 were newly evicted; nothing already summarised is sent again.
    assert all(f"marker_{i}" in request.source_text for i in (5, 6, 7, 8))
    assert all(f"marker_{i}" not in request.source_text for i in (0, 1, 2, 3, 4, 9, 10, 11))
    assert "marker_0" in request.instructions  # the existing summary is shown so the delta does not repeat it
    summaries = [m for m in second if m.metadata.get("anchored_summary")]
    assert len(summaries) == 1 and second[2] is summaries[0]
    assert summaries[0].content.startswith("[Anchored summary of 18 earlier messages; updated 2 times]")
    assert "marker_0" in summaries[0].content and "marker_8" in summaries[0].content  # merged, not replaced
    assert layer.summary["Session Intent"] == intent_after_first  # anchored: never overwritten
    assert c.events[-1]["summary_of_summary"] == 1 and c.events[-1]["merges"] == 2
    assert second[3:] == rounds(9, 3)  # the new keep-recent tail, verbatim
    assert request_problems(second) == []


def test_merge_rules() -> None:
    layer = AnchoredSummary()
    layer.merge(
        parse_sections(
            "## Session Intent\n- fix port 47213\n## Files Modified\n- a.py\n## Current State\n- tests red",
            layer.sections,
        ),
        10_000,
    )
    layer.merge(
        parse_sections(
            "## Session Intent\n- something else\n## Files Modified\n- a.py\n- b.py\n## Current State\n- tests green\n"
            "## Next Steps\n- (none)",
            layer.sections,
        ),
        10_000,
    )
    assert layer.summary["Session Intent"] == ["- fix port 47213"]
    assert layer.summary["Files Modified"] == ["- a.py", "- b.py"]
    assert layer.summary["Current State"] == ["- tests green"]
    assert layer.summary["Next Steps"] == []
    # Over budget the oldest accumulated bullets go first; the intent stays.
    layer.merge({"Files Modified": [f"- file_{i}.py" for i in range(50)]}, 400)
    assert len(layer.render()) <= 400
    assert layer.summary["Session Intent"] == ["- fix port 47213"]
    assert layer.summary["Files Modified"][-1] == "- file_49.py" and "- a.py" not in layer.summary["Files Modified"]


def test_pinned_message_in_the_span_survives() -> None:
    messages = [*head(), *rounds(0, 8)]
    pinned = Message("user", "PINNED: never push to main.", pinned=True)
    messages.insert(5, pinned)  # after round 1
    out = AnchoredSummary(keep_recent_rounds=3).apply(messages, ctx(ExtractiveSummariser()))
    assert pinned in out and out.index(pinned) == 3  # right after the summary
    assert request_problems(out) == []


def test_failures_leave_the_context_and_trip_the_breaker() -> None:
    faulty = FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=10))
    c = ctx(faulty)
    layer = AnchoredSummary(max_failures=2)
    messages = [*head(), *rounds(0, 8)]
    for _ in range(4):
        assert layer.apply(messages, c) is messages
    assert faulty.calls == 2  # the breaker stopped calling after 2 consecutive failures
    assert [e["kind"] for e in c.events] == ["error", "error"]


def test_malformed_summary_is_a_failure() -> None:
    faulty = FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(malformed_rate=1.0))
    c = ctx(faulty)
    messages = [*head(), *rounds(0, 8)]
    assert AnchoredSummary().apply(messages, c) is messages
    assert c.events[-1] == {"call": 0, "type": "anchored_summary.failed", "kind": "malformed", "failures": 1}


def test_no_saving_means_no_change() -> None:
    # A span of one tiny round: the sectioned summary is bigger than what it would replace.
    messages = [*head(), Message("assistant", "ok"), Message("user", "go on"), *rounds(0, 3)]
    layer = AnchoredSummary(keep_recent_rounds=3)
    c = ctx(ExtractiveSummariser())
    assert layer.apply(messages, c) is messages
    assert c.events[-1]["type"] == "anchored_summary.skipped" and layer.merges == 0
    assert all(not bullets for bullets in layer.summary.values())


def test_recent_tail_is_bounded_by_tokens() -> None:
    messages = [*head(), *rounds(0, 8)]
    per_round = ESTIMATOR.prompt(rounds(0, 1))
    window = 1_000 + per_round * 10  # keep_recent_ratio 0.15 of the budget: 1 round only
    out = AnchoredSummary(keep_recent_rounds=3, keep_recent_ratio=0.15).apply(
        messages, ctx(ExtractiveSummariser(), window)
    )
    assert out[3:] == messages[-2:]
