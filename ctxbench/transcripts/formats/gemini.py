"""Gemini conversations: Gemini CLI session files and Gemini API ``contents`` lists.

- Gemini CLI records each session as ``~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json``:
  ``{"sessionId", "messages": [...]}``, a message ``{"type": "user" | "gemini" | "info" | "error", "content",
  ...}``; a ``gemini`` message carries its ``toolCalls`` (``{id, name, args, result}``, the result a list of
  ``functionResponse`` parts), its ``thoughts`` and the call's ``tokens`` (``input``, the prompt with the
  ``cached`` tokens among them, ``output``). ``info``, ``warning`` and ``error`` messages are the UI's and
  were never sent.
- A Gemini API request body or a saved chat (``/chat save``): ``contents`` (or a bare list) of
  ``{"role": "user" | "model", "parts": [...]}``, parts of ``text`` (``thought: true`` for reasoning),
  ``functionCall`` ``{name, args}`` and ``functionResponse`` ``{name, response}``; ``systemInstruction``
  is the system message.
"""

from __future__ import annotations

import json
from typing import Any

from ctxbench.transcripts.formats._common import ParseContext, Source, as_str, finish, normalize_usage
from ctxbench.transcripts.model import Message, ToolCall, Transcript

FORMAT = "gemini"
CLI_TYPES = frozenset(("user", "gemini", "info", "error", "warning"))


def is_cli_session(doc: Any) -> bool:
    messages = doc.get("messages") if isinstance(doc, dict) else None
    return (
        isinstance(messages, list)
        and "sessionId" in doc
        and any(isinstance(m, dict) and m.get("type") == "gemini" for m in messages)
    )


def is_content(value: Any) -> bool:
    """One Gemini API ``Content``: a role of its own and a list of parts."""
    return isinstance(value, dict) and value.get("role") in ("user", "model") and isinstance(value.get("parts"), list)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _response_text(response: Any) -> str:
    """What a function returned: its ``output`` (or ``error``) text, else the response as JSON."""
    if isinstance(response, dict):
        for key in ("output", "error", "content", "result"):
            if isinstance(response.get(key), str):
                return response[key]
    return response if isinstance(response, str) else _json(response)


def _parts_text(parts: Any) -> str:
    """The text of a ``PartListUnion``: a string, a part, or a list of parts (function responses by their output)."""
    if isinstance(parts, str):
        return parts
    if isinstance(parts, dict):
        parts = [parts]
    texts = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        elif isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            texts.append(_response_text(part["functionResponse"].get("response")))
    return "\n".join(texts)


def cli_usage(tokens: Any) -> dict[str, int | None] | None:
    """A Gemini CLI message's ``tokens`` as the call's usage (its prompt holds the cached tokens)."""
    if not isinstance(tokens, dict):
        return None
    return normalize_usage(
        {
            "prompt_tokens": tokens.get("input"),
            "completion_tokens": tokens.get("output"),
            "total_tokens": tokens.get("total"),
            "prompt_tokens_details": {"cached_tokens": tokens.get("cached")},
        }
    )


def _cli_messages(records: list[Any], ctx: ParseContext) -> tuple[list[Message], str | None]:
    messages: list[Message] = []
    model = None
    for i, record in enumerate(records):
        where = f"$.messages[{i}]"
        if not isinstance(record, dict) or record.get("type") not in CLI_TYPES:
            ctx.warn(where, "skipped, not a Gemini CLI message (type user or gemini)")
            continue
        kind = record["type"]
        if kind in ("info", "error", "warning"):
            continue  # the UI's notices, never sent to the model
        text = _parts_text(record.get("content"))
        if kind == "user":
            messages.append(Message("user", text))
            continue
        model = model or as_str(record.get("model"))
        calls = [c for c in record.get("toolCalls") or [] if isinstance(c, dict)]
        metadata: dict[str, Any] = {}
        usage = cli_usage(record.get("tokens"))
        if usage:
            metadata["usage"] = usage
        thoughts = [t for t in record.get("thoughts") or [] if isinstance(t, dict)]
        reasoning = "\n".join(f"{t.get('subject') or ''}: {t.get('description') or ''}".strip(": ") for t in thoughts)
        if reasoning:
            metadata["reasoning"] = reasoning
        tool_calls = tuple(
            ToolCall(as_str(c.get("id")) or f"call_{i}_{k}", str(c.get("name") or ""), _json(c.get("args") or {}))
            for k, c in enumerate(calls)
        )
        messages.append(Message("assistant", text, tool_calls=tool_calls, metadata=metadata))
        for call, raw in zip(tool_calls, calls):
            result = raw.get("result")
            output = _parts_text(result) if result is not None else str(raw.get("resultDisplay") or "")
            messages.append(Message("tool", output, tool_call_id=call.id, name=call.name))
    return messages, model


def _api_messages(contents: list[Any], system: Any, ctx: ParseContext) -> list[Message]:
    messages: list[Message] = []
    if system is not None:
        messages.append(Message("system", _parts_text(system.get("parts") if isinstance(system, dict) else system)))
    for i, content in enumerate(contents):
        if not is_content(content):
            ctx.warn(f"$[{i}]", "skipped, not a Gemini Content (role user or model, parts)")
            continue
        parts = [p for p in content["parts"] if isinstance(p, dict)]
        if content["role"] == "model":
            calls = tuple(
                ToolCall(
                    as_str(p["functionCall"].get("id")) or f"call_{i}_{k}",
                    str(p["functionCall"].get("name") or ""),
                    _json(p["functionCall"].get("args") or {}),
                )
                for k, p in enumerate(parts)
                if isinstance(p.get("functionCall"), dict)
            )
            thought = "\n".join(p["text"] for p in parts if p.get("thought") and isinstance(p.get("text"), str))
            metadata = {"reasoning": thought} if thought else {}
            messages.append(Message("assistant", _parts_text(parts), tool_calls=calls, metadata=metadata))
            continue
        responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        pending = [c for c in (messages[-1].tool_calls if messages and messages[-1].role == "assistant" else ())]
        for k, response in enumerate(responses):  # each answers the call of its name (and id, when given)
            name = str(response.get("name") or "")
            call = next((c for c in pending if c.id == response.get("id") or c.name == name), None)
            if call is not None:
                pending.remove(call)
            call_id = call.id if call is not None else as_str(response.get("id")) or f"response_{i}_{k}"
            messages.append(Message("tool", _response_text(response.get("response")), tool_call_id=call_id, name=name))
        text = "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str))
        if text or not responses:
            messages.append(Message("user", text))
    return messages


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    doc: Any = source.data if source.kind == "json" else [v for _, v in source.data]
    stem = source.path.stem
    if isinstance(doc, dict) and is_cli_session(doc):
        messages, model = _cli_messages(doc["messages"], ctx)
        return [finish(ctx, as_str(doc.get("sessionId")) or stem, messages, ctx.source(model))]
    if isinstance(doc, dict):
        contents, system = doc.get("contents") or [], doc.get("systemInstruction") or doc.get("system_instruction")
        model = as_str(doc.get("model"))
    else:
        contents, system, model = doc, None, None
    return [finish(ctx, stem, _api_messages(contents, system, ctx), ctx.source(model))]
