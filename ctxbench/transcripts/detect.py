"""Reading a source file once and telling its transcript format from its content.

``load_source`` checks that the path is a regular file of bounded size, decodes the bytes (UTF-8;
UTF-16/32 with a byte-order mark or an obvious NUL pattern, with a warning), then parses the text as
one JSON document, as JSONL (bad lines skipped with a warning naming ``file:line``), or keeps it as
plain text. Parsed values are bounded (``bounds``): nesting depth, integer size, string size, and
lone surrogates (which cannot be written as UTF-8) are replaced, each repair counted in a warning.
``sniff`` looks at the parsed shape, not the file name; the extension only breaks ties.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import warnings
from pathlib import Path
from typing import Any

from ctxbench.errors import InputError
from ctxbench.transcripts.formats import openhands_v1
from ctxbench.transcripts.formats._common import Source, TranscriptWarning
from ctxbench.transcripts.formats.claude_code import RECORD_TYPES as CLAUDE_CODE_TYPES
from ctxbench.transcripts.formats.codex import is_rollout_line
from ctxbench.transcripts.formats.gemini import is_cli_session, is_content

CANONICAL_PREFIX = "ctxbench.transcript/"
CANONICAL = "ctxbench"  # the format name of an already-canonical file (imported as is, version checked)
_REACT_STEP = re.compile(r"^\s*(Thought|Action)\s*:", re.MULTILINE)
_REACT_OBS = re.compile(r"^\s*(Observation|Action Input)\s*:", re.MULTILINE)

# Bounds against hostile shapes. Real transcripts nest about 12 levels (OpenHands events); a
# provider's integer fits 64 bits; one message of 64 Mi characters is far beyond any context window.
MAX_FILE_BYTES = 2 * 1024**3
MAX_DEPTH = 100
MAX_INT_DIGITS = 19
MAX_STRING_CHARS = 64 * 1024**2
_SURROGATE = re.compile("[\ud800-\udfff]")
_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class _BadJSON(Exception):
    """One JSON text that cannot be used: ``problem`` says why, ``line`` where (1-based, in the text)."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


class Repairs:
    """Counts of values changed to fit the bounds while parsing one file (reported once per file)."""

    def __init__(self) -> None:
        self.big_ints = 0
        self.surrogates = 0
        self.long_strings = 0

    def report(self, path: Path) -> None:
        if self.big_ints:
            _warn(path, f"{self.big_ints} integer(s) longer than {MAX_INT_DIGITS} digits kept as text")
        if self.surrogates:
            _warn(path, f"{self.surrogates} string(s) with lone UTF-16 surrogates: each replaced by U+FFFD")
        if self.long_strings:
            _warn(path, f"{self.long_strings} string(s) longer than {MAX_STRING_CHARS:,} characters cut there")


def _warn(path: Path, problem: str) -> None:
    warnings.warn(f"{path}: {problem}", TranscriptWarning, stacklevel=3)


def os_problem(exc: OSError, path: Path) -> str:
    """The cause of an ``OSError`` in words a user can act on (a loop is not 'no such file')."""
    if exc.errno == errno.ELOOP:
        return "symbolic link loop (too many levels of symbolic links)"
    if exc.errno == errno.ENOENT and path.is_symlink():
        try:
            return f"broken symbolic link (points to {os.readlink(path)}, which does not exist)"
        except OSError:
            return "broken symbolic link"
    if exc.errno == errno.ENOENT:
        return "no such file or directory"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)


