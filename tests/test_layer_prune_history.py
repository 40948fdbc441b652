"""Strategy 3: history pruning keeps the key messages, leaves one notice, repairs tool pairs."""

from __future__ import annotations

import pytest

from ctxbench.layers.prune_history import NOTICE_TEMPLATE, PRUNED_KEY, PruneHistory, recent_count
from ctxbench.layers.tool_pairs import SYNTHETIC_RESULT
from ctxbench.transcripts.model import Message, ToolCall
from tests.five_layer_helpers import assert_valid, call, make_ctx


def test_notice_text_is_verbatim() -> None:
    assert NOTICE_TEMPLATE.format(removed=7) == "[context compacted: 7 earlier messages removed]"


@pytest.mark.parametrize(("total", "n"), [(1, 0), (3, 1), (8, 2), (9, 3), (17, 5), (18, 6), (19, 6), (300, 6)])
def test_recent_count_is_min_6_and_a_third(total: int, n: int) -> None:
    assert recent_count(total) == n


# Pruning that would not save anything does not happen: the pruned messages carry some text.
PAD = " " + "filler " * 20


def label(message: Message) -> str:
    return message.content.removesuffix(PAD)


def _chat(turns: int) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "the task")]
    for i in range(turns):
        messages += [Message("assistant", f"a{i}{PAD}"), Message("user", f"u{i}{PAD}")]
    return messages


def test_keeps_system_first_user_and_last_n() -> None:
    messages = _chat(5)  # 12 messages: N = 4, middle = 12 - 2 - 4 = 6
    ctx = make_ctx()
    out = PruneHistory().apply(messages, ctx)
    assert [label(m) for m in out] == [
        "sys",
        "the task",
        "[context compacted: 6 earlier messages removed]",
        "a3",
        "u3",
        "a4",
        "u4",
    ]
    assert out[-1] is messages[-1]  # the current message, untouched
    assert [d["content"].removesuffix(PAD) for d in out[2].metadata[PRUNED_KEY]] == ["a0", "u0", "a1", "u1", "a2", "u2"]
    assert ctx.events[-1]["removed"] == 6
    assert_valid(out)


def test_caps_recent_at_six() -> None:
    out = PruneHistory().apply(_chat(20), make_ctx())  # 42 messages
    assert len(out) == 2 + 1 + 6
    assert out[2].content == "[context compacted: 34 earlier messages removed]"


def test_pinned_messages_survive_in_order() -> None:
    messages = _chat(5)
    messages[5] = messages[5].replace(pinned=True, content="pinned fact: port 47213")
    out = PruneHistory().apply(messages, make_ctx())
    assert [m.content for m in out][:4] == [
        "sys",
        "the task",
        "pinned fact: port 47213",
        "[context compacted: 5 earlier messages removed]",
    ]


def test_nothing_to_prune_returns_the_same_list() -> None:
    messages = _chat(1)  # 4 messages: N = 1, middle = a0
    assert len(PruneHistory().apply(messages, make_ctx())) == 4
    short = [Message("system", "s"), Message("user", "u"), Message("assistant", "a")]
    assert PruneHistory().apply(short, make_ctx()) is short


def test_current_tool_result_keeps_its_call() -> None:
    messages = [Message("system", "s"), Message("user", "task")]
    for i in range(6):
        messages += call(f"c{i}", "bash", f"out{i}{PAD}")
    # 14 messages: N = 4 starts at c4's result; the block is extended back to c4's call.
    out = PruneHistory().apply(messages, make_ctx())
    assert [label(m) for m in out if m.role == "tool"] == ["out4", "out5"]
    assert out[-1] is messages[-1]
    assert_valid(out)


def _pinned_call_history() -> list[Message]:
    pinned_call = Message("assistant", "checking the db", tool_calls=(ToolCall("p1", "sql_query", "{}"),), pinned=True)
    return [
        Message("system", "s"),
        Message("user", "task"),
        pinned_call,
        Message("tool", "rows", tool_call_id="p1", name="sql_query"),
        *[m for i in range(5) for m in (Message("user", f"u{i}{PAD}"), Message("assistant", f"a{i}{PAD}"))],
    ]


def test_a_call_whose_result_was_pruned_gets_openclaws_synthetic_error_result() -> None:
    """OpenClaw's session-transcript-repair: a call without a result keeps its call and gets a synthetic
    error result (it is not stripped); the pinned message stays whole."""
    messages = _pinned_call_history()
    ctx = make_ctx()
    out = PruneHistory().apply(messages, ctx)
    assert out[2] is messages[2]
    assert out[3].role == "tool" and out[3].tool_call_id == "p1" and out[3].content == SYNTHETIC_RESULT
    assert out[3].metadata.get("is_error") is True
    assert ctx.events[-1]["synthetic_results_added"] == 1 and ctx.events[-1]["orphan_calls_stripped"] == 0
    assert_valid(out)


