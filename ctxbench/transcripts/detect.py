"""Reading a source file once and telling its transcript format from its content.

``load_source`` decodes the bytes (strict UTF-8), then parses the text as one JSON document, as
JSONL (bad lines skipped with a warning naming ``file:line``), or keeps it as plain text.
``sniff`` looks at the parsed shape, not the file name; the extension only breaks ties.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from ctxbench.errors import InputError
from ctxbench.transcripts.formats._common import Source, TranscriptWarning

CLAUDE_CODE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "progress", "queue-operation"}
_REACT_STEP = re.compile(r"^\s*(Thought|Action)\s*:", re.MULTILINE)
_REACT_OBS = re.compile(r"^\s*(Observation|Action Input)\s*:", re.MULTILINE)


def _decode(path: Path, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            path, f"line {line}", f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {column})"
        ) from None
    return text.removeprefix("\ufeff")


def load_source(path: str | Path) -> Source:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    text = _decode(path, raw)
    stripped = text.strip()
    if not stripped:
        raise InputError(path, None, "file is empty")
    if stripped[0] not in "[{":
        return Source(path, text, "text")
    try:
        return Source(path, text, "json", json.loads(stripped))
    except json.JSONDecodeError as whole_error:
        rows = _jsonl_rows(path, text)
        if rows is None:
            raise InputError(
                path,
                f"line {whole_error.lineno}",
                f"not valid JSON ({whole_error.msg}, column {whole_error.colno}); truncated file?",
            ) from None
        return Source(path, text, "jsonl", rows)


def _jsonl_rows(path: Path, text: str) -> list[tuple[int, Any]] | None:
    """Parse JSONL, skipping bad lines with a warning; None when this is not JSONL at all."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) < 2:
        return None
    rows: list[tuple[int, Any]] = []
    bad: list[tuple[int, str]] = []
    for n, line in lines:
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append((n, f"{exc.msg}, column {exc.colno}"))
            continue
        rows.append((n, value))
    # Pretty-printed JSON cut short has a few lines that parse on their own; real JSONL starts with an
    # object line or has mostly object lines.
    objects = sum(isinstance(v, dict) for _, v in rows)
    starts_with_object = bool(rows) and rows[0][0] == lines[0][0] and isinstance(rows[0][1], dict)
    if not (starts_with_object or objects * 2 >= len(lines)):
        return None
    for n, problem in bad:
        warnings.warn(f"{path}:line {n}: skipped, not valid JSON ({problem})", TranscriptWarning, stacklevel=2)
    return rows


# --- sniffing ------------------------------------------------------------------------------------------


def _is_event(item: Any) -> bool:
    return isinstance(item, dict) and ("action" in item or "observation" in item) and "source" in item


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("role"), str)


def _anthropic_blocks(messages: list[Any]) -> bool:
    """True when some content uses Anthropic-only block types."""
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") in (
                    "tool_use",
                    "tool_result",
                    "thinking",
                    "redacted_thinking",
                ):
                    return True
                if isinstance(block, dict) and block.get("type") == "image" and "source" in block:
                    return True
    return False


def _openai_only(messages: list[Any]) -> bool:
    return any(
        isinstance(m, dict) and (m.get("role") in ("tool", "function") or m.get("tool_calls") or m.get("function_call"))
        for m in messages
    )


def _sniff_messages(messages: list[Any], has_system_key: bool = False) -> str | None:
    if not messages or not all(_is_message(m) for m in messages):
        return None
    if _anthropic_blocks(messages) and not _openai_only(messages):
        return "anthropic"
    if has_system_key and not _openai_only(messages):
        return "anthropic"
    return "openai"


def _sniff_object(doc: dict[str, Any]) -> str | None:
    if isinstance(doc.get("history"), list) and (not doc["history"] or _is_event(doc["history"][0])):
        return "openhands"
    if isinstance(doc.get("history"), list) or isinstance(doc.get("trajectory"), list):
        return "swe-agent"
    if isinstance(doc.get("traj"), list) and "task_id" in doc:
        return "tau-bench"
    if isinstance(doc.get("messages"), list):
        return _sniff_messages(doc["messages"], has_system_key="system" in doc) or (
            "openai" if not doc["messages"] else None
        )
    if doc.get("type") in CLAUDE_CODE_TYPES and ("uuid" in doc or "sessionId" in doc):
        return "claude-code"
    return None


def sniff(source: Source) -> str | None:
    """The format name for a loaded source, or None if nothing matches."""
    if source.kind == "text":
        if _REACT_STEP.search(source.text) and _REACT_OBS.search(source.text):
            return "react"
        return None
    if source.kind == "json":
        doc = source.data
        if isinstance(doc, dict):
            return _sniff_object(doc)
        if isinstance(doc, list):
            items = [x for x in doc if x is not None]
            if items and all(isinstance(x, dict) and isinstance(x.get("traj"), list) for x in items):
                return "tau-bench"
            if items and all(_is_event(x) for x in items):
                return "openhands"
            if items and isinstance(items[0], dict) and isinstance(items[0].get("history"), list):
                return _sniff_object(items[0])
            return _sniff_messages(items) if items else "openai"
        return None
    values = [v for _, v in source.data if isinstance(v, dict)]
    if any(v.get("type") in CLAUDE_CODE_TYPES and ("uuid" in v or "sessionId" in v) for v in values):
        return "claude-code"
    first = values[0]
    if isinstance(first.get("history"), list):
        return _sniff_object(first)
    if isinstance(first.get("traj"), list):
        return "tau-bench"
    if all(_is_message(v) for v in values):
        return _sniff_messages(values)
    if isinstance(first.get("messages"), list):
        return _sniff_object(first)
    return None


def detect_format(path: str | Path) -> str:
    """The format of one file, from its content; ``InputError`` if it is unreadable or unknown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranscriptWarning)
        source = load_source(path)
    return detect_source(source)


def detect_source(source: Source) -> str:
    fmt = sniff(source)
    if fmt is None:
        raise InputError(
            source.path,
            None,
            f"unknown transcript format ({source.kind} content matches none of the known formats; "
            "pass --format to choose one)",
        )
    return fmt