def check_regular_file(path: Path) -> os.stat_result:
    """``stat`` of a regular file, or ``InputError`` saying what the path is instead."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {os_problem(exc, path)}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = _FILE_KINDS.get(stat.S_IFMT(info.st_mode), "a special file")
        raise InputError(path, None, f"not a regular file ({kind})")
    if info.st_size > MAX_FILE_BYTES:
        raise InputError(path, None, f"file too large ({info.st_size:,} bytes; at most {MAX_FILE_BYTES:,})")
    return info


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    return line, offset - (raw.rfind(b"\n", 0, offset) + 1) + 1


def _utf16_guess(raw: bytes) -> str | None:
    """'utf-16-le' / 'utf-16-be' when the first bytes look like BOM-less UTF-16 ASCII text."""
    head = raw[:512]
    if len(head) < 4:
        return None
    even, odd = head[0::2], head[1::2]
    if odd.count(0) >= len(odd) * 0.9 and even.count(0) == 0:
        return "utf-16-le"
    if even.count(0) >= len(even) * 0.9 and odd.count(0) == 0:
        return "utf-16-be"
    return None


def _decode(path: Path, raw: bytes) -> str:
    encoding = None
    if raw.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        encoding, why = "utf-32", "byte-order mark"
    elif raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding, why = "utf-16", "byte-order mark"
    elif b"\x00" in raw[:512] and (encoding := _utf16_guess(raw)):
        why = "NUL byte pattern"
    if encoding:
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            name = encoding.upper()
            raise InputError(path, None, f"encoded as {name} ({why}), but byte {exc.start} is not {name}") from None
        _warn(path, f"encoded as {encoding.upper()} ({why}), not UTF-8: read as {encoding.upper()}")
        return text.removeprefix("\ufeff")
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, column = _position(raw, nul)
        raise InputError(path, f"line {line}", f"binary data, not a text transcript (NUL byte at column {column})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(raw, exc.start)
        raise InputError(
            path, f"line {line}", f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {column})"
        ) from None
    return text.removeprefix("\ufeff")


def loads_bounded(text: str, repairs: Repairs) -> Any:
    """``json.loads`` within the bounds; ``_BadJSON`` for what cannot be used."""

    def parse_int(digits: str) -> int | str:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            repairs.big_ints += 1
            return digits
        return int(digits)

    try:
        value = json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise _BadJSON(f"not valid JSON ({exc.msg}, column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise _BadJSON(f"nested deeper than {MAX_DEPTH} levels") from None
    return bound(value, repairs)


def bound(value: Any, repairs: Repairs) -> Any:
    """``value`` with its strings fixed in place; ``_BadJSON`` if it nests deeper than ``MAX_DEPTH``."""
    if isinstance(value, str):
        return _fix_string(value, repairs)
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _BadJSON(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    fixed = _fix_string(item, repairs)
                    if fixed is not item:
                        node[i] = fixed
                elif isinstance(item, list | dict):
                    stack.append((item, depth + 1))
        elif isinstance(node, dict):
            bad_keys = [k for k in node if _needs_fix(k)]
            for key in bad_keys:
                node[_fix_string(key, repairs)] = node.pop(key)
            for key, item in node.items():
                if isinstance(item, str):
                    fixed = _fix_string(item, repairs)
                    if fixed is not item:
                        node[key] = fixed
                elif isinstance(item, list | dict):
                    stack.append((item, depth + 1))
    return value


def _needs_fix(text: str) -> bool:
    return len(text) > MAX_STRING_CHARS or _SURROGATE.search(text) is not None


def _fix_string(text: str, repairs: Repairs) -> str:
    if len(text) > MAX_STRING_CHARS:
        repairs.long_strings += 1
        text = text[:MAX_STRING_CHARS]
    if _SURROGATE.search(text):
        repairs.surrogates += 1
        text = _SURROGATE.sub("\ufffd", text)
    return text


def load_source(path: str | Path) -> Source:
    path = Path(path)
    check_regular_file(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {os_problem(exc, path)}") from None
    text = _decode(path, raw)
    del raw
    stripped = text.strip()
    if not stripped:
        raise InputError(path, None, "file is empty")
    if stripped[0] not in "[{":
        if len(text) > MAX_STRING_CHARS:
            raise InputError(path, None, f"text file longer than {MAX_STRING_CHARS:,} characters")
        return Source(path, text, "text")
    repairs = Repairs()
    try:
        source = Source(path, text, "json", loads_bounded(stripped, repairs))
    except _BadJSON as whole_error:
        repairs = Repairs()
        rows = _jsonl_rows(path, text, repairs)
        if rows is None:
            where = f"line {whole_error.line}" if whole_error.line else None
            hint = "; truncated file?" if whole_error.problem.startswith("not valid JSON") else ""
            raise InputError(path, where, whole_error.problem + hint) from None
        source = Source(path, text, "jsonl", rows)
    repairs.report(path)
    return source


def _jsonl_rows(path: Path, text: str, repairs: Repairs) -> list[tuple[int, Any]] | None:
    """Parse JSONL, skipping bad lines with a warning; None when this is not JSONL at all."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) < 2:
        return None
    rows: list[tuple[int, Any]] = []
    bad: list[tuple[int, str]] = []
    for n, line in lines:
        try:
            value = loads_bounded(line, repairs)
        except _BadJSON as exc:
            bad.append((n, exc.problem))
            continue
        rows.append((n, value))
    # Pretty-printed JSON cut short has a few lines that parse on their own; real JSONL starts with an
    # object line or has mostly object lines.
    objects = sum(isinstance(v, dict) for _, v in rows)
    starts_with_object = bool(rows) and rows[0][0] == lines[0][0] and isinstance(rows[0][1], dict)
    if not (starts_with_object or objects * 2 >= len(lines)):
        return None
    for n, problem in bad:
        warnings.warn(f"{path}:line {n}: skipped, {problem}", TranscriptWarning, stacklevel=2)
    return rows


