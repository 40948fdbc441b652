"""OpenHands evaluation ``output.jsonl``: one instance per line, ``history`` an event stream.

Outputs from before about Oct 2024 hold ``history`` as ``[action, observation]`` pairs: each pair is read
as its two events in the flat stream (a pair's ``null`` placeholder observation is skipped, as in the
flat form). The row's id is ``instance_id``, or ``question_id`` (Gorilla and other older benchmarks).

Events become messages as OpenHands' own ``ConversationMemory`` (v0.35) builds the prompt: the system
action and user message actions become system/user messages; an action carrying ``tool_call_metadata``
stands for one model response, which becomes one assistant message with all of that response's tool
calls, its reasoning and its reported usage (several actions from one response share it, so it is
emitted once); an observation with ``tool_call_metadata`` becomes a ``tool`` message; other
observations (errors) become user messages. Bookkeeping events (state changes, recall requests) are
skipped.

Observations are the text OpenHands sent: a command's output with the lines
``CmdOutputObservation.to_agent_observation()`` adds, cut in the middle by ``truncate_content`` to the
run's ``llm_config.max_message_chars`` (OpenHands' default, 30,000, when the run does not say; file
reads are not cut, as in OpenHands). Recalled workspace context is sent only with prompt extensions on:
evaluation outputs (``instance_id`` with ``instance``/``test_result``) ran with them off, as OpenHands'
SWE-bench harness sets, unless ``metadata.agent_config`` says otherwise. A text-only reply's usage comes
from ``metrics.token_usages`` (the response ids no tool call claimed, in order). Condensation events
are kept in ``metadata["condensations"]`` (which messages they forgot, the summary and its offset).
The system event's tool schemas are kept in ``metadata["tools"]``; when the run's model had no native
function calling in OpenHands (``openhands_fncall``), ``metadata["tools_rendering"]`` says how the
tools were written into the prompt instead.
"""

from __future__ import annotations

from typing import Any

from ctxbench.errors import InputError
from ctxbench.transcripts import openhands_fncall
from ctxbench.transcripts.formats._common import (
    ParseContext,
    Source,
    as_str,
    exception_text,
    finish,
    normalize_usage,
    openai_tool_calls,
    recorded_tools,
    rows_read,
    text_of,
    unique_ids,
)
from ctxbench.transcripts.model import Message, Role, Transcript
from ctxbench.transcripts.tool_schemas import RENDERING_KEY

FORMAT = "openhands"
_SKIP_ACTIONS = {"recall", "change_agent_state", "null", "condensation", "condensation_request"}
_SKIP_OBSERVATIONS = {"agent_state_changed", "null"}
DEFAULT_MAX_MESSAGE_CHARS = 30_000  # LLMConfig.max_message_chars in OpenHands v0.35
TRUNCATION_NOTE = "\n[... Observation truncated due to length ...]\n"
# Observations OpenHands sends whole (FileReadObservation: "already truncated by openhands-aci").
_NOT_TRUNCATED = {"read", "browse", "browse_interactive"}


def _obj(container: dict[str, Any], key: str) -> dict[str, Any]:
    """``container[key]`` when it is an object, else {} (a missing or malformed field reads as empty)."""
    value = container.get(key)
    return value if isinstance(value, dict) else {}


def truncate_content(content: str, max_chars: int | None) -> str:
    """OpenHands' ``truncate_content``: keep the first and last ``max_chars // 2`` characters."""
    if max_chars is None or max_chars < 0 or len(content) <= max_chars:
        return content
    half = max_chars // 2
    return content[:half] + TRUNCATION_NOTE + content[-half:]


def _event_id(event: dict[str, Any]) -> int | None:
    value = event.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _observation_text(event: dict[str, Any], observation: str, tcm: Any, max_chars: int | None) -> str:
    """The text ``ConversationMemory._process_observation`` puts into the prompt for one observation."""
    content = str(event.get("content") or "")
    extras = _obj(event, "extras")
    if observation == "run":
        meta = _obj(extras, "metadata")
        text = f"{meta.get('prefix') or ''}{content}{meta.get('suffix') or ''}"
        if meta.get("working_dir"):
            text += f"\n[Current working directory: {meta['working_dir']}]"
        if meta.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
        exit_code = meta.get("exit_code", -1)
        if exit_code is not None and exit_code != -1:
            text += f"\n[Command finished with exit code {exit_code}]"
        if not tcm:
            text = f"\nObserved result of command executed by user:\n{text}"
        return truncate_content(text, max_chars)
    if observation in _NOT_TRUNCATED:
        return content
    if observation == "run_ipython":
        lines = [
            "![image](data:image/png;base64, ...) already displayed to user"
            if "![image](data:image/png;base64," in line
            else line
            for line in content.split("\n")
        ]
        return truncate_content("\n".join(lines), max_chars)
    if observation == "error":
        return truncate_content(content, max_chars) + "\n[Error occurred in processing last action]"
    if observation == "user_rejected":
        return f"OBSERVATION:\n{truncate_content(content, max_chars)}\n[Last action has been rejected by the user]"
    return truncate_content(content, max_chars)


