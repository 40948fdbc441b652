"""Where DB-GPT's tool-result snapshots are kept: one JSON line each, in one file per cell.

DB-GPT writes every successful action to its own file (``op_snapshots/step_003_sql_query.json``)
and the prompt points at that path. ctxbench keeps the same records under the same paths, as
lines of ``<cell>/op_snapshots.jsonl``: ``{"path": "op_snapshots/step_003_sql_query.json",
"snapshot": {...the file's JSON...}}``. The prompt text, and so every token count, is DB-GPT's.

Why not a file each: creating a file is kernel work that depends on the disk's state. On the
bench's 1M-token transcript the 334 files took 0.05-0.24 s of CPU on this machine's ext4, from
one run to the next; 393 appends to one store, with their JSON, took 0.02 s. A sweep of
hundreds of cells would also leave hundreds of thousands of small files.

A replay truncates the store at its first snapshot, so a rerun of a cell never mixes in an
earlier run's lines. Readers ignore a last line without its newline (a run cut short).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ctxbench.errors import InputError

STORE_SUFFIX = ".jsonl"  # the store of pointers "op_snapshots/..." is "op_snapshots.jsonl"


def store_path(root: str | Path, pointer: str) -> Path | None:
    """The store that holds ``pointer``: ``<root>/<its first folder>.jsonl``; for an absolute
    pointer (DB-GPT's ``/root/.dbgpt/workspace/op_snapshots/<conv>/step_001_x.json``) the first of
    its folders that has a store under ``root``. None when there is none."""
    parts = Path(pointer).parts
    if len(parts) < 2:
        return None
    if not Path(pointer).is_absolute():
        return Path(root) / f"{parts[0]}{STORE_SUFFIX}"
    for part in parts[1:-1]:
        store = Path(root) / f"{part}{STORE_SUFFIX}"
        if store.is_file():
            return store
    return None


def snapshot_line(path: str, record: dict[str, Any]) -> bytes:
    """One store line: UTF-8 JSON and a newline (orjson: one per tool result adds up)."""
    entry = {"path": path, "snapshot": record}
    try:
        return orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:  # e.g. a lone surrogate escape in the transcript: json escapes it
        return (json.dumps(entry) + "\n").encode()


FLUSH_BYTES = 256 * 1024  # lines a writer keeps back before it appends them


class SnapshotWriter:
    """Appends snapshot lines to ``<workdir>/<folder>.jsonl``; the first append truncates it.

    Lines after the first are kept back and appended together, ``FLUSH_BYTES`` at a time: an
    append per line cost about 6 ms of kernel time on the 1M-token transcript's 374 snapshots
    (2.7% of its dbgpt replay). ``flush`` appends what was kept back: the owner calls it before
    the store is read (the judge reads it mid-replay) and when the replay ends."""

    def __init__(self, workdir: str | Path, folder: str) -> None:
        self.path = os.path.join(workdir, folder + STORE_SUFFIX)
        self._flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC  # then O_APPEND
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    def write(self, path: str, record: dict[str, Any]) -> None:
        line = snapshot_line(path, record)
        self._pending.append(line)
        self._pending_bytes += len(line)
        # The first line is appended at once: it truncates an earlier run's store right away.
        if self._pending_bytes >= FLUSH_BYTES or self._flags & os.O_TRUNC:
            self.flush()

    def flush(self) -> None:
        """Append the lines kept back (the first append truncates the store)."""
        if not self._pending:
            return
        data = memoryview(b"".join(self._pending))
        self._pending, self._pending_bytes = [], 0
        fd = os.open(self.path, self._flags, 0o666)
        self._flags = os.O_WRONLY | os.O_APPEND
        try:
            while data:
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)


class SnapshotReader:
    """Snapshots by path from a store that may still be growing (the judge reads mid-replay):
    a path not seen yet makes it read the lines added since its last read."""

    def __init__(self, store: str | Path) -> None:
        self.path = Path(store)
        self._records: dict[str, Any] = {}
        self._offset = 0

    def get(self, path: str) -> Any | None:
        """The snapshot stored under ``path``, or None."""
        if path not in self._records:
            self._read_new_lines()
        return self._records.get(path)

    def _read_new_lines(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1  # a last line without its newline is not complete yet
        start = 0
        while start < end:
            stop = data.index(b"\n", start) + 1
            self._add(data[start:stop], self._offset + start)
            start = stop
        self._offset += end

    def _add(self, line: bytes, offset: int) -> None:
        try:
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                entry = json.loads(line)  # what orjson rejects (lone surrogate escapes), json reads
            self._records[entry["path"]] = entry["snapshot"]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(self.path, f"byte {offset}", f"not a snapshot line ({exc})") from None


# DB-GPT's pointers: "[Full detail available at: PATH]" and Layer 1's "full detail at: PATH]".
POINTER_PATTERN = re.compile(r"full detail (?:available )?at: ([^\]\n]+)\]", re.IGNORECASE)


class StoredSnapshots:
    """The ``ctxbench.core.SnapshotSource`` of a cell: DB-GPT pointers, looked up in the cell's
    snapshot stores (``<root>/<folder>.jsonl``), else as files relative to ``root``."""

    def __init__(self, root: str | Path, before_read: Callable[[], None] | None = None) -> None:
        """``before_read``: called before each read (the writer's ``flush``, during a replay)."""
        self.root = Path(root)
        self._stores: dict[Path, SnapshotReader] = {}
        self._before_read = before_read

    def pointers(self, text: str) -> list[str]:
        return [p.strip() for p in POINTER_PATTERN.findall(text)]

    def read(self, pointer: str) -> Any | None:
        if self._before_read is not None:
            self._before_read()
        store = store_path(self.root, pointer)
        if store is not None and store.is_file():
            if store not in self._stores:
                self._stores[store] = SnapshotReader(store)
            record = self._stores[store].get(pointer)
            if record is not None:
                return record
        file = Path(pointer) if Path(pointer).is_absolute() else self.root / pointer
        try:
            raw = file.read_text("utf-8")
        except OSError:
            return None  # not written yet: the judge asks again later in the replay
        try:
            return json.loads(raw)
        except ValueError:
            return raw
