"""OpenHands amortized forgetting: over max_size keep head + tail down to max_size // 2."""

from __future__ import annotations

import pytest

from ctxbench.layers.amortized_forgetting import AmortizedForgetting
from ctxbench.replay.provider import ModelSpec, request_problems
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.estimators import ExactEstimator
from ctxbench.transcripts.model import Message, ToolCall, Transcript

ESTIMATOR = ExactEstimator("cl100k_base")


def ctx(window: int = 128_000) -> StrategyContext:
    model = ModelSpec(context_window=window, reserved_output_tokens=1_000)
    return StrategyContext(model=model, estimator=ESTIMATOR, transcript=Transcript("t", []))


def chat(turns: int) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "Task: the first user message.")]
    for i in range(turns):
        messages.append(Message("assistant", f"answer {i}"))
        messages.append(Message("user", f"question {i}"))
    return messages


def tool_history(rounds: int, lines: int = 30) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "Task: the first user message.")]
    for i in range(rounds):
        calls = (ToolCall(f"a{i}", "bash", "{}"), ToolCall(f"b{i}", "read_file", "{}"))
        messages.append(Message("assistant", f"step {i}", tool_calls=calls))
        for call in calls:
            body = "\n".join(f"{call.id} line {j}" for j in range(lines))
            messages.append(Message("tool", body, tool_call_id=call.id, name=call.name))
    return messages


def test_at_or_below_max_size_nothing_changes() -> None:
    messages = chat(49)  # 100 messages
    assert len(messages) == 100
    assert AmortizedForgetting(max_size=100).apply(messages, ctx()) is messages


def test_over_max_size_keeps_head_and_tail_down_to_half() -> None:
    messages = chat(50)  # 102 messages
    c = ctx()
    out = AmortizedForgetting(max_size=100, keep_first=1).apply(messages, c)
    assert len(out) == 50
    assert out[:2] == messages[:2]  # system + the task
    assert all(a is b for a, b in zip(out[2:], messages[-48:], strict=True))
    assert c.events == [{"call": 0, "type": "amortized_forgetting", "forgotten": 52, "kept": 50, "mode": "count"}]


def test_forgetting_is_amortized_not_every_call() -> None:
    layer, c = AmortizedForgetting(max_size=20, keep_first=1), ctx()
    messages = chat(5)
    fired = 0
    for i in range(60):
        messages = [*messages, Message("assistant", f"more {i}"), Message("user", f"q {i}")]
        out = layer.apply(messages, c)
        fired += out is not messages
        messages = out
        assert len(messages) <= 22
    # Forgets to 10 messages, then 12 more messages may arrive before the next forgetting.
    assert 9 <= fired <= 11


def test_a_call_is_never_separated_from_its_result() -> None:
    messages = tool_history(20)  # 2 + 60 messages; the cut lands inside a round
    out = AmortizedForgetting(max_size=40, keep_first=1).apply(messages, ctx())
    assert request_problems(out) == []
    assert out[2].role == "assistant"  # the orphaned results at the edge went with their call
    assert len(out) <= 20


def test_pinned_messages_and_their_partners_survive() -> None:
    messages = tool_history(20)
    assert messages[6].role == "tool"
    messages[6] = messages[6].replace(pinned=True)  # a tool result deep in the forgotten middle
    out = AmortizedForgetting(max_size=40, keep_first=1).apply(messages, ctx())
    kept = {id(m) for m in out}
    assert {id(messages[i]) for i in (5, 6, 7)} <= kept  # it, its call, and the call's other result
    assert id(messages[2]) not in kept
    assert request_problems(out) == []


def test_by_tokens_keeps_the_longest_tail_that_fits() -> None:
    messages = tool_history(20)
    total = ESTIMATOR.prompt(messages)
    c = ctx(window=1_000 + total)  # prompt budget = total
    out = AmortizedForgetting(max_size=None, target_ratio=0.5).apply(messages, c)
    assert ESTIMATOR.prompt(out) <= 0.5 * total
    assert out[:2] == messages[:2]
    assert out[-3:] == messages[-3:]  # the last round stays
    assert request_problems(out) == []
    # The round before the kept tail would not have fitted: the tail is the longest that does.
    first_kept = next(i for i, m in enumerate(messages) if m is out[2])
    previous_call = max(i for i in range(first_kept) if messages[i].role == "assistant")
    assert ESTIMATOR.prompt([*out, *messages[previous_call:first_kept]]) > 0.5 * total


def test_by_tokens_always_keeps_the_last_round_even_if_too_big() -> None:
    messages = tool_history(3, lines=400)
    out = AmortizedForgetting(max_size=None, target_ratio=0.1).apply(messages, ctx(window=2_000))
    assert out == [*messages[:2], *messages[-3:]]


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="less than half"):
        AmortizedForgetting(max_size=10, keep_first=5)
    with pytest.raises(ValueError, match="max_size"):
        AmortizedForgetting(max_size=None, target_ratio=None)
    with pytest.raises(ValueError, match="target_ratio"):
        AmortizedForgetting(max_size=None, target_ratio=1.5)
