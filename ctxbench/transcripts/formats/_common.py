"""Shared pieces for the importers: the parse context, text extraction, usage, tool-call linking.

Every importer turns one source file into canonical ``Transcript`` objects. Problems that lose
nothing essential (a bad JSONL line, an image, a tool result without its call) are reported as
``TranscriptWarning`` naming ``file:place`` and the import goes on; problems that make the file
unreadable raise ``InputError``.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ctxbench.errors import InputError
from ctxbench.transcripts.model import Message, ToolCall, Transcript
from ctxbench.transcripts.tool_schemas import TOOLS_KEY, valid_tools

IMAGE_PLACEHOLDER = "[image omitted]"


class TranscriptWarning(UserWarning):
    """Something in a source file was skipped or replaced; the message names ``file:place``."""


@dataclass
class Source:
    """One source file, decoded and parsed: ``data`` is the JSON document, or for JSONL a list of
    ``(line_number, value)`` pairs, or None for plain text."""

    path: Path
    text: str
    kind: Literal["json", "jsonl", "text"]
    data: Any = None


@dataclass
class ParseContext:
    """The file being imported, and counters for problems reported once per file (not per block)."""

    path: Path
    fmt: str
    _replaced: Counter[str] = field(default_factory=Counter)
    _repaired: Counter[str] = field(default_factory=Counter)
    _first_place: dict[str, str] = field(default_factory=dict)

    def warn(self, where: str | None, problem: str) -> None:
        location = ":".join(p for p in (str(self.path), where) if p)
        warnings.warn(f"{location}: {problem}", TranscriptWarning, stacklevel=3)

    def replaced(self, kind: str, where: str) -> None:
        """Count a non-text block (image, document, ...) replaced by a placeholder."""
        self._replaced[kind] += 1
        self._first_place.setdefault(kind, where)

    def repaired(self, what: str, where: str) -> None:
        """Count a repair reported once per file as ``N <what> (first one here)``."""
        self._repaired[what] += 1
        self._first_place.setdefault(what, where)

    def flush(self) -> None:
        for kind, n in sorted(self._replaced.items()):
            self.warn(self._first_place[kind], f"{n} {kind} block(s) replaced by placeholder text (first one here)")
        for what, n in sorted(self._repaired.items()):
            self.warn(self._first_place[what], f"{n} {what} (first one here)")
        self._replaced.clear()
        self._repaired.clear()
        self._first_place.clear()

    def source(self, model: str | None = None, **extra: Any) -> dict[str, Any]:
        return {"format": self.fmt, "path": str(self.path), "model": model or None, **extra}


# --- text --------------------------------------------------------------------------------------------

_TEXT_KEYS = ("text", "input_text", "output_text", "refusal")
_IMAGE_TYPES = {"image", "image_url", "input_image", "document", "file", "input_file", "input_audio", "audio"}


def text_of(content: Any, ctx: ParseContext, where: str) -> str:
    """Text of a message content: a string, null, or a list of parts (OpenAI or Anthropic style).

    Non-text parts become a placeholder (counted, reported once per file) so the message keeps its
    place and an approximate size; null becomes "".
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
            continue
        if not isinstance(part, dict):
            pieces.append(json.dumps(part, ensure_ascii=False))
            continue
        kind = str(part.get("type") or "")
        if kind in _IMAGE_TYPES:
            ctx.replaced("image" if "image" in kind else kind, where)
            pieces.append(IMAGE_PLACEHOLDER if "image" in kind else f"[{kind} omitted]")
        elif kind == "tool_result":  # nested results (Anthropic) keep their text
            pieces.append(text_of(part.get("content"), ctx, where))
        else:
            text = next((part[k] for k in _TEXT_KEYS if isinstance(part.get(k), str)), None)
            if text is None:
                ctx.replaced(kind or "unknown", where)
                text = f"[{kind or 'unknown'} omitted]"
            pieces.append(text)
    return "\n".join(pieces)


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the raw JSON text the provider saw."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def exception_text(exc: BaseException) -> str:
    """An unexpected exception in one line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- usage -------------------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def normalize_usage(raw: Any) -> dict[str, int | None] | None:
    """Provider usage -> ``{"prompt_tokens", "completion_tokens", ...raw parts}``, or None.

    OpenAI style: prompt_tokens / completion_tokens (+ cached tokens). Anthropic style: the prompt is
    input_tokens + cache_creation_input_tokens + cache_read_input_tokens; the parts are kept. Only
    flat integer fields are kept so canonical files keep one Arrow schema.
    """
    if not isinstance(raw, dict):
        return None
    input_tokens = _int(raw.get("input_tokens"))
    if input_tokens is not None and _int(raw.get("prompt_tokens")) is None:
        parts = {k: _int(raw.get(k)) or 0 for k in ("cache_creation_input_tokens", "cache_read_input_tokens")}
        return {
            "prompt_tokens": input_tokens + sum(parts.values()),
            "completion_tokens": _int(raw.get("output_tokens")),
            "input_tokens": input_tokens,
            **parts,
            "output_tokens": _int(raw.get("output_tokens")),
        }
    prompt = _int(raw.get("prompt_tokens"))
    if prompt is None:
        return None
    usage: dict[str, int | None] = {"prompt_tokens": prompt, "completion_tokens": _int(raw.get("completion_tokens"))}
    if _int(raw.get("total_tokens")) is not None:
        usage["total_tokens"] = _int(raw["total_tokens"])
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else _int(raw.get("cache_read_tokens"))
    if cached is not None:
        usage["cached_tokens"] = cached
    for key in ("prompt_cache_hit_tokens", "prompt_cache_miss_tokens"):  # DeepSeek's context cache
        if _int(raw.get(key)) is not None:
            usage[key] = _int(raw[key])
    return usage


# --- tool calls and results --------------------------------------------------------------------------


def openai_tool_calls(
    raw: Any, fallback_id: str, ctx: ParseContext | None = None, where: str | None = None
) -> tuple[ToolCall, ...]:
    """OpenAI ``tool_calls`` ([{id, function: {name, arguments}}]); missing ids are made up stably.

    What is not a list of call objects (``"tool_calls": "bash"``, a number in the list) is dropped
    with a warning when ``ctx`` is given.
    """
    if raw is None or raw == []:
        return ()
    if not isinstance(raw, list):
        if ctx is not None:
            ctx.warn(where, f"tool_calls is not a list ({type(raw).__name__} {_short(raw)}); ignored")
        return ()
    calls: list[ToolCall] = []
    for j, call in enumerate(raw):
        if not isinstance(call, dict):
            if ctx is not None:
                ctx.warn(where, f"tool_calls[{j}] is not a call object ({_short(call)}); dropped")
            continue
        nested = call.get("function")
        function = nested if isinstance(nested, dict) else call
        calls.append(
            ToolCall(
                id=as_str(call.get("id")) or f"{fallback_id}_{j}",
                name=str(function.get("name") or ""),
                arguments=arguments_text(function.get("arguments")),
            )
        )
    return tuple(calls)


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def link_tool_results(messages: list[Message], ctx: ParseContext, transcript_id: str) -> list[Message]:
    """Make every ``tool`` message answer a call made earlier in the transcript.

    A result without an id (legacy ``role: function``, mini-swe-agent) is linked to the oldest
    unanswered call with the same name (or the oldest one). A result whose call cannot be found is
    kept, as a ``user`` message with ``metadata["orphan_tool_result"]`` (its text still counts
    towards the context), and a warning names the message.
    """
    pending: dict[str, str] = {}
    called: dict[str, str] = {}
    renamed: dict[str, list[str]] = {}  # a repeated call id -> the unique ids given to its repeats, oldest first
    out: list[Message] = []
    for i, message in enumerate(messages):
        if message.role == "assistant":
            ids = [c.id for c in message.tool_calls]
            if len(set(ids)) < len(ids) or any(c in called for c in ids):
                message = _rename_repeated_calls(message, called, renamed, ctx, f"{transcript_id}:message {i}")
            for call in message.tool_calls:
                pending[call.id] = call.name
                called[call.id] = call.name
        elif message.role == "tool":
            call_id = message.tool_call_id
            if call_id and call_id not in pending:  # answers a repeated id: the oldest repeat still open
                call_id = next((c for c in renamed.get(call_id, ()) if c in pending), call_id)
            if not call_id:
                same_name = [c for c, n in pending.items() if message.name and n == message.name]
                call_id = next(iter(same_name or list(pending)), None)
            if call_id and call_id in called:
                pending.pop(call_id, None)
                message = message.replace(tool_call_id=call_id, name=message.name or called[call_id] or None)
            else:
                ctx.warn(
                    f"{transcript_id}:message {i}",
                    f"tool result for unknown call {message.tool_call_id!r} kept as a user message",
                )
                metadata = {**message.metadata, "orphan_tool_result": message.tool_call_id or ""}
                message = message.replace(role="user", tool_call_id=None, name=None, metadata=metadata)
        out.append(message)
    return out


def _rename_repeated_calls(
    message: Message, called: dict[str, str], renamed: dict[str, list[str]], ctx: ParseContext, where: str
) -> Message:
    """Give a call whose id was already used a unique id (``id~2``), so its result can be paired."""
    calls: list[ToolCall] = []
    taken = set(called)
    for call in message.tool_calls:
        if call.id in taken:
            n = 2
            while f"{call.id}~{n}" in taken:
                n += 1
            new_id = f"{call.id}~{n}"
            ctx.repaired("tool-call id(s) used by an earlier call renamed <id>~2, ~3... so results pair", where)
            renamed.setdefault(call.id, []).append(new_id)
            call = ToolCall(new_id, call.name, call.arguments)
        taken.add(call.id)
        calls.append(call)
    return message.replace(tool_calls=tuple(calls))


def finish(
    ctx: ParseContext, transcript_id: str, messages: list[Message], source: dict[str, Any], **metadata: Any
) -> Transcript:
    """Link tool results, warn on an empty transcript, and build the ``Transcript``."""
    if not messages:
        ctx.warn(transcript_id, "transcript has no messages")
    messages = link_tool_results(messages, ctx, transcript_id)
    return Transcript(id=transcript_id, messages=messages, source=source, metadata=metadata)


def content_digest(transcript: Transcript) -> str:
    """8 hex digits naming a transcript's messages: the same run gets the same digest every time."""
    text = json.dumps([m.to_dict() for m in transcript.messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def dedupe_ids(transcripts: list[Transcript], seen: set[str], where: str | None = None) -> list[Transcript]:
    """Give a transcript whose id is already in ``seen`` a stable suffix (``~`` and the digest of its
    messages; a further ``-2``, ``-3`` for identical copies), warn naming both ids, and add every id
    to ``seen``. Two runs sharing an id would otherwise be merged in the tables or skipped as done."""
    for t in transcripts:
        if t.id in seen:
            old, base = t.id, f"{t.id}~{content_digest(t)}"
            new, n = base, 1
            while new in seen:
                n += 1
                new = f"{base}-{n}"
            t.id = new
            place = where or (t.source or {}).get("path") or ""
            warnings.warn(
                f"{place}: duplicate transcript id {old!r}; this one is {new!r}".lstrip(": "),
                TranscriptWarning,
                stacklevel=2,
            )
        seen.add(t.id)
    return transcripts


def rows_read(out: list[Transcript], failures: list[InputError], ctx: ParseContext) -> list[Transcript]:
    """A file's transcripts, one per row read: a row that failed is a warning, unless no row was read (its error)."""
    if failures and not out:
        raise failures[0]
    for failure in failures:
        ctx.warn(failure.where, f"skipped, {failure.problem}")
    return out


def unique_ids(transcripts: list[Transcript]) -> list[Transcript]:
    """Make ids unique within one file (see ``dedupe_ids``)."""
    return dedupe_ids(transcripts, set())


def json_path(*parts: str | int) -> str:
    """``$[3].traj[5]``-style place names for warnings and errors."""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def recorded_tools(raw: Any, ctx: ParseContext, where: str) -> dict[str, Any]:
    """``{"tools": [...]}`` for the tool definitions a source recorded at ``where`` (an OpenAI or
    Anthropic ``tools`` list, OpenAI's legacy ``functions``), ``{}`` without; entries that are not
    objects are dropped with a warning. The replay counts them in every request."""
    tools, bad = valid_tools(raw)
    if bad:
        ctx.warn(where, f"{bad} tool definition(s) that are not objects dropped")
    return {TOOLS_KEY: tools} if tools else {}
