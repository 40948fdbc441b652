"""DB-GPT Layer 2: drop old whole rounds, keep >= 3 rounds, then walk back to min_keep_tokens."""

from ctxbench.layers.drop_rounds import SessionMemoryCompact
from ctxbench.layers.llm_full_compression import BREAKER_KEY
from ctxbench.replay.provider import request_problems
from ctxbench.transcripts.rounds import dbgpt_rounds
from tests.dbgpt_histories import TASK, make_ctx, react_history, tool_history


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
