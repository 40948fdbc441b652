"""OpenHands V1 (software-agent-sdk) event histories: events tagged ``kind`` (``ActionEvent``, ...).

Read as the SDK's ``LLMConvertibleEvent.events_to_messages`` builds the prompt: ``SystemPromptEvent``
is the system message (its ``tools`` kept in ``metadata["tools"]``), ``MessageEvent.llm_message`` a
user/assistant message, consecutive ``ActionEvent``s of one ``llm_response_id`` one assistant message
(thought, reasoning and every ``tool_call``), ``ObservationEvent`` / ``AgentErrorEvent`` /
``UserRejectObservation`` a ``tool`` message (an error observation starts with the SDK's error header),
``CondensationSummaryEvent`` a user message. Internal events (state updates, token ids, pauses,
condensation requests) are skipped; ``Condensation`` events go to ``metadata["condensations"]``.

Accepted files: a conversation's events as a JSON list or JSONL (one event per line), or an evaluation
``output.jsonl`` whose rows hold them in ``history``. Per-call usage comes from the row's
``metrics.token_usages`` matched by ``response_id`` (the SDK's ``TokenUsage``).
"""

from __future__ import annotations

from typing import Any

from ctxbench.errors import InputError
from ctxbench.transcripts.formats._common import (
    ParseContext,
    Source,
    arguments_text,
    as_str,
    exception_text,
    finish,
    normalize_usage,
    rows_read,
    text_of,
    unique_ids,
)
from ctxbench.transcripts.model import Message, Role, ToolCall, Transcript

FORMAT = "openhands-v1"
ERROR_HEADER = "[An error occurred during execution.]\n"  # Observation.ERROR_MESSAGE_HEADER
KINDS = {
    "ActionEvent",
    "ObservationEvent",
    "MessageEvent",
    "SystemPromptEvent",
    "AgentErrorEvent",
    "UserRejectObservation",
    "CondensationSummaryEvent",
    "Condensation",
    "CondensationRequest",
    "ConversationStateUpdateEvent",
    "TokenEvent",
    "PauseEvent",
}


_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant"}


def is_event(item: Any) -> bool:
    return isinstance(item, dict) and item.get("kind") in KINDS


def _obj(container: dict[str, Any], key: str) -> dict[str, Any]:
    value = container.get(key)
    return value if isinstance(value, dict) else {}


