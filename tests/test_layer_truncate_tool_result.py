"""Strategy 1: a single oversized tool result is cut (at a late enough line break) and marked."""

from __future__ import annotations

from ctxbench.layers.truncate_tool_result import TRUNCATION_NOTICE, TruncateToolResult, char_budget
from ctxbench.transcripts.model import Message
from tests.five_layer_helpers import call, make_ctx

MARKER = "[truncated: output exceeded context limit]"


def test_marker_is_verbatim() -> None:
    assert TRUNCATION_NOTICE == MARKER


def test_budget_is_window_x2_x_half_with_1024_floor() -> None:
    layer = TruncateToolResult()
    assert layer.budget(make_ctx(16_000)) == 16_000
    assert layer.budget(make_ctx(128_000)) == 128_000
    assert layer.budget(make_ctx(500)) == 1024  # 500 x 2 x 0.5 = 500 < 1024
    assert char_budget(10_000, 4, 0.75) == 30_000
    assert TruncateToolResult(single_tool_result_context_share=0.25).budget(make_ctx(16_000)) == 8_000


def _apply(text: str, window: int = 500) -> str:
    messages = [Message("user", "task"), *call("c1", "bash", text), Message("user", "next")]
    out = TruncateToolResult().apply(messages, make_ctx(window))
    return out[2].content


def test_cut_at_last_newline_when_it_falls_after_70_percent() -> None:
    # budget 1024, body budget 1024 - 43 = 981; the newline at 900 > 0.7 x 981
    text = "a" * 900 + "\n" + "b" * 500
    assert _apply(text) == "a" * 900 + "\n" + MARKER


def test_cut_at_budget_when_the_newline_is_too_early() -> None:
    text = "a" * 500 + "\n" + "b" * 1000  # newline at 500 < 0.7 x 981
    result = _apply(text)
    assert result == text[:981] + "\n" + MARKER
    assert len(result) == 1024


def test_short_results_and_other_roles_untouched() -> None:
    messages = [Message("user", "u" * 5000), *call("c1", "bash", "x" * 1024), Message("assistant", "y" * 5000)]
    ctx = make_ctx(500)
    assert TruncateToolResult().apply(messages, ctx) is messages
    assert ctx.events == []


def test_every_oversized_result_cut_once_and_marked_as_compacted() -> None:
    messages = [Message("user", "task"), *call("c1", "bash", "z" * 3000), *call("c2", "grep", "w" * 2000)]
    ctx = make_ctx(500)
    layer = TruncateToolResult()
    out = layer.apply(messages, ctx)
    assert [m.content.endswith(MARKER) for m in out if m.role == "tool"] == [True, True]
    assert all(len(m.content) <= 1024 for m in out if m.role == "tool")
    assert out[2].metadata["compacted_by"] == ["truncate_tool_result"]
    assert messages[2].content == "z" * 3000  # the input is not mutated
    assert ctx.events[0]["results"] == 2
    assert layer.apply(out, ctx) is out  # idempotent
