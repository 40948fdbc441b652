"""Anthropic Messages content blocks: ``[{role, content}]`` or ``{system, messages}``.

Assistant ``text`` blocks become the message text, ``tool_use`` blocks its tool calls, ``thinking``
is kept as the message's own part, ``metadata["reasoning"]`` (the API counts it again only within
the tool-use loop it belongs to; ``redacted_thinking`` is encrypted and cannot be counted).
A user message's ``tool_result`` blocks become ``tool`` messages (they come first in a user turn),
followed by a user message for any other text. Images become ``[image omitted]``.
"""

from __future__ import annotations

from typing import Any

from ctxbench.transcripts.formats._common import (
    ParseContext,
    Source,
    arguments_text,
    as_str,
    finish,
    normalize_usage,
    recorded_tools,
    text_of,
)
from ctxbench.transcripts.model import Message, ToolCall, Transcript

FORMAT = "anthropic"


def assistant_message(content: Any, ctx: ParseContext, where: str, usage: Any = None) -> Message:
    """One assistant turn from its content blocks (or a string)."""
    if not isinstance(content, list):
        content = [{"type": "text", "text": text_of(content, ctx, where)}]
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in ("tool_use", "server_tool_use"):
            calls.append(
                ToolCall(
                    as_str(block.get("id")) or f"toolu_{where}_{j}",
                    str(block.get("name") or ""),
                    arguments_text(block.get("input")),
                )
            )
        elif kind == "thinking":
            thinking.append(str(block.get("thinking") or ""))
        elif kind == "redacted_thinking":
            continue
        else:
            texts.append(text_of([block], ctx, where))
    metadata: dict[str, Any] = {}
    if thinking:
        metadata["reasoning"] = "\n".join(thinking)
    normalized = normalize_usage(usage)
    if normalized:
        metadata["usage"] = normalized
    return Message("assistant", "\n".join(t for t in texts if t), tool_calls=tuple(calls), metadata=metadata)


def user_messages(content: Any, ctx: ParseContext, where: str, pinned: bool = False) -> list[Message]:
    """One user turn: its tool results as ``tool`` messages, then its other content as a user message."""
    if not isinstance(content, list):
        return [Message("user", text_of(content, ctx, where), pinned=pinned)]
    out: list[Message] = []
    rest: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            metadata = {"is_error": True} if block.get("is_error") else {}
            out.append(
                Message(
                    "tool",
                    text_of(block.get("content"), ctx, where),
                    tool_call_id=as_str(block.get("tool_use_id")),
                    metadata=metadata,
                )
            )
        else:
            rest.append(block)
    if rest or not out:
        out.append(Message("user", text_of(rest, ctx, where), pinned=pinned))
    return out


def convert(messages: list[Any], ctx: ParseContext, prefix: str) -> tuple[list[Message], str | None]:
    out: list[Message] = []
    model = None
    for i, raw in enumerate(messages):
        where = f"{prefix}[{i}]"
        if not isinstance(raw, dict) or raw.get("role") not in ("user", "assistant", "system"):
            ctx.warn(where, "skipped, not a user/assistant message")
            continue
        pinned = bool(raw.get("_pin") or raw.get("pinned"))
        if raw["role"] == "assistant":
            out.append(assistant_message(raw.get("content"), ctx, where, raw.get("usage")).replace(pinned=pinned))
            model = model or as_str(raw.get("model"))
        elif raw["role"] == "system":
            out.append(Message("system", text_of(raw.get("content"), ctx, where), pinned=pinned))
        else:
            out.extend(user_messages(raw.get("content"), ctx, where, pinned))
    return out, model


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    doc = source.data
    stem = source.path.stem
    if source.kind == "jsonl":
        doc = [v for _, v in doc]
    if isinstance(doc, dict):
        messages, model = convert(doc.get("messages") or [], ctx, "$.messages")
        system = doc.get("system")
        if system:
            messages.insert(0, Message("system", text_of(system, ctx, "$.system")))
        tools = recorded_tools(doc.get("tools"), ctx, "$.tools")
        return [finish(ctx, stem, messages, ctx.source(as_str(doc.get("model")) or model), **tools)]
    messages, model = convert(doc, ctx, "$")
    return [finish(ctx, stem, messages, ctx.source(model))]
