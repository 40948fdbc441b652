"""Shared builders for the 5-layer layer tests: a context on a chosen window, small histories."""

from __future__ import annotations

from ctxbench.replay.provider import ModelSpec, request_problems
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.estimators import EmaEstimator
from ctxbench.transcripts.model import Message, ToolCall, Transcript


def make_ctx(window: int = 16_000, summariser: object = None) -> StrategyContext:
    model = ModelSpec(name="test", context_window=window, reserved_output_tokens=min(4096, window // 4))
    return StrategyContext(model=model, estimator=EmaEstimator(), transcript=Transcript("t", []), summariser=summariser)


def call(cid: str, tool: str, result: str, text: str = "") -> list[Message]:
    """An assistant message calling ``tool`` and the tool's result."""
    return [
        Message("assistant", text, tool_calls=(ToolCall(cid, tool, "{}"),)),
        Message("tool", result, tool_call_id=cid, name=tool),
    ]


def assert_valid(messages: list[Message]) -> None:
    """What a provider requires: tool pairs intact, each tool result right after its call's batch,
    the first non-system message from the user."""
    assert request_problems(messages) == []
    for prev, cur in zip(messages, messages[1:], strict=False):
        if cur.role == "tool":
            assert prev.role in ("assistant", "tool"), (prev.role, cur.content[:40])
    first = next(m for m in messages if m.role != "system")
    assert first.role == "user"