def _recall_text(event: dict[str, Any]) -> str:
    """Recalled workspace context as OpenHands' ``additional_info.j2`` and ``microagent_info.j2`` render it."""
    extras = _obj(event, "extras")
    parts: list[str] = []
    repo_name, repo_dir = extras.get("repo_name") or "", extras.get("repo_directory") or ""
    hosts = _obj(extras, "runtime_hosts")
    more = extras.get("additional_agent_instructions") or ""
    if repo_name or repo_dir:
        parts.append(
            f"<REPOSITORY_INFO>\nAt the user's request, repository {repo_name} has been cloned to the current "
            f"working directory {repo_dir}.\n</REPOSITORY_INFO>"
        )
    if extras.get("repo_instructions"):
        parts.append(f"<REPOSITORY_INSTRUCTIONS>\n{extras['repo_instructions']}\n</REPOSITORY_INSTRUCTIONS>")
    if hosts or more:
        runtime = ["<RUNTIME_INFORMATION>"]
        if hosts:
            runtime.append(
                "The user has access to the following hosts for accessing a web application,\n"
                "each of which has a corresponding port:"
            )
            runtime += [f"* {host} (port {port})" for host, port in hosts.items()]
            runtime.append(
                "When starting a web server, use the corresponding ports. You should also\n"
                "set any options to allow iframes and CORS requests, and allow the server to\n"
                "be accessed from any host (e.g. 0.0.0.0).\n"
                "For example, if you are using vite.config.js, you should set server.host and "
                "server.allowedHosts to true"
            )
        if more:
            runtime.append(str(more))
        if extras.get("date"):
            runtime.append(f"Today's date is {extras['date']} (UTC).")
        parts.append("\n".join([*runtime, "</RUNTIME_INFORMATION>"]))
    for item in extras.get("microagent_knowledge") or []:
        if isinstance(item, dict) and item.get("content"):
            parts.append(
                f"<EXTRA_INFO>\nThe following information has been included based on a keyword match for "
                f'"{item.get("trigger", "")}".\nIt may or may not be relevant to the user\'s request.\n\n'
                f"{item['content']}\n</EXTRA_INFO>"
            )
    return "\n\n".join(parts)


def _response_message(metadata: dict[str, Any], ctx: ParseContext, where: str) -> tuple[Message, str | None]:
    response = _obj(metadata, "model_response")
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    raw = _obj(first, "message")
    calls = openai_tool_calls(raw.get("tool_calls"), f"call_{response.get('id', 'x')}", ctx, where)
    meta: dict[str, Any] = {}
    usage = normalize_usage(response.get("usage"))
    if usage:
        meta["usage"] = usage
    reasoning = raw.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        meta["reasoning"] = reasoning
    message = Message("assistant", text_of(raw.get("content"), ctx, where), tool_calls=calls, metadata=meta)
    return message, as_str(response.get("model"))


def _prompt_extensions(doc: dict[str, Any]) -> bool:
    """Whether recalled workspace context reached the prompt (``AgentConfig.enable_prompt_extensions``)."""
    meta = _obj(doc, "metadata")
    agent_config = meta.get("agent_config")
    if isinstance(agent_config, dict) and isinstance(agent_config.get("enable_prompt_extensions"), bool):
        return agent_config["enable_prompt_extensions"]
    # OpenHands' SWE-bench-style harnesses build AgentConfig(enable_prompt_extensions=False).
    return not ("instance_id" in doc and ("instance" in doc or "test_result" in doc))


def _max_message_chars(doc: dict[str, Any]) -> int | None:
    meta = _obj(doc, "metadata")
    llm = _obj(meta, "llm_config")
    value = llm.get("max_message_chars", DEFAULT_MAX_MESSAGE_CHARS)
    if value is None:  # configured off: OpenHands then sends observations whole
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_MAX_MESSAGE_CHARS


def _token_usages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    metrics = _obj(doc, "metrics")
    usages = metrics.get("token_usages")
    return [u for u in usages if isinstance(u, dict)] if isinstance(usages, list) else []


