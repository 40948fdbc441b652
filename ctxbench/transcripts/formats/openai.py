"""OpenAI chat-completions message lists (JSON or JSONL; mini-swe-agent and most frameworks).

Accepts a list of messages, an object with ``messages`` (mini-swe-agent's ``.traj.json``), JSONL
with one message per line, or JSONL with one conversation object per line. Handles ``tool_calls``
and ``role: tool``, the legacy ``function_call`` / ``role: function``, content parts, ``_pin``, and
per-call usage wherever frameworks keep it (``usage``, ``extra.response.usage``, ``response.usage``).
Reasoning is kept as the assistant message's own part, ``metadata["reasoning"]``: DeepSeek's
``reasoning_content`` (also vLLM's ``reasoning``), and OpenAI reasoning items (``{"type": "reasoning",
"summary": [...]}``), which belong to the assistant message after them. OpenAI Responses API item
lists (``function_call``, ``function_call_output``, ``reasoning``, messages, Codex's freeform
``custom_tool_call`` / ``custom_tool_call_output`` and ``local_shell_call``) are read as well.
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
    openai_tool_calls,
    recorded_tools,
    text_of,
    unique_ids,
)
from ctxbench.transcripts.model import Message, Role, ToolCall, Transcript

FORMAT = "openai"
_ROLE_MAP: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


def _find_usage(message: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """Usage and model name recorded on one assistant message, wherever the framework put them."""
    holders = [message, message.get("response"), message.get("extra")]
    extra = message.get("extra")
    if isinstance(extra, dict):
        holders.append(extra.get("response"))
    usage, model = None, None
    for holder in holders:
        if isinstance(holder, dict):
            usage = usage or normalize_usage(holder.get("usage"))
            model = model or as_str(holder.get("model"))
    return usage, model


def convert_message(raw: Any, index: int, ctx: ParseContext, where: str) -> tuple[Message | None, str | None]:
    """One OpenAI message -> (Message, model name) ; None for something that is not a message."""
    if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
        ctx.warn(where, "skipped, not a chat message (no role)")
        return None, None
    role = raw["role"]
    content = text_of(raw.get("content"), ctx, where)
    metadata: dict[str, Any] = {}
    pinned = bool(raw.get("_pin") or raw.get("pinned"))
    model = None
    if role == "function":  # legacy function result: linked by name later
        return Message("tool", content, name=as_str(raw.get("name")), pinned=pinned), None
    if role not in _ROLE_MAP:
        ctx.warn(where, f"unknown role {role!r} read as user")
        role = "user"
    role = _ROLE_MAP[role]
    calls: tuple[ToolCall, ...] = ()
    if role == "assistant":
        calls = openai_tool_calls(raw.get("tool_calls"), f"call_{index}", ctx, where)
        legacy = raw.get("function_call")
        if isinstance(legacy, dict) and not calls:
            calls = (ToolCall(f"call_{index}", str(legacy.get("name") or ""), arguments_text(legacy.get("arguments"))),)
        usage, model = _find_usage(raw)
        if usage:
            metadata["usage"] = usage
        reasoning = raw.get("reasoning_content") or raw.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            metadata["reasoning"] = reasoning
    extra = raw.get("extra")
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):  # mini-swe-agent's, in epoch seconds
        metadata["timestamp"] = stamp
    if role == "tool":
        return (
            Message(
                "tool",
                content,
                tool_call_id=as_str(raw.get("tool_call_id")),
                name=as_str(raw.get("name")),
                pinned=pinned,
                metadata=metadata,
            ),
            None,
        )
    return Message(role, content, tool_calls=calls, pinned=pinned, metadata=metadata), model


def reasoning_item_text(raw: dict[str, Any]) -> str:
    """The readable text of an OpenAI reasoning item: its summary parts, else its content parts."""
    parts = raw.get("summary") or raw.get("content") or []
    texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    return "\n".join(t for t in texts if isinstance(t, str) and t)


def _responses_item(raw: Any) -> str | None:
    """The kind of an OpenAI Responses API item without a role (reasoning, function_call, ...)."""
    return raw.get("type") if isinstance(raw, dict) and "role" not in raw else None


def convert_messages(raws: list[Any], ctx: ParseContext, prefix: str) -> tuple[list[Message], str | None]:
    """Convert a message list; ``prefix`` names the list in warnings (``$.messages``).

    Responses API items are read too: a ``function_call`` is a tool call of the assistant turn it
    follows (or of a new one), a ``function_call_output`` its ``tool`` result, and ``reasoning``
    the reasoning part of the assistant turn after it."""
    messages: list[Message] = []
    model: str | None = None
    pending: list[str] = []  # reasoning items waiting for their assistant message

    def with_reasoning(message: Message) -> Message:
        nonlocal pending
        joined = "\n".join(p for p in pending if p)
        pending = []
        if joined and "reasoning" not in message.metadata:
            return message.replace(metadata={**message.metadata, "reasoning": joined})
        return message

    for i, raw in enumerate(raws):
        kind = _responses_item(raw)
        if kind == "reasoning":
            pending.append(reasoning_item_text(raw))
            continue
        if kind == "function_call":
            call = ToolCall(
                as_str(raw.get("call_id")) or as_str(raw.get("id")) or f"call_{i}",
                str(raw.get("name") or ""),
                arguments_text(raw.get("arguments")),
            )
            if messages and messages[-1].role == "assistant" and not pending:
                messages[-1] = messages[-1].replace(tool_calls=(*messages[-1].tool_calls, call))
            else:
                messages.append(with_reasoning(Message("assistant", "", tool_calls=(call,))))
            continue
        if kind in ("custom_tool_call", "local_shell_call"):
            # A freeform tool's input is sent as it is (Codex's apply_patch: the patch); a local shell call's
            # action ({"type": "exec", "command": [...]}) is its arguments.
            value = raw.get("input") if kind == "custom_tool_call" else raw.get("action")
            name = str(raw.get("name") or "") if kind == "custom_tool_call" else "local_shell"
            call = ToolCall(
                as_str(raw.get("call_id")) or as_str(raw.get("id")) or f"call_{i}",
                name,
                value if isinstance(value, str) else arguments_text(value),
            )
            if messages and messages[-1].role == "assistant" and not pending:
                messages[-1] = messages[-1].replace(tool_calls=(*messages[-1].tool_calls, call))
            else:
                messages.append(with_reasoning(Message("assistant", "", tool_calls=(call,))))
            continue
        if kind in ("function_call_output", "custom_tool_call_output"):
            output = raw.get("output")
            text = output if isinstance(output, str) else text_of(output, ctx, f"{prefix}[{i}]")
            messages.append(Message("tool", text, tool_call_id=as_str(raw.get("call_id"))))
            continue
        message, m_model = convert_message(raw, i, ctx, f"{prefix}[{i}]")
        if message is not None:
            if pending and message.role == "assistant":
                message = with_reasoning(message)
            messages.append(message)
            model = model or m_model
    return messages, model


def _config_model(doc: dict[str, Any]) -> str | None:
    """Model name from the conversation object (``model``, or mini-swe-agent's ``info.config.model``)."""
    if as_str(doc.get("model")):
        return doc["model"]
    info = doc.get("info")
    config = info.get("config") if isinstance(info, dict) else None
    model = config.get("model") if isinstance(config, dict) else None
    return as_str(model.get("model_name")) if isinstance(model, dict) else None


# mini-swe-agent's tool-calling models send this one tool with every request
# (``minisweagent/models/utils/actions_toolcall.py``, 2.x); its trajectories do not record it.
MINI_SWE_AGENT_BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
            "required": ["command"],
        },
    },
}


