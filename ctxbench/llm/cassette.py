"""Record/replay of LLM exchanges: readable JSONL, one line per exchange, keyed by a sha256 of
the exact request. litellm's disk cache is gone (reference.md 5), so this is ctxbench's own."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench.errors import ConfigError, InputError

MODES: tuple[str, ...] = ("live", "record", "replay", "replay-or-live")
# Recorded failures that replay-or-live retries live instead of replaying (they are not properties of the request).
TRANSIENT_KINDS = frozenset({"error", "timeout", "rate_limit"})


class CassetteMiss(ConfigError):
    """Replay mode met a request the cassette does not hold (a CtxbenchError: the run stops with one line)."""


def request_key(request: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of everything that changes the answer (model, messages, params)."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_preview(request: dict[str, Any], words: int = 8) -> str:
    text = " ".join(str(m.get("content", "")) for m in request.get("messages", []))
    return " ".join(text.split()[:words])


@dataclass
class Cassette:
    """One JSONL file of exchanges. Lines are appended with a single ``os.write`` on an O_APPEND
    descriptor, so concurrent jobs sharing the file never interleave inside a line; a torn last
    line (a killed writer) is ignored when reading."""

    path: Path
    mode: str = "record"

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.mode not in MODES:
            raise ConfigError(f"cassette mode {self.mode!r}: choose from {', '.join(MODES)}")
        self._entries: dict[str, dict[str, Any]] | None = None

    def entries(self) -> dict[str, dict[str, Any]]:
        """key -> the last recorded exchange with that key (loaded once; record mode starts empty)."""
        if self._entries is None:
            self._entries = {} if self.mode == "record" else self._read()
        return self._entries

    def _read(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        entries: dict[str, dict[str, Any]] = {}
        lines = self.path.read_text("utf-8").split("\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = entry["key"]
            except json.JSONDecodeError as error:
                # A torn line (a writer died mid-line) is a JSON prefix; later appends start on a fresh line.
                if number == len(lines) or _is_truncated(line, error):
                    continue
                raise InputError(self.path, f"line {number}", "not a cassette exchange (JSON with a 'key')") from None
            except (KeyError, TypeError):
                raise InputError(self.path, f"line {number}", "not a cassette exchange (JSON with a 'key')") from None
            entries[key] = entry
        return entries

    def lookup(self, key: str) -> dict[str, Any] | None:
        if self.mode == "live":
            return None
        entry = self.entries().get(key)
        transient = entry is not None and (entry.get("error") or {}).get("kind") in TRANSIENT_KINDS
        if transient and self.mode == "replay-or-live":
            return None
        return entry

    def append(self, entry: dict[str, Any]) -> None:
        if self.mode == "live":
            return
        self.entries()[entry["key"]] = entry
        data = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            # Start on a fresh line after a torn one, in the same write. A concurrent writer mid-write can
            # look torn too; then the extra newline only adds a blank line, which readers skip.
            if _ends_torn(fd):
                data = b"\n" + data
            written = os.write(fd, data)
            while written < len(data):  # regular files write fully; this only guards odd filesystems
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _is_truncated(line: str, error: json.JSONDecodeError) -> bool:
    """The JSON stopped mid-value (cut off), rather than being something else."""
    return line.lstrip().startswith("{") and (
        error.msg.startswith("Unterminated string") or error.pos >= len(line.rstrip())
    )