def _usages(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``metrics.token_usages`` by ``response_id`` (an eval row's; a bare event list has none)."""
    raw = _obj(doc, "metrics").get("token_usages")
    items = raw if isinstance(raw, list) else []
    return {u["response_id"]: u for u in items if isinstance(u, dict) and as_str(u.get("response_id"))}


def _tool_call(event: dict[str, Any], where: str) -> ToolCall:
    call = _obj(event, "tool_call")
    call_id = as_str(event.get("tool_call_id")) or as_str(call.get("id")) or f"call_{where}"
    name = as_str(call.get("name")) or as_str(event.get("tool_name")) or ""
    arguments = call.get("arguments")
    if arguments is None:  # no tool_call copy: the parsed action is what was asked
        action = {k: v for k, v in _obj(event, "action").items() if k != "kind"}
        arguments = action
    return ToolCall(id=call_id, name=name, arguments=arguments_text(arguments))


def _observation_text(event: dict[str, Any], ctx: ParseContext, where: str) -> str:
    kind = event.get("kind")
    if kind == "AgentErrorEvent":
        return str(event.get("error") or "")
    if kind == "UserRejectObservation":
        return f"Action rejected: {event.get('rejection_reason') or ''}"
    observation = _obj(event, "observation")
    text = text_of(observation.get("content"), ctx, where)
    extended = text_of(event.get("extended_content"), ctx, where) if event.get("extended_content") else ""
    return (ERROR_HEADER if observation.get("is_error") else "") + text + extended


def _events(ev: list[tuple[str, Any]], tid: str, ctx: ParseContext, doc: dict[str, Any]) -> Transcript:
    messages: list[Message] = []
    usages = _usages(doc)
    tools: list[Any] = []
    condensations: list[dict[str, Any]] = []
    open_response: str | None = None  # the llm_response_id of the assistant message being filled
    for where, event in ev:
        if not isinstance(event, dict):
            ctx.warn(where, "skipped, not an event object")
            continue
        kind = event.get("kind")
        if kind != "ActionEvent":
            open_response = None
        if kind == "SystemPromptEvent":
            tools = event["tools"] if isinstance(event.get("tools"), list) else tools
            parts = [text_of([event.get("system_prompt")], ctx, where)]
            if isinstance(event.get("dynamic_context"), dict):
                parts.append(text_of([event["dynamic_context"]], ctx, where))
            messages.append(Message("system", "".join(parts)))
        elif kind == "MessageEvent":
            raw = _obj(event, "llm_message")
            named = raw.get("role") or ("user" if event.get("source") == "user" else "assistant")
            role: Role | None = _ROLES.get(named) if isinstance(named, str) else None
            if role is None:
                ctx.warn(where, f"skipped, message role {named!r}")
                continue
            text = text_of(raw.get("content"), ctx, where)
            if event.get("extended_content"):
                text += text_of(event["extended_content"], ctx, where)
            meta: dict[str, Any] = {}
            rid = as_str(event.get("llm_response_id"))
            if rid:
                meta["response_id"] = rid
                usage = normalize_usage(usages.get(rid))
                meta.update({"usage": usage} if usage else {})
            messages.append(Message(role, text, metadata=meta))
        elif kind == "ActionEvent":
            rid = as_str(event.get("llm_response_id"))
            call = _tool_call(event, where)
            if rid is not None and rid == open_response and messages and messages[-1].role == "assistant":
                last = messages[-1]
                messages[-1] = last.replace(tool_calls=(*last.tool_calls, call))
                continue
            open_response = rid
            meta = {"response_id": rid} if rid else {}
            usage = normalize_usage(usages.get(rid)) if rid else None
            meta.update({"usage": usage} if usage else {})
            if as_str(event.get("reasoning_content")):
                meta["reasoning"] = event["reasoning_content"]
            thought = text_of(event.get("thought") or [], ctx, where)
            messages.append(Message("assistant", thought, tool_calls=(call,), metadata=meta))
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            call_id = as_str(event.get("tool_call_id"))
            text = _observation_text(event, ctx, where)
            messages.append(Message("tool", text, tool_call_id=call_id, name=as_str(event.get("tool_name"))))
        elif kind == "CondensationSummaryEvent":
            messages.append(Message("user", str(event.get("summary") or "")))
        elif kind == "Condensation":
            forgotten = event.get("forgotten_event_ids")
            condensations.append(
                {
                    "at": len(messages),
                    "forgotten_event_ids": [str(i) for i in forgotten] if isinstance(forgotten, list) else [],
                    "summary": as_str(event.get("summary")),
                }
            )
        elif kind not in KINDS:
            ctx.warn(where, f"skipped, unknown event kind {kind!r}")
    extra: dict[str, Any] = {}
    if tools:
        extra["tools"] = tools
    if condensations:
        extra["condensations"] = condensations
    model = next((as_str(u.get("model")) for u in usages.values() if as_str(u.get("model"))), None)
    row_id = as_str(doc.get("instance_id"))
    source = ctx.source(model, **({"instance_id": row_id} if row_id else {}))
    return finish(ctx, tid, messages, source, error=as_str(doc.get("error")), **extra)


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    stem = source.path.stem
    if source.kind == "json":
        data = source.data
        if isinstance(data, list) and any(is_event(x) for x in data):  # one conversation's events
            return [_events([(f"$[{i}]", e) for i, e in enumerate(data)], stem, ctx, {})]
        docs = [(f"$[{i}]", d) for i, d in enumerate(data)] if isinstance(data, list) else [("$", data)]
    else:
        rows = source.data
        if any(is_event(v) for _, v in rows):  # a conversation's events, one per line
            return [_events([(f"line {n}", e) for n, e in rows], stem, ctx, {})]
        docs = [(f"line {n}:$", d) for n, d in rows]
    out: list[Transcript] = []
    failures: list[InputError] = []
    for k, (prefix, doc) in enumerate(docs):
        history = doc.get("history") if isinstance(doc, dict) else None
        if not isinstance(history, list):
            ctx.warn(prefix, "skipped, not an OpenHands V1 row (no history list)")
            continue
        row_id = as_str(doc.get("instance_id"))
        tid = f"{stem}#{row_id or k}" if len(docs) > 1 or row_id else stem
        try:
            events = [(f"{prefix}.history[{i}]", e) for i, e in enumerate(history)]
            out.append(_events(events, tid, ctx, doc))
        except Exception as exc:  # noqa: BLE001 - an unexpected shape loses this row, not the file
            failures.append(InputError(source.path, prefix, f"not an OpenHands V1 row ({exception_text(exc)})"))
    return unique_ids(rows_read(out, failures, ctx))
