"""OpenHands evaluation ``output.jsonl``: one instance per line, ``history`` an event stream.

Events become messages roughly as OpenHands' own ConversationMemory does: the system action and
user message actions become system/user messages; an action carrying ``tool_call_metadata`` stands
for one model response, which becomes one assistant message with all of that response's tool calls
and its reported usage (several actions from one response share it, so it is emitted once); an
observation with ``tool_call_metadata`` becomes a ``tool`` message; other observations (errors,
recalled workspace context) become user messages. Bookkeeping events (state changes, recall
requests) are skipped.
"""

from __future__ import annotations

from typing import Any

from ctxbench.transcripts.formats._common import (
    ParseContext,
    Source,
    as_str,
    finish,
    normalize_usage,
    openai_tool_calls,
    text_of,
    unique_ids,
)
from ctxbench.transcripts.model import Message, Transcript

FORMAT = "openhands"
_SKIP_ACTIONS = {"recall", "change_agent_state", "null"}
_SKIP_OBSERVATIONS = {"agent_state_changed", "null"}


def _recall_text(event: dict[str, Any]) -> str:
    """Workspace context recalled for the model: the parts OpenHands puts into the prompt."""
    extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
    parts = [str(extras[k]) for k in ("repo_instructions", "additional_agent_instructions") if extras.get(k)]
    if extras.get("date"):
        parts.append(f"Today's date is {extras['date']}")
    for item in extras.get("microagent_knowledge") or []:
        if isinstance(item, dict) and item.get("content"):
            parts.append(
                f"<EXTRA_INFO>\nThe following information has been included based on a keyword match for "
                f'"{item.get("trigger", "")}".\n{item["content"]}\n</EXTRA_INFO>'
            )
    return "\n\n".join(parts) or str(event.get("content") or "")


def _response_message(metadata: dict[str, Any], ctx: ParseContext, where: str) -> tuple[Message, str | None]:
    response = metadata.get("model_response") or {}
    choices = response.get("choices") or [{}]
    raw = choices[0].get("message") or {} if isinstance(choices[0], dict) else {}
    calls = openai_tool_calls(raw.get("tool_calls"), f"call_{response.get('id', 'x')}", ctx, where)
    meta: dict[str, Any] = {}
    usage = normalize_usage(response.get("usage"))
    if usage:
        meta["usage"] = usage
    message = Message("assistant", text_of(raw.get("content"), ctx, where), tool_calls=calls, metadata=meta)
    return message, as_str(response.get("model"))


def _instance(events: list[Any], tid: str, ctx: ParseContext, prefix: str, meta: dict[str, Any]) -> Transcript:
    messages: list[Message] = []
    seen_responses: set[str] = set()
    model: str | None = None
    for i, event in enumerate(events):
        where = f"{prefix}.history[{i}]"
        if not isinstance(event, dict):
            ctx.warn(where, "skipped, not an event object")
            continue
        tcm = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else None
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        event_meta = {"event_id": event["id"]} if isinstance(event.get("id"), int) else {}
        if "action" in event:
            action = event["action"]
            if action in _SKIP_ACTIONS:
                continue
            if tcm:
                response_id = str((tcm.get("model_response") or {}).get("id") or f"event{i}")
                if response_id in seen_responses:
                    continue  # another action of a response already emitted
                seen_responses.add(response_id)
                message, m_model = _response_message(tcm, ctx, where)
                messages.append(message.replace(metadata={**message.metadata, **event_meta}))
                model = model or m_model
            elif action == "system":
                messages.append(Message("system", text_of(args.get("content"), ctx, where), metadata=event_meta))
            else:  # user/agent messages, and agent actions made without a tool call
                text = args.get("content") or args.get("thought") or args.get("final_thought") or event.get("message")
                role = "user" if event.get("source") == "user" else "assistant"
                messages.append(Message(role, text_of(text, ctx, where), metadata=event_meta))
        elif "observation" in event:
            observation = event["observation"]
            if observation in _SKIP_OBSERVATIONS:
                continue
            if observation == "recall":
                messages.append(Message("user", _recall_text(event), metadata=event_meta))
                continue
            content = text_of(event.get("content"), ctx, where)
            extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
            cmd_meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
            content = f"{cmd_meta.get('prefix') or ''}{content}{cmd_meta.get('suffix') or ''}"
            if tcm:
                messages.append(
                    Message(
                        "tool",
                        content,
                        tool_call_id=as_str(tcm.get("tool_call_id")),
                        name=as_str(tcm.get("function_name")),
                        metadata=event_meta,
                    )
                )
            else:
                if observation == "error":
                    content += "\n[Error occurred in processing last action]"
                messages.append(Message("user", content, metadata=event_meta))
    llm = (meta.get("metadata") or {}).get("llm_config") if isinstance(meta.get("metadata"), dict) else None
    config_model = as_str(llm.get("model")) if isinstance(llm, dict) else None
    metrics = meta.get("metrics") if isinstance(meta.get("metrics"), dict) else {}
    totals = normalize_usage(metrics.get("accumulated_token_usage")) or {}
    agent = (meta.get("metadata") or {}).get("agent_class") if isinstance(meta.get("metadata"), dict) else None
    source = ctx.source(config_model or model, instance_id=as_str(meta.get("instance_id")), agent=as_str(agent))
    return finish(ctx, tid, messages, source, accumulated_usage=totals, error=as_str(meta.get("error")))


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    stem = source.path.stem
    if source.kind == "json":
        doc = source.data
        if isinstance(doc, list) and doc and "history" not in doc[0]:  # a bare event list
            return [_instance(doc, stem, ctx, "$", {})]
        docs = [(f"$[{i}]", d) for i, d in enumerate(doc)] if isinstance(doc, list) else [("$", doc)]
    else:
        docs = [(f"line {n}:$", d) for n, d in source.data]
    out = []
    for k, (prefix, doc) in enumerate(docs):
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            ctx.warn(prefix, "skipped, not an OpenHands instance (no history list)")
            continue
        name = as_str(doc.get("instance_id")) or str(k)
        tid = f"{stem}#{name}" if len(docs) > 1 or doc.get("instance_id") else stem
        out.append(_instance(doc["history"], tid, ctx, prefix, doc))
    return unique_ids(out)
