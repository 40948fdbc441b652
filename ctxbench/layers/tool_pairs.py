"""Orphaned tool-pair repair: after messages are dropped, a tool result may have lost its
call (or a call its result); providers reject such requests, so repair them."""

from __future__ import annotations

from ctxbench.transcripts.model import Message


def repair_tool_pairs(messages: list[Message]) -> list[Message]:
    """Drop tool results whose call is gone and strip calls whose result is gone.

    Returns ``messages`` itself when nothing needed repair. An assistant message left
    with no text and no calls is dropped.
    """
    called = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    if all(m.tool_call_id in called for m in messages if m.role == "tool") and called <= answered:
        return messages
    repaired: list[Message] = []
    for message in messages:
        if message.role == "tool" and message.tool_call_id not in called:
            continue
        if message.role == "assistant" and any(c.id not in answered for c in message.tool_calls):
            kept_calls = tuple(c for c in message.tool_calls if c.id in answered)
            if not kept_calls and not message.content:
                continue
            message = message.replace(tool_calls=kept_calls)
        repaired.append(message)
    return repaired