def _condensation(event: dict[str, Any], at: int, message_of_event: dict[int, list[int]]) -> dict[str, Any]:
    """A CondensationAction: which messages it made OpenHands forget, and the summary it inserted."""
    args = _obj(event, "args")
    forgotten_ids = [i for i in args.get("forgotten_event_ids") or [] if isinstance(i, int)]
    start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
    if isinstance(start, int) and isinstance(end, int):
        forgotten_ids += range(start, end + 1)
    forgotten = sorted({m for e in forgotten_ids for m in message_of_event.get(e, [])})
    offset = args.get("summary_offset")
    return {
        "at": at,
        "forgotten": forgotten,
        "summary": as_str(args.get("summary")),
        "summary_offset": offset if isinstance(offset, int) else None,
    }


def _flat_events(history: list[Any], prefix: str) -> list[tuple[str, Any]]:
    """``(place, event)`` in order: outputs from before about Oct 2024 hold ``[action, observation]``
    pairs, newer ones the events themselves; a pair's events are read as two events of the flat list."""
    out: list[tuple[str, Any]] = []
    for i, item in enumerate(history):
        if isinstance(item, list):
            out += [(f"{prefix}.history[{i}][{j}]", event) for j, event in enumerate(item)]
        else:
            out.append((f"{prefix}.history[{i}]", item))
    return out


def _row_id(doc: dict[str, Any]) -> str | None:
    """The row's id: ``instance_id``, or ``question_id`` (Gorilla and other older benchmarks)."""
    for key in ("instance_id", "question_id"):
        value = doc.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if as_str(value):
            return str(value)
    return None


def _instance(events: list[Any], tid: str, ctx: ParseContext, prefix: str, meta: dict[str, Any]) -> Transcript:
    messages: list[Message] = []
    seen_responses: set[str] = set()
    model: str | None = None
    max_chars = _max_message_chars(meta)
    extensions = _prompt_extensions(meta)
    message_of_event: dict[int, list[int]] = {}
    condensations: list[dict[str, Any]] = []
    untold: list[int] = []  # assistant messages without usage in their event (text-only replies)
    tools: dict[str, Any] = {}  # the system event's tool schemas (OpenHands >= 0.35 records them)
    version: str | None = None  # the system event's openhands_version

    def add(message: Message, event_id: int | None) -> None:
        if event_id is not None:
            message_of_event.setdefault(event_id, []).append(len(messages))
        messages.append(message)

    for i, (where, event) in enumerate(_flat_events(events, prefix)):
        if not isinstance(event, dict):
            ctx.warn(where, "skipped, not an event object")
            continue
        raw_tcm = event.get("tool_call_metadata")
        tcm = raw_tcm if isinstance(raw_tcm, dict) else None
        args = _obj(event, "args")
        event_id = _event_id(event)
        event_meta = {"event_id": event_id} if event_id is not None else {}
        if isinstance(event.get("timestamp"), str):  # when it was sent: the prompt cache's expiry
            event_meta["timestamp"] = event["timestamp"]
        if "action" in event:
            action = event["action"]
            if action == "condensation":
                condensations.append(_condensation(event, len(messages), message_of_event))
            if action in _SKIP_ACTIONS:
                continue
            if tcm:
                response_id = str(_obj(tcm, "model_response").get("id") or f"event{i}")
                if response_id in seen_responses:
                    if event_id is not None and messages:  # the same response's message
                        message_of_event.setdefault(event_id, []).append(
                            next(k for k in range(len(messages) - 1, -1, -1) if messages[k].role == "assistant")
                        )
                    continue  # another action of a response already emitted
                seen_responses.add(response_id)
                message, m_model = _response_message(tcm, ctx, where)
                meta_out = {**message.metadata, **event_meta, "response_id": response_id}
                if "usage" not in message.metadata:
                    untold.append(len(messages))
                add(message.replace(metadata=meta_out), event_id)
                model = model or m_model
            elif action == "system":
                tools = tools or recorded_tools(args.get("tools"), ctx, f"{where}.args.tools")
                version = version or as_str(args.get("openhands_version"))
                add(Message("system", text_of(args.get("content"), ctx, where), metadata=event_meta), event_id)
            else:  # user/agent messages, and agent actions made without a tool call
                text = args.get("content") or args.get("thought") or args.get("final_thought") or event.get("message")
                role: Role = "user" if event.get("source") == "user" else "assistant"
                if role == "assistant":
                    untold.append(len(messages))
                add(Message(role, text_of(text, ctx, where), metadata=event_meta), event_id)
        elif "observation" in event:
            observation = event["observation"]
            if observation in _SKIP_OBSERVATIONS:
                continue
            if observation == "recall":
                recalled = _recall_text(event) if extensions else ""
                if recalled:  # OpenHands sends no message when there is nothing to add
                    add(Message("user", recalled, metadata=event_meta), event_id)
                continue
            text_of(event.get("content"), ctx, where)  # reports non-text content
            content = _observation_text(event, str(observation), tcm, max_chars)
            if tcm:
                tool = Message(
                    "tool",
                    content,
                    tool_call_id=as_str(tcm.get("tool_call_id")),
                    name=as_str(tcm.get("function_name")),
                    metadata=event_meta,
                )
                add(tool, event_id)
            else:
                add(Message("user", content, metadata=event_meta), event_id)
    messages = _fill_usage(messages, untold, _token_usages(meta))
    messages = _separate_user_messages(messages)
    llm = _obj(meta, "metadata").get("llm_config")
    config_model = as_str(llm.get("model")) if isinstance(llm, dict) else None
    metrics = _obj(meta, "metrics")
    totals = normalize_usage(metrics.get("accumulated_token_usage")) or {}
    agent = _obj(meta, "metadata").get("agent_class")
    source = ctx.source(config_model or model, instance_id=_row_id(meta), agent=as_str(agent))
    extra: dict[str, Any] = {"condensations": condensations} if condensations else {}
    extra.update(tools)
    if tools:
        how = _tools_rendering(llm if isinstance(llm, dict) else {}, config_model or model, version)
        extra.update({RENDERING_KEY: how} if how else {})
    return finish(ctx, tid, messages, source, accumulated_usage=totals, error=as_str(meta.get("error")), **extra)


