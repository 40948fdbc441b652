"""Orphaned tool-pair repair: after messages are dropped, a tool result may have lost its
call (or a call its result); providers reject such requests, so repair them."""

from __future__ import annotations

from dataclasses import dataclass, field

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


# OpenClaw's session-transcript-repair.ts (makeMissingToolResult), verbatim.
SYNTHETIC_RESULT = (
    "[openclaw] missing tool result in session history; inserted synthetic error result for transcript repair."
)


@dataclass
class Repair:
    """What ``repair_as_openclaw`` did: the messages it dropped, the synthetic results it added, the
    calls it stripped."""

    dropped: list[Message] = field(default_factory=list)
    added: int = 0
    stripped: int = 0


def repair_as_openclaw(messages: list[Message], orphan_calls: str = "synthetic") -> tuple[list[Message], Repair]:
    """OpenClaw's ``repairToolUseResultPairing``: a tool result whose call is gone is dropped; a call
    whose result is gone gets a synthetic error result right after its batch (``orphan_calls=
    "synthetic"``), or is stripped from its message (``"strip"``, as ``repair_tool_pairs``). A pinned
    message is never dropped: a pinned assistant left without text or calls stays as it is, so its call
    keeps a synthetic result even with ``strip``."""
    report = Repair()
    called = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    if all(m.tool_call_id in called for m in messages if m.role == "tool") and called <= answered:
        return messages, report
    out: list[Message] = []
    pending: list[Message] = []  # synthetic results owed by the last assistant batch
    for message in messages:
        if message.role != "tool" and pending:
            out.extend(pending)
            pending = []
        if message.role == "tool" and message.tool_call_id not in called:
            report.dropped.append(message)
            continue
        if message.role == "assistant" and any(c.id not in answered for c in message.tool_calls):
            missing = [c for c in message.tool_calls if c.id not in answered]
            kept_calls = tuple(c for c in message.tool_calls if c.id in answered)
            if orphan_calls == "strip" and (kept_calls or message.content or not message.pinned):
                report.stripped += len(missing)
                if not kept_calls and not message.content:
                    report.dropped.append(message)
                    continue
                message = message.replace(tool_calls=kept_calls)
            else:
                report.added += len(missing)
                pending = [
                    Message(
                        "tool",
                        SYNTHETIC_RESULT,
                        tool_call_id=c.id,
                        name=c.name or None,
                        metadata={"is_error": True, "synthetic": True},
                    )
                    for c in missing
                ]
        out.append(message)
    out.extend(pending)
    return out, report
