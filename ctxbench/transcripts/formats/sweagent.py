"""SWE-agent ``.traj`` files: ``history`` (the real messages) and/or ``trajectory`` (steps).

``history`` is preferred: it holds what the model saw, with roles, ``tool_calls`` and
``tool_call_ids`` (function-calling agents) or thought+action text (older agents). Only when it is
missing are messages rebuilt from ``trajectory`` steps (response, then observation). Token counts in
``info.model_stats`` are totals, not per call, so they go to the transcript metadata, not to usage.

Older agents send a command's output as the next user message: each such message (a user message right
after an assistant message with an ``action`` and no tool calls, or a rebuilt step's observation) is
marked ``metadata["observation_of"]`` = the action (``transcripts.model.OBSERVATION_OF``), so layers that
work on tool results (five_layer's strategies 1 and 2) see it as the tool result it is. The message
stays a user message: that is what the model was sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ctxbench.errors import InputError
from ctxbench.transcripts.formats._common import (
    ParseContext,
    Source,
    as_str,
    exception_text,
    finish,
    normalize_usage,
    openai_tool_calls,
    rows_read,
    text_of,
)
from ctxbench.transcripts.model import OBSERVATION_OF, Message, Transcript

FORMAT = "swe-agent"


def _model_name(doc: dict[str, Any]) -> str | None:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            return None
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    return as_str(model.get("name")) if isinstance(model, dict) else None


def _history_message(raw: Any, i: int, ctx: ParseContext, prefix: str = "$") -> Message | None:
    where = f"{prefix}.history[{i}]"
    if not isinstance(raw, dict) or raw.get("role") not in ("system", "user", "assistant", "tool"):
        ctx.warn(where, "skipped, not a history message")
        return None
    role = raw["role"]
    content = text_of(raw.get("content"), ctx, where)
    # Older agents keep the text only in thought/action; a function-calling response's action is
    # its tool call, so it is not made into text as well (that counted every action twice).
    if role == "assistant" and not content and not raw.get("tool_calls") and (raw.get("thought") or raw.get("action")):
        content = "\n".join(str(raw.get(k) or "") for k in ("thought", "action")).strip()
    metadata: dict[str, Any] = {}
    for key in ("message_type", "agent"):
        if as_str(raw.get(key)):
            metadata[key] = raw[key]
    if raw.get("is_demo"):
        metadata["is_demo"] = True
    if role == "assistant":
        calls = openai_tool_calls(raw.get("tool_calls"), f"call_{i}", ctx, where)
        usage = normalize_usage(raw.get("usage"))
        if usage:
            metadata["usage"] = usage
        return Message("assistant", content, tool_calls=calls, metadata=metadata)
    if role == "tool":
        ids = raw.get("tool_call_ids") or []
        call_id = as_str(raw.get("tool_call_id")) or (ids[0] if ids and isinstance(ids[0], str) else None)
        return Message("tool", content, tool_call_id=call_id, metadata=metadata)
    return Message(role, content, metadata=metadata)


_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)


def fenced_action(text: str) -> str | None:
    """The command of an older SWE-agent response written as text (``DISCUSSION ... ```cmd```; the
    nebius/SWE-agent-trajectories rows): its last fenced block."""
    blocks = _FENCE.findall(text)
    return (blocks[-1].strip() or None) if blocks else None


def mark_observations(messages: Sequence[Message], action_of: Callable[[Message], str | None]) -> list[Message]:
    """Each user message right after an assistant message without tool calls whose action ``action_of``
    names, marked as the observation of that action (``OBSERVATION_OF``)."""
    out: list[Message] = []
    action = None
    for message in messages:
        if message.role == "user" and action:
            message = message.replace(metadata={**message.metadata, OBSERVATION_OF: action})
        action = action_of(message) if message.role == "assistant" and not message.tool_calls else None
        out.append(message)
    return out


def _text_action(raw: dict[str, Any]) -> str | None:
    """The command an older agent's assistant message ran (its ``action``), if it names one."""
    return (as_str(raw.get("action")) or "").strip() or None