def _tools_rendering(llm_config: dict[str, Any], model: str | None, version: str | None) -> str | None:
    """How the run sent its tools: None for native ``tools``, else OpenHands' mock function calling."""
    if model is None:  # no model recorded: nothing to decide from, keep the native JSON
        return None
    native = llm_config.get("native_tool_calling")
    return openhands_fncall.rendering(model, native if isinstance(native, bool) else None, version)


def _fill_usage(messages: list[Message], untold: list[int], usages: list[dict[str, Any]]) -> list[Message]:
    """Usage for calls whose event does not carry it, from ``metrics.token_usages``: by response id,
    else the usages no recorded response claimed, in order (a text-only reply has no tool call)."""
    if not untold or not usages:
        return messages
    claimed = {m.metadata.get("response_id") for m in messages if m.role == "assistant" and "usage" in m.metadata}
    by_id = {u["response_id"]: u for u in usages if as_str(u.get("response_id"))}
    spare = [u for u in usages if u.get("response_id") not in claimed]
    out = list(messages)
    for index in untold:
        rid = out[index].metadata.get("response_id")
        usage = by_id.get(rid) if rid else None
        if usage is None and spare:
            usage = spare.pop(0)
        elif usage is not None and usage in spare:
            spare.remove(usage)
        normalized = normalize_usage(usage) if usage else None
        if normalized:
            out[index] = out[index].replace(metadata={**out[index].metadata, "usage": normalized})
    return out


def _separate_user_messages(messages: list[Message]) -> list[Message]:
    """OpenHands puts a blank line before a user message that follows another user message."""
    out = list(messages)
    for k in range(1, len(out)):
        if out[k].role == "user" and out[k - 1].role == "user" and out[k].content:
            out[k] = out[k].replace(content="\n\n" + out[k].content)
    return out


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    stem = source.path.stem
    if source.kind == "json":
        doc = source.data
        if isinstance(doc, list) and doc and not (isinstance(doc[0], dict) and "history" in doc[0]):  # bare events
            return [_instance(doc, stem, ctx, "$", {})]
        docs = [(f"$[{i}]", d) for i, d in enumerate(doc)] if isinstance(doc, list) else [("$", doc)]
    else:
        docs = [(f"line {n}:$", d) for n, d in source.data]
    out = []
    failures: list[InputError] = []
    for k, (prefix, doc) in enumerate(docs):
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            ctx.warn(prefix, "skipped, not an OpenHands instance (no history list)")
            continue
        row_id = _row_id(doc)
        tid = f"{stem}#{row_id or k}" if len(docs) > 1 or row_id else stem
        try:
            out.append(_instance(doc["history"], tid, ctx, prefix, doc))
        except Exception as exc:  # noqa: BLE001 - a shape no parser expects: this row is lost, not the file
            failures.append(InputError(source.path, prefix, f"not an OpenHands instance ({exception_text(exc)})"))
    return unique_ids(rows_read(out, failures, ctx))
