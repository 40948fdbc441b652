"""Strategy 5: the three degradation levels, reached under injected summariser faults."""

from __future__ import annotations

from ctxbench.layers.degraded_summary import DegradedSummary, oversized_plan
from ctxbench.llm import ExtractiveSummariser, FaultConfig, FaultInjectingSummariser
from ctxbench.tokens.estimators import EmaEstimator
from ctxbench.transcripts.model import Message
from tests.five_layer_helpers import assert_valid, call, make_ctx

# The degradation ladder on small histories: the recent messages kept by count (a token-sized tail would
# keep them all). Oversized: estimated tokens x 1.2 > 8000, i.e. > 6666 tokens (26,667 chars at 4 chars/token).
WINDOW = 16_000


def _history(big: bool = True) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "Audit the ledger AUD-7731.")]
    for i in range(4):
        messages += call(f"c{i}", "bash", f"ok {i}", text=f"step {i}")
    if big:
        messages.append(Message("user", "pasted dump:\n" + "row;" * 7000))  # 28,013 chars ~ 7003 tokens
    messages += [Message("assistant", "noted"), Message("user", "continue")]
    for i in range(4, 8):
        messages += call(f"c{i}", "bash", f"ok {i}", text=f"step {i}")
    messages.append(Message("user", "status?"))
    return messages


def _run(fail_first_n: int, big: bool = True, **faults: float) -> tuple[list[Message], dict, list[Message]]:
    summariser = FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=fail_first_n, **faults))
    ctx = make_ctx(WINDOW, summariser)
    messages = _history(big)
    out = DegradedSummary(tail_by="messages").apply(messages, ctx)
    summary_events = [e for e in ctx.events if e["type"] == "five_layer.summary"]
    assert len(summary_events) == 1
    assert_valid(out)
    return out, summary_events[0], messages


def _summary(out: list[Message]) -> str:
    return next(m.content for m in out if "five_layer_summary" in m.metadata)


def test_oversized_plan_notes_the_big_message() -> None:
    small, notes = oversized_plan(_history(), EmaEstimator(), WINDOW)
    assert notes == ["[Large user (~7K tokens) omitted from summary]"]
    assert len(small) == len(_history()) - 1


def test_oversized_tool_result_takes_its_call_along() -> None:
    messages = [Message("user", "u"), *call("c1", "read_file", "x" * 30_000), Message("user", "v")]
    small, notes = oversized_plan(messages, EmaEstimator(), WINDOW)
    assert notes == ["[Large tool (~8K tokens) omitted from summary]"]
    assert [m.role for m in small] == ["user", "user"]


def test_level_1_full_summary() -> None:
    out, event, _ = _run(0)
    assert event["level"] == 1 and event["failures"] == [] and event["attempts"] == 1
    assert "Primary Request and Intent" in _summary(out)


def test_level_1_after_retries() -> None:
    _, event, _ = _run(2)
    assert event["level"] == 1 and event["attempts"] == 3 and len(event["backoff_ms"]) == 2


def test_level_2_drops_oversized_messages() -> None:
    out, event, _ = _run(3)  # the 3 attempts of the full summary fail; the partial one succeeds
    assert event["level"] == 2 and event["failed"] == "error" and event["oversized"] == 1
    text = _summary(out)
    assert text.endswith("[Large user (~7K tokens) omitted from summary]\n</summary>")
    assert "row;row;" not in text


def test_level_3_bare_notice() -> None:
    out, event, messages = _run(99)
    assert event["level"] == 3 and event["failed_level2"] == "error"
    n = event["summarised"]
    assert f"Context contained {n} messages (1 oversized). Summary unavailable due to size limits." in _summary(out)
    assert len(out) < len(messages)


def test_level_2_retries_when_nothing_is_oversized() -> None:
    """OpenClaw's summarizeWithFallback tries the partial summary whenever small messages remain,
    oversized or not: after three transient failures the fourth call (level 2) recovers a summary."""
    out, event, _ = _run(3, big=False)
    assert event["level"] == 2 and event["oversized"] == 0 and event["calls"] == 2
    assert "Primary Request and Intent" in _summary(out) and "Summary unavailable" not in _summary(out)


def test_level_3_when_level_2_fails_too_with_nothing_oversized() -> None:
    out, event, _ = _run(99, big=False)
    assert event["level"] == 3 and event["oversized"] == 0 and event["failed_level2"] == "error"
    assert "(0 oversized). Summary unavailable due to size limits." in _summary(out)


def test_overflow_is_retried() -> None:
    """OpenClaw retries every summariser failure but an abort, an overflow too (3 full + 3 partial)."""
    _, event, _ = _run(0, overflow_rate=1.0)
    assert event["failures"] == ["overflow"] * 6 and event["attempts"] == 6
    assert event["level"] == 3


def test_malformed_summary_is_retried() -> None:
    # Text without the nine headings is a failure (kind "malformed"), retried like an error.
    _, event, _ = _run(0, malformed_rate=1.0)
    assert event["failures"] == ["malformed"] * 6 and event["attempts"] == 6  # 3 full + 3 partial
    assert event["level"] == 3


def test_no_summariser_degrades_to_the_notice() -> None:
    ctx = make_ctx(WINDOW, None)
    out = DegradedSummary(tail_by="messages").apply(_history(), ctx)
    assert ctx.events[-1]["level"] == 3 and "Summary unavailable" in _summary(out)


def test_level_3_event_names_the_real_cause() -> None:
    """The notice sent to the model keeps OpenClaw's words ("size limits"); the event says why."""
    _, event, _ = _run(99, big=False)
    assert event["notice_cause"] == "provider errors: error"
    _, event, _ = _run(0, big=False, malformed_rate=1.0)
    assert event["level"] == 3 and event["notice_cause"] == "malformed output: malformed"
    _, event, _ = _run(0, overflow_rate=1.0)
    assert event["notice_cause"] == "size limits: overflow"
