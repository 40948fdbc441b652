"""``sliding_window`` keeps the same messages as its rounds walked back one by one (the reference
below: the strategy's code before it summed each round's messages in one slice)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.core import ModelSpec, StrategyContext
from ctxbench.data import BUNDLED
from ctxbench.replay.engine import replay
from ctxbench.strategies.sliding_window import SlidingWindow
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.estimators import ExactEstimator
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts.canonical import read_transcripts
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import group_rounds
from tests.strategy_histories import histories


def reference_fit(messages: list[Message], ctx: StrategyContext, budget: int, keep_first_user: bool) -> list[Message]:
    """The kept messages, walking back over ``group_rounds`` one message at a time."""
    estimate = ctx.estimator
    if estimate.prompt(messages) <= budget:
        return messages
    head = [i for i, m in enumerate(messages) if m.role == "system" or m.pinned]
    if keep_first_user:
        first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        if first_user is not None and first_user not in head:
            head.append(first_user)
    head_set = set(head)
    used = sum(estimate.message(messages[i]) for i in head)
    kept: list[int] = []
    for round_ in reversed(group_rounds(messages)):
        body = [i for i in round_ if i not in head_set]
        cost = sum(estimate.message(messages[i]) for i in body)
        if kept and used + cost > budget:
            break
        kept.extend(body)
        used += cost
    keep = head_set | set(kept)
    return [m for i, m in enumerate(messages) if i in keep]


def _shuffled_roles(messages: list[Message], rng: random.Random) -> list[Message]:
    """The history with a few messages pinned or turned into system messages (anywhere), and
    sometimes without its first messages: rounds whose messages are all in the head."""
    out = []
    for message in messages[rng.choice((0, 0, 1, 2)) :]:
        roll = rng.random()
        if roll < 0.05:
            message = message.replace(pinned=True)
        elif roll < 0.08:
            message = Message("system", message.content)
        out.append(message)
    return out


@settings(max_examples=150, deadline=None)
@given(history=histories(), seed=st.integers(0, 2**16), keep_first_user=st.booleans())
def test_the_window_keeps_what_walking_back_round_by_round_keeps(history, seed: int, keep_first_user: bool) -> None:
    rng = random.Random(seed)
    messages = _shuffled_roles(list(history.messages), rng)
    ctx = StrategyContext(
        model=ModelSpec(context_window=8000), estimator=ExactEstimator("o200k_base"), transcript=history
    )
    window = SlidingWindow(keep_first_user=keep_first_user)
    full = ctx.estimate(messages)
    for budget in (0, 1, full // 4, full // 2, full - 1, full, rng.randint(0, full + 1)):
        expected = reference_fit(messages, ctx, budget, keep_first_user)
        kept = window._fit(messages, ctx, budget)
        assert [id(m) for m in kept] == [id(m) for m in expected], budget
        if expected is not messages:
            event = ctx.events[-1]
            assert (event["kept"], event["dropped"]) == (len(expected), len(messages) - len(expected))


class _ReferenceWindow(SlidingWindow):
    """The window deciding every call by walking back over every round (``reference_fit``)."""

    def _fit(self, messages: list[Message], ctx: StrategyContext, budget: int) -> list[Message]:
        kept = reference_fit(messages, ctx, budget, self.keep_first_user)
        if kept is not messages:
            ctx.mark_layer("sliding_window")
            ctx.emit({"type": "sliding_window", "dropped": len(messages) - len(kept), "kept": len(kept)})
        return kept


@pytest.mark.parametrize("window", [6_000, 24_000])
def test_a_replay_keeps_what_walking_back_every_call_keeps(window: int) -> None:
    """Over a whole bundled transcript (the window overflowing call after call, and the overflow
    retries keeping less), the same calls and events as the reference walk."""
    transcript = next(iter(read_transcripts(BUNDLED / "sql_060k.jsonl")))
    model = ModelSpec(context_window=window, reserved_output_tokens=1_000)

    def run(strategy: SlidingWindow) -> tuple[list[dict], list[dict]]:
        fresh = next(iter(read_transcripts(BUNDLED / "sql_060k.jsonl")))  # no counts cached from the other run
        counter = TokenCounter(get_tokenizer(model.tokenizer))
        result = replay(fresh, strategy, ExactEstimator(model.tokenizer), model, counter)
        return result.calls, result.events

    calls, events = run(SlidingWindow())
    assert sum(1 for e in events if e["type"] == "sliding_window") > len(transcript.call_indices) // 4
    assert (calls, events) == run(_ReferenceWindow())