def _is_mini_swe_agent(doc: dict[str, Any]) -> bool:
    return str(doc.get("trajectory_format") or "").startswith("mini-swe-agent")


def _conversation(doc: dict[str, Any], tid: str, ctx: ParseContext, prefix: str) -> Transcript:
    raws = doc["messages"]
    mini = _is_mini_swe_agent(doc)
    if mini:  # its closing ``exit`` message records why the run stopped; it was never sent
        raws = [m for m in raws if not (isinstance(m, dict) and m.get("role") == "exit")]
    messages, model = convert_messages(raws, ctx, f"{prefix}.messages")
    raw_info = doc.get("info")
    info = raw_info if isinstance(raw_info, dict) else {}
    metadata = {k: info[k] for k in ("exit_status",) if isinstance(info.get(k), str)}
    key = "tools" if "tools" in doc else "functions"  # a request log: the tools sent with the messages
    metadata.update(recorded_tools(doc.get(key), ctx, f"{prefix}.{key}"))
    if mini and "tools" not in metadata and any(c.name == "bash" for m in messages for c in m.tool_calls):
        metadata["tools"] = [MINI_SWE_AGENT_BASH_TOOL]  # a tool-calling run: what it sent, unrecorded
    return finish(ctx, tid, messages, ctx.source(_config_model(doc) or model), **metadata)


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    stem = source.path.stem.removesuffix(".traj")
    if source.kind == "json":
        doc = source.data
        if isinstance(doc, dict):
            return [_conversation(doc, stem, ctx, "$")]
        messages, model = convert_messages(doc, ctx, "$")
        return [finish(ctx, stem, messages, ctx.source(model))]
    rows = source.data
    if all(isinstance(v, dict) and isinstance(v.get("messages"), list) for _, v in rows):
        out = []
        for k, (line, doc) in enumerate(rows):
            name = as_str(doc.get("id")) or as_str(doc.get("instance_id")) or str(k)
            out.append(_conversation(doc, f"{stem}#{name}", ctx, f"line {line}:$"))
        return unique_ids(out)
    messages = []
    model = None
    for i, (line, raw) in enumerate(rows):
        message, m_model = convert_message(raw, i, ctx, f"line {line}")
        if message is not None:
            messages.append(message)
            model = model or m_model
    return [finish(ctx, stem, messages, ctx.source(model))]
