"""OpenAI Codex CLI session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. ``response_item`` payloads are the conversation
as the Responses API saw it (messages with ``input_text`` / ``output_text`` parts, ``reasoning``,
``function_call`` such as ``shell`` / ``shell_command`` / ``exec_command``, freeform
``custom_tool_call`` such as ``apply_patch``, ``local_shell_call``, and their outputs), read by
``openai.convert_messages``. An ``event_msg`` of type ``token_count`` follows each model response:
its ``info.last_token_usage`` (``input_tokens``, with ``cached_input_tokens`` among them, and
``output_tokens``) is that call's usage, kept on the response's last assistant message.
``turn_context`` names the model. Other events repeat what the response items hold (the user's and
agent's messages) or are the UI's, and are skipped; a ``compacted`` line (Codex's own compaction)
leaves the recorded items as they are: the replay compacts them itself.
"""

from __future__ import annotations

from typing import Any

from ctxbench.transcripts.formats._common import ParseContext, Source, as_str, finish, normalize_usage
from ctxbench.transcripts.formats.openai import convert_messages
from ctxbench.transcripts.model import Message, Transcript

FORMAT = "codex"
LINE_TYPES = frozenset(("session_meta", "response_item", "event_msg", "turn_context", "compacted"))


def is_rollout_line(value: Any) -> bool:
    """A Codex rollout line: a known ``type`` with a ``payload`` object."""
    return isinstance(value, dict) and value.get("type") in LINE_TYPES and isinstance(value.get("payload"), dict)


def call_usage(payload: dict[str, Any]) -> dict[str, int | None] | None:
    """A ``token_count`` event's usage of the call it follows (None when it carries none)."""
    info = payload.get("info")
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None
    return normalize_usage(
        {
            "prompt_tokens": last.get("input_tokens"),
            "completion_tokens": last.get("output_tokens"),
            "total_tokens": last.get("total_tokens"),
            "prompt_tokens_details": {"cached_tokens": last.get("cached_input_tokens")},
        }
    )


def _with_usage(messages: list[Message], usage: dict[str, int | None]) -> None:
    """The usage onto the last assistant message of one response's messages."""
    for k in range(len(messages) - 1, -1, -1):
        if messages[k].role == "assistant":
            messages[k] = messages[k].replace(metadata={**messages[k].metadata, "usage": usage})
            return


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    rows = source.data if source.kind == "jsonl" else []
    messages: list[Message] = []
    response: list[Any] = []  # the response items since the last token count
    first_line: int | None = None
    model: str | None = None
    session: str | None = None
    for line, value in rows:
        if not is_rollout_line(value):
            ctx.warn(f"line {line}", "skipped, not a Codex rollout line (type and payload)")
            continue
        kind, payload = value["type"], value["payload"]
        if kind == "session_meta":
            session = session or as_str(payload.get("id"))
        elif kind == "turn_context":
            model = model or as_str(payload.get("model"))
        elif kind == "response_item":
            first_line = line if not response else first_line
            response.append(payload)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            usage = call_usage(payload)
            if response:
                converted, _ = convert_messages(response, ctx, f"lines {first_line}-{line}")
                if usage:
                    _with_usage(converted, usage)
                messages += converted
                response = []
    if response:
        converted, _ = convert_messages(response, ctx, f"lines {first_line}-")
        messages += converted
    stem = source.path.stem
    return [finish(ctx, session or stem, messages, ctx.source(model))]