def test_a_pinned_message_is_never_dropped_by_the_repair() -> None:
    """A pinned call with no text used to be dropped with its stripped call; a pinned tool result whose
    call was pruned used to be dropped as an orphan. Both stay (the result takes its call along)."""
    empty_call = Message("assistant", "", tool_calls=(ToolCall("p1", "bash", "{}"),), pinned=True)
    messages = [Message("system", "s"), Message("user", "task"), empty_call]
    messages += [Message("tool", "r1", tool_call_id="p1", name="bash")]
    messages += [Message("assistant", "", tool_calls=(ToolCall("p2", "bash", "{}"),))]
    messages += [Message("tool", "the key is K-42", tool_call_id="p2", name="bash", pinned=True)]
    messages += [m for i in range(5) for m in (Message("user", f"u{i}{PAD}"), Message("assistant", f"a{i}{PAD}"))]
    for orphan_calls in ("synthetic", "strip"):
        out = PruneHistory(orphan_calls=orphan_calls).apply(messages, make_ctx())
        assert all(any(o is m for o in out) for m in messages if m.pinned), orphan_calls
        assert_valid(out)


def test_the_notice_counts_what_the_repair_removed() -> None:
    """A result displaced after a user turn whose call was pruned is dropped by the repair: the notice
    says how many messages are gone in all, and the pruned payload holds it too."""
    messages = [Message("system", "s"), Message("user", "task")]
    messages += [m for i in range(3) for m in (Message("user", f"q{i}{PAD}"), Message("assistant", f"r{i}{PAD}"))]
    messages += [Message("assistant", "", tool_calls=(ToolCall("d1", "bash", "{}"),)), Message("user", "wait")]
    messages += [Message("tool", "late result" + PAD, tool_call_id="d1", name="bash")]
    messages += [Message("user", f"u{PAD}"), Message("assistant", f"a{PAD}"), Message("user", "go")]
    ctx = make_ctx()
    out = PruneHistory().apply(messages, ctx)
    notice = next(m for m in out if PRUNED_KEY in m.metadata)
    gone = len(messages) - sum(1 for m in out if any(m is o for o in messages))
    assert notice.content == NOTICE_TEMPLATE.format(removed=gone)
    assert len(notice.metadata[PRUNED_KEY]) == gone and ctx.events[-1]["removed"] == gone
    assert_valid(out)


def test_orphaned_pairs_repaired_by_stripping_when_asked() -> None:
    # orphan_calls=strip (the reading before issue 26): the pinned assistant loses the call, keeps its text.
    pinned_call = Message("assistant", "checking the db", tool_calls=(ToolCall("p1", "sql_query", "{}"),), pinned=True)
    messages = [
        Message("system", "s"),
        Message("user", "task"),
        pinned_call,
        Message("tool", "rows", tool_call_id="p1", name="sql_query"),
        *[m for i in range(5) for m in (Message("user", f"u{i}{PAD}"), Message("assistant", f"a{i}{PAD}"))],
    ]
    ctx = make_ctx()
    out = PruneHistory(orphan_calls="strip").apply(messages, ctx)
    assert out[2].content == "checking the db" and out[2].tool_calls == ()
    assert not any(m.role == "tool" for m in out)
    assert ctx.events[-1]["orphan_calls_stripped"] == 1
    assert_valid(out)


def test_parallel_calls_are_never_half_kept() -> None:
    messages = [Message("system", "s"), Message("user", "task")]
    for i in range(4):
        batch = Message("assistant", "", tool_calls=(ToolCall(f"x{i}", "grep", "{}"), ToolCall(f"y{i}", "glob", "{}")))
        messages += [
            batch,
            Message("tool", f"gx{i}", tool_call_id=f"x{i}"),
            Message("tool", f"gy{i}", tool_call_id=f"y{i}"),
        ]
        messages.append(Message("user", f"next {i}"))
    for n in range(6, len(messages) + 1):
        if messages[n - 1].role == "assistant":
            continue  # a replayed context ends with what arrived since the last call, never an open call
        out = PruneHistory().apply(messages[:n], make_ctx())
        assert_valid(out)
        assert out[-1] is messages[n - 1]


def test_pruning_never_makes_the_prompt_bigger() -> None:
    """A 3-character middle is not replaced by a 46-character notice: nothing to gain, no prune."""
    messages = [Message("system", "sys"), Message("user", "the task"), Message("assistant", "ok")]
    messages += [Message("user", "k"), Message("assistant", "y" * 4000), Message("user", "z" * 4000)]
    ctx = make_ctx()
    assert PruneHistory(max_recent=6).apply(messages, ctx) is messages
    assert not [e for e in ctx.events if e["type"] == "five_layer.prune"]
