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
class Served:
    """What the cassette gives for a request: the exchange, and whether it stands for a provider
    call (recorded earlier, replayed: billed as recorded) or repeats an answer this run already
    got (a cache hit: neither billed nor counted as a call)."""

    entry: dict[str, Any]
    cache_hit: bool


@dataclass
class Cassette:
    """One JSONL file of exchanges. Lines are appended with a single ``os.write`` on an O_APPEND
    descriptor, so concurrent jobs sharing the file never interleave inside a line; a torn last
    line (a killed writer) is ignored when reading.

    A key may hold several exchanges, in order: a request that failed transiently (error, timeout,
    rate limit, after the client's own retries) and was asked again later is recorded once per
    outcome. A request is never answered from a transient failure: the next outcome in the file
    (replay) or a live call (record) follows it. Once a key has a lasting outcome, asking again
    is a cache hit. Record and replay walk the same sequence, so a replay reproduces the run."""

    path: Path
    mode: str = "record"

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.mode not in MODES:
            raise ConfigError(f"cassette mode {self.mode!r}: choose from {', '.join(MODES)}")
        self._entries: dict[str, list[dict[str, Any]]] | None = None
        self._served: dict[str, int] = {}  # key -> how many of its recorded outcomes this run used

    def entries(self) -> dict[str, dict[str, Any]]:
        """key -> the last recorded exchange with that key (loaded once; record mode starts empty)."""
        return {key: outcomes[-1] for key, outcomes in self._outcomes().items()}

    def _outcomes(self) -> dict[str, list[dict[str, Any]]]:
        if self._entries is None:
            self._entries = {} if self.mode == "record" else self._read()
        return self._entries

    def _read(self) -> dict[str, list[dict[str, Any]]]:
        if not self.path.exists():
            return {}
        entries: dict[str, list[dict[str, Any]]] = {}
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
            if self.mode == "replay-or-live" and is_transient(entry):
                continue  # replay-or-live asks the provider again instead of replaying a passing failure
            entries.setdefault(key, []).append(entry)
        return entries

    def lookup(self, key: str) -> dict[str, Any] | None:
        served = self.serve(key)
        return served.entry if served else None

    def serve(self, key: str) -> Served | None:
        """The answer for ``key`` or None (go live; in replay mode: a miss)."""
        if self.mode == "live":
            return None
        outcomes = self._outcomes().get(key, [])
        used = self._served.get(key, 0)
        if used and not is_transient(outcomes[used - 1]):
            return Served(outcomes[used - 1], cache_hit=True)
        if used < len(outcomes):
            self._served[key] = used + 1
            return Served(outcomes[used], cache_hit=False)
        return None

    def append(self, entry: dict[str, Any]) -> None:
        """Record the final outcome of one live call (after the client's retries)."""
        if self.mode == "live":
            return
        outcomes = self._outcomes().setdefault(entry["key"], [])
        outcomes.append(entry)
        self._served[entry["key"]] = len(outcomes)
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


def is_transient(entry: dict[str, Any]) -> bool:
    """A recorded failure that says nothing about the request (the provider may answer next time)."""
    return (entry.get("error") or {}).get("kind") in TRANSIENT_KINDS


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _is_truncated(line: str, error: json.JSONDecodeError) -> bool:
    """The JSON stopped mid-value (cut off), rather than being something else."""
    return line.lstrip().startswith("{") and (
        error.msg.startswith("Unterminated string") or error.pos >= len(line.rstrip())
    )
