"""DB-GPT Layer 2: drop old whole rounds, keep >= 3 rounds, then walk back to min_keep_tokens."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.layers.drop_rounds import SessionMemoryCompact
from ctxbench.layers.llm_full_compression import BREAKER_KEY
from ctxbench.replay.provider import request_problems
from ctxbench.tokens.estimators import FixedRatioEstimator
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import dbgpt_rounds
from tests.dbgpt_histories import TASK, make_ctx, react_history, tool_history
from tests.test_running_totals import edit


def _thousand_token_rounds(n: int):
    """Rounds of exactly 1000 tokens under len//4: the task sits in round 0."""
    messages = react_history(n, obs_chars=3000)
    out = [messages[0], messages[1].replace(content="")]
    for m in messages[2:]:
        out.append(m)
    # pad each assistant message so assistant + observation = 4000 chars = 1000 tokens
    return [m.replace(content=m.content.ljust(1000)) if m.role == "assistant" else m for m in out]


def _kept_rounds(out) -> list[str]:
    return [out[r[-1]].content.split()[4] for r in dbgpt_rounds(out)]  # "Observation: rows of step N"


def test_min_keep_recent_rounds_when_tokens_need_no_more():
    messages = react_history(10, obs_chars=400)
    out = SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=0).apply(messages, make_ctx(messages))
    assert _kept_rounds(out) == ["7", "8", "9"]
    assert out[0].role == "system" and out[0] is messages[0]
    assert out[1:] == messages[-6:]  # whole rounds, in order
    assert TASK not in [m.content for m in out]  # the task lives on in the task-progress block (snapshots layer)


def test_walk_back_keeps_rounds_below_min_keep_tokens():
    messages = _thousand_token_rounds(10)
    ctx = make_ctx(messages)
    assert [sum(ctx.estimator.message(messages[i]) for i in r) for r in dbgpt_rounds(messages)][1:] == [1000] * 9
    # 3 rounds = 3000 tokens; a 4th makes 4000 < 4500 so it is kept; the 5th reaches 5000 >= 4500: dropped.
    out = SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=4500).apply(messages, ctx)
    assert _kept_rounds(out) == ["6", "7", "8", "9"]
    # DB-GPT's loop counts a round before testing: the round that reaches the minimum is dropped.
    out = SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=4000).apply(messages, ctx)
    assert _kept_rounds(out) == ["7", "8", "9"]
    out = SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=6001).apply(messages, ctx)
    assert _kept_rounds(out) == ["4", "5", "6", "7", "8", "9"]  # 6000 kept < 6001; a 7th would make 7000


def test_nothing_to_drop_returns_same_list():
    few = react_history(3, obs_chars=400)
    assert SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=0).apply(few, make_ctx(few)) is few
    many = react_history(10, obs_chars=40)
    # everything fits under min_keep_tokens: DB-GPT keeps all (keep_from reaches 0)
    assert SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=10_000).apply(many, make_ctx(many)) is many


def test_system_messages_kept_and_tool_pairs_whole():
    messages = tool_history(10, result_chars=200)
    out = SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=0).apply(messages, make_ctx(messages))
    assert out[0].role == "system"
    assert [m.role for m in out[1:]] == ["assistant", "tool", "tool"] * 3
    assert request_problems(out) == []


def test_event_and_breaker():
    messages = react_history(10, obs_chars=400)
    ctx = make_ctx(messages)
    SessionMemoryCompact(min_keep_tokens=0).apply(messages, ctx)
    assert ctx.events[-1] == {
        "call": 0,
        "type": "compaction.drop",
        "layer": "layer2",
        "dropped_rounds": 7,
        "kept_rounds": 3,
    }
    ctx.shared[BREAKER_KEY] = True
    assert SessionMemoryCompact(min_keep_tokens=0).apply(messages, ctx) is messages


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 50), min_tokens=st.sampled_from([0, 20, 200, 800, 2000]))
def test_remembered_round_sums_give_a_fresh_layers_output(seed: int, steps: int, min_tokens: int) -> None:
    """One layer following an evolving history (grown, messages replaced or dropped, Layer 1-style
    cuts) keeps each round's tokens between calls; every output and event equals a fresh layer's."""
    rng = random.Random(seed)
    following = SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=min_tokens)
    estimator = FixedRatioEstimator(4.0)  # one estimator throughout: the sums are remembered for it
    messages: list[Message] = []
    for n in range(steps):
        messages = edit(rng, messages, n)
        if messages and rng.random() < 0.5:  # a recent message cut short (where the walk looks)
            i = rng.randrange(max(0, len(messages) - 8), len(messages))
            messages = [*messages[:i], messages[i].replace(content=messages[i].content[:5]), *messages[i + 1 :]]
        ctx, fresh_ctx = make_ctx(messages, estimator), make_ctx(messages, estimator)
        out = following.apply(messages, ctx)
        expected = SessionMemoryCompact(min_keep_recent_rounds=3, min_keep_tokens=min_tokens).apply(messages, fresh_ctx)
        assert out == expected  # equal, not the same objects: the tool-pair repair copies messages
        assert ctx.events == fresh_ctx.events