# --- sniffing ------------------------------------------------------------------------------------------


def _is_event(item: Any) -> bool:
    return isinstance(item, dict) and ("action" in item or "observation" in item) and "source" in item


def _is_pair(item: Any) -> bool:
    """An OpenHands ``[action, observation]`` pair: ``history``'s items before about Oct 2024."""
    return (
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], dict)
        and "action" in item[0]
        and isinstance(item[1], dict)
        and "observation" in item[1]
    )


def _openhands_history(history: list[Any]) -> bool:
    return not history or _is_event(history[0]) or _is_pair(history[0])


_RESPONSES_ITEMS = {"reasoning", "function_call", "function_call_output"}  # OpenAI Responses API items


def _is_message(item: Any) -> bool:
    """A chat message, or an OpenAI Responses item (reasoning, function call, its output)."""
    return isinstance(item, dict) and (isinstance(item.get("role"), str) or item.get("type") in _RESPONSES_ITEMS)


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
    contents = doc.get("contents")
    if is_cli_session(doc) or isinstance(contents, list) and contents and all(map(is_content, contents)):
        return "gemini"
    history = doc.get("history")
    if isinstance(history, list) and history and openhands_v1.is_event(history[0]):
        return openhands_v1.FORMAT
    if isinstance(history, list) and _openhands_history(history):
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


def is_canonical(value: Any) -> bool:
    """A ctxbench canonical transcript line (any schema version): ``{"format": "ctxbench.transcript/N"}``."""
    version = value.get("format") if isinstance(value, dict) else None
    return isinstance(version, str) and version.startswith(CANONICAL_PREFIX)


def sniff(source: Source) -> str | None:
    """The format name for a loaded source, or None if nothing matches."""
    if source.kind == "json" and is_canonical(source.data):
        return CANONICAL
    if source.kind == "jsonl" and any(is_canonical(v) for _, v in source.data):
        return CANONICAL
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
            if items and sum(map(openhands_v1.is_event, items)) * 2 > len(items):
                return openhands_v1.FORMAT
            if items and (all(_is_event(x) for x in items) or all(_is_pair(x) for x in items)):
                return "openhands"
            if items and all(map(is_content, items)):
                return "gemini"
            if items and isinstance(items[0], dict) and isinstance(items[0].get("history"), list):
                return _sniff_object(items[0])
            return _sniff_messages(items) if items else "openai"
        return None
    values = [v for _, v in source.data if isinstance(v, dict)]
    if not values:
        return None
    if any(v.get("type") in CLAUDE_CODE_TYPES and ("uuid" in v or "sessionId" in v) for v in values):
        return "claude-code"
    if any(v.get("type") == "response_item" for v in values) and sum(map(is_rollout_line, values)) * 2 > len(values):
        return "codex"
    if sum(map(openhands_v1.is_event, values)) * 2 > len(values):  # an SDK conversation, one event a line
        return openhands_v1.FORMAT
    first = values[0]
    if isinstance(first.get("history"), list):
        return _sniff_object(first)
    if isinstance(first.get("traj"), list):
        return "tau-bench"
    if all(map(is_content, values)):
        return "gemini"
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
