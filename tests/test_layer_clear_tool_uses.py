"""Anthropic clear_tool_uses: trigger, keep, clear_at_least, exclude_tools, clear_tool_inputs."""

from __future__ import annotations

import pytest

from ctxbench.layers.clear_tool_uses import CLEARED_RESULT, ClearToolUses
from ctxbench.replay.provider import ModelSpec, request_problems
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.estimators import ExactEstimator
from ctxbench.transcripts.model import Message, ToolCall, Transcript

ESTIMATOR = ExactEstimator("cl100k_base")


def ctx(window: int = 128_000) -> StrategyContext:
    model = ModelSpec(context_window=window, reserved_output_tokens=1_000)
    return StrategyContext(model=model, estimator=ESTIMATOR, transcript=Transcript("t", []))


def history(tools: list[str], lines: int = 40) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "Task: fix it.")]
    for i, tool in enumerate(tools):
        args = f'{{"path": "src/file_{i}.py", "pattern": "needle"}}'
        messages.append(Message("assistant", f"step {i}", tool_calls=(ToolCall(f"c{i}", tool, args),)))
        body = "\n".join(f"{tool} {i} line {j}: content of the result" for j in range(lines))
        messages.append(Message("tool", body, tool_call_id=f"c{i}", name=tool))
    return messages


def results(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.role == "tool"]


def test_below_trigger_nothing_changes() -> None:
    messages = history(["bash"] * 6)
    assert ClearToolUses(trigger_tokens=100_000).apply(messages, ctx()) is messages


def test_clears_oldest_results_keeping_the_last_three() -> None:
    messages = history(["bash"] * 6)
    c = ctx()
    out = ClearToolUses(trigger_tokens=100).apply(messages, c)
    contents = [m.content for m in results(out)]
    assert contents[:3] == [CLEARED_RESULT] * 3
    assert [m.content for m in results(out)[3:]] == [m.content for m in results(messages)[3:]]
    assert [m.tool_call_id for m in results(out)] == [m.tool_call_id for m in results(messages)]
    assert request_problems(out) == []
    event = c.events[-1]
    assert event["type"] == "clear_tool_uses" and event["cleared_tool_uses"] == 3
    assert event["cleared_input_tokens"] == ESTIMATOR.prompt(messages) - ESTIMATOR.prompt(out) > 0


def test_placeholder_is_claude_codes_text() -> None:
    assert CLEARED_RESULT == "[Old tool result content cleared]"


def test_trigger_as_a_ratio_of_the_prompt_budget() -> None:
    messages = history(["bash"] * 6)
    used = ESTIMATOR.prompt(messages)
    window = 1_000 + used * 2  # budget = 2 x used
    assert ClearToolUses(trigger_tokens=None, trigger_ratio=0.6).apply(messages, ctx(window)) is messages
    assert ClearToolUses(trigger_tokens=None, trigger_ratio=0.4).apply(messages, ctx(window)) is not messages
    # Both set: whichever comes first.
    assert ClearToolUses(trigger_tokens=10**9, trigger_ratio=0.4).apply(messages, ctx(window)) is not messages


def test_exclude_tools_are_never_cleared() -> None:
    messages = history(["memory", "bash", "memory", "bash", "bash", "bash", "bash"])
    out = ClearToolUses(trigger_tokens=0, exclude_tools=["memory"]).apply(messages, ctx())
    cleared = [m.name for m in results(out) if m.content == CLEARED_RESULT]
    assert cleared == ["bash", "bash"]
    assert all(m.content != CLEARED_RESULT for m in results(out) if m.name == "memory")


def test_clear_at_least_skips_a_clearing_that_frees_too_little() -> None:
    messages = history(["bash"] * 5)  # two results clearable
    freeable = ESTIMATOR.prompt(messages) - ESTIMATOR.prompt(ClearToolUses(trigger_tokens=0).apply(messages, ctx()))
    c = ctx()
    assert ClearToolUses(trigger_tokens=0, clear_at_least=freeable + 1).apply(messages, c) is messages
    assert c.events[-1]["type"] == "clear_tool_uses.skipped" and c.events[-1]["would_clear"] == freeable
    assert ClearToolUses(trigger_tokens=0, clear_at_least=freeable).apply(messages, ctx()) is not messages


def test_clear_tool_inputs_clears_arguments_of_cleared_uses_only() -> None:
    messages = history(["bash", "read_file", "bash", "bash", "bash", "bash"])
    out = ClearToolUses(trigger_tokens=0, clear_tool_inputs=True).apply(messages, ctx())
    args = [c.arguments for m in out if m.role == "assistant" for c in m.tool_calls]
    assert args[:3] == ["{}"] * 3
    assert all("needle" in a for a in args[3:])
    only_read = ClearToolUses(trigger_tokens=0, clear_tool_inputs=["read_file"]).apply(messages, ctx())
    args = [c.arguments for m in only_read if m.role == "assistant" for c in m.tool_calls]
    assert args[1] == "{}" and args[0] != "{}" and args[2] != "{}"
    assert request_problems(out) == []


def test_already_cleared_results_are_left_alone() -> None:
    layer = ClearToolUses(trigger_tokens=0)
    once = layer.apply(history(["bash"] * 6), ctx())
    assert layer.apply(once, ctx()) is once


def test_parallel_calls_count_as_separate_tool_uses() -> None:
    calls = tuple(ToolCall(f"p{i}", "bash", "{}") for i in range(4))
    messages = [Message("system", "s"), Message("user", "u"), Message("assistant", "", tool_calls=calls)]
    messages += [Message("tool", "x\n" * 200, tool_call_id=f"p{i}", name="bash") for i in range(4)]
    out = ClearToolUses(trigger_tokens=0, keep=3).apply(messages, ctx())
    assert [m.content == CLEARED_RESULT for m in results(out)] == [True, False, False, False]


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="keep"):
        ClearToolUses(keep=-1)
    with pytest.raises(ValueError, match="trigger_ratio"):
        ClearToolUses(trigger_ratio=0)