def _from_trajectory(steps: list[Any], ctx: ParseContext, prefix: str = "$") -> list[Message]:
    messages: list[Message] = []
    missing: dict[str, list[int]] = {"response": [], "observation": []}
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            ctx.warn(f"{prefix}.trajectory[{i}]", "skipped, not a step object")
            continue
        response = text_of(step.get("response"), ctx, f"{prefix}.trajectory[{i}]")
        if not response:
            response = "\n".join(str(step.get(k) or "") for k in ("thought", "action")).strip()
        if not any(k in step for k in ("response", "thought", "action")):
            missing["response"].append(i)
        if "observation" not in step:
            missing["observation"].append(i)
        messages.append(Message("assistant", response, metadata={"from": "trajectory"}))
        observation = text_of(step.get("observation"), ctx, f"{prefix}.trajectory[{i}]")
        action = (as_str(step.get("action")) or "").strip()
        messages.append(Message("user", observation, metadata={OBSERVATION_OF: action} if action else {}))
    for key, places in missing.items():
        if places:
            what = "response, thought or action" if key == "response" else key
            ctx.warn(
                f"{prefix}.trajectory[{places[0]}]",
                f"{len(places)} step(s) without {what} (first one here); read as empty {key}",
            )
    return messages


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    """One ``.traj`` object; or, in a JSON list or JSONL, one trajectory per row (``stem#row``)."""
    stem = source.path.stem
    if source.kind == "json" and isinstance(source.data, dict):
        return [_trajectory(source.data, stem, ctx, "$")]
    if source.kind == "json":
        rows = [(f"$[{k}]", doc) for k, doc in enumerate(source.data if isinstance(source.data, list) else [])]
    else:
        rows = [(f"line {n}:$", doc) for n, doc in source.data]
    if not rows:
        raise InputError(source.path, None, "not a SWE-agent trajectory (neither an object nor a list of them)")
    out: list[Transcript] = []
    failures: list[InputError] = []
    for k, (prefix, doc) in enumerate(rows):
        if not isinstance(doc, dict):
            failures.append(InputError(source.path, prefix, f"not a SWE-agent trajectory (a {type(doc).__name__})"))
            continue
        try:
            out.append(_trajectory(doc, f"{stem}#{k}", ctx, prefix))
        except Exception as exc:  # noqa: BLE001 - a shape no parser expects: this row is lost, not the file
            failures.append(InputError(source.path, prefix, f"not a SWE-agent trajectory ({exception_text(exc)})"))
    return rows_read(out, failures, ctx)


def _trajectory(doc: dict[str, Any], tid: str, ctx: ParseContext, prefix: str) -> Transcript:
    history = doc.get("history")
    if isinstance(history, list) and history:
        read = [(m, raw) for i, raw in enumerate(history) if (m := _history_message(raw, i, ctx, prefix))]
        actions = {id(m): _text_action(raw) for m, raw in read}  # older agents' text actions
        messages = mark_observations([m for m, _ in read], lambda m: actions.get(id(m)))
    else:
        steps = doc.get("trajectory")
        messages = _from_trajectory(steps if isinstance(steps, list) else [], ctx, prefix)
    raw_info = doc.get("info")
    info = raw_info if isinstance(raw_info, dict) else {}
    raw_stats = info.get("model_stats")
    stats = raw_stats if isinstance(raw_stats, dict) else {}
    metadata = {
        "exit_status": as_str(info.get("exit_status")),
        "model_stats": {k: v for k, v in stats.items() if isinstance(v, int | float)},
    }
    agent = next((m.metadata["agent"] for m in messages if "agent" in m.metadata), None)
    return finish(ctx, tid, messages, ctx.source(_model_name(doc), agent=agent), **metadata)
