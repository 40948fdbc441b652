"""Where DB-GPT's tool-result snapshots are kept: one JSON line each, in one file per cell.

DB-GPT writes every successful action to its own file (``op_snapshots/step_003_sql_query.json``)
and the prompt points at that path. ctxbench keeps the same records under the same paths, as
lines of ``<cell>/op_snapshots.jsonl``: ``{"path": "op_snapshots/step_003_sql_query.json",
"snapshot": {...the file's JSON...}}``. The prompt text, and so every token count, is DB-GPT's.

Why not a file each: creating a file is kernel work that depends on the disk's state. On the
bench's 1M-token transcript the 334 files took 0.05-0.24 s of CPU on this machine's ext4, from
one run to the next; 393 appends to one store, with their JSON, took 0.02 s. A sweep of
hundreds of cells would also leave hundreds of thousands of small files.

The records stay in memory during the replay (``SnapshotStore``, which the judge reads) and the
file is written whole when the cell is published, replacing any earlier one, so a rerun of a cell
never mixes in an earlier run's lines. Readers ignore a last line without its newline.
"""

from __future__ import annotations

import json
import re
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


class SnapshotStore:
    """A cell's snapshot records, kept in memory while the replay runs and written to
    ``<workdir>/<folder>.jsonl`` with the cell's other files (``write``).

    The judge reads the records as they are added (``get``), so nothing is serialised or read
    back during the replay. A record holds the transcript's own strings (the observation, the
    action's input), so keeping it costs a small dict, not a copy of the text. Writing each line
    as it came cost the 1M-token dbgpt replay about 10 ms of CPU (orjson for 3.5 MiB, the
    kernel's new page-cache pages: 4% of the replay), spent again by every dbgpt cell of a sweep;
    it is now spent once, when the cell is published, as for calls.jsonl and events.jsonl."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._lines: list[tuple[str, dict[str, Any]]] = []  # in the order written, repeats kept
        self._records: dict[str, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._lines)

    def add(self, path: str, record: dict[str, Any]) -> None:
        self._lines.append((path, record))
        self._records[path] = record

    def get(self, path: str) -> dict[str, Any] | None:
        """The record stored under ``path`` (the last one if written twice), or None."""
        return self._records.get(path)

    def write(self, workdir: str | Path) -> Path:
        """Write every record as a line of ``<workdir>/<folder>.jsonl``, replacing an earlier file."""
        path = Path(workdir) / f"{self.folder}{STORE_SUFFIX}"
        with path.open("wb") as handle:  # buffered: no second copy of the whole store in memory
            handle.writelines(snapshot_line(p, record) for p, record in self._lines)
        return path


class SnapshotReader:
    """Snapshots by path from a store file (a published cell's, or one another process still
    appends to): a path not seen yet makes it read the lines added since its last read."""

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
# What every match holds, lowercased: a character matches one of these under re.IGNORECASE only
# when its str.lower() is that character (no Unicode case oddity folds to f, u, l, d or a space:
# tests/test_dbgpt_snapshots.py checks every code point), so a text whose lowercase lacks it has
# no pointer. The judge asks about every new text it sees and most hold none: lowercasing and
# searching in C cost about a third less than the case-blind regex tried at every place.
POINTER_MARK = "full d"
# Every character that matches one of the mark's under re.IGNORECASE is ASCII too (the same test),
# and UTF-8 puts no ASCII byte inside another character: for a text that is not ASCII, lowering
# its UTF-8 bytes' ASCII letters finds the mark where Unicode lowercasing would, for less (the
# bundled dbgpt cells' 2,979 such texts, 3.0M characters: 8.8 -> 5.4 ms).
POINTER_MARK_BYTES = POINTER_MARK.encode()


def has_pointer_mark(text: str) -> bool:
    """Whether ``POINTER_MARK`` is in ``text`` lowercased (its ASCII letters suffice)."""
    if text.isascii():
        return POINTER_MARK in text.lower()
    return POINTER_MARK_BYTES in text.encode("utf-8", "surrogatepass").lower()


class StoredSnapshots:
    """The ``ctxbench.core.SnapshotSource`` of a cell: DB-GPT pointers, looked up in the cell's
    snapshot stores (``<root>/<folder>.jsonl``), else as files relative to ``root``."""

    def __init__(self, root: str | Path, memory: SnapshotStore | None = None) -> None:
        """``memory``: the replay's own store, read first (its records are not on disk yet)."""
        self.root = Path(root)
        self._stores: dict[Path, SnapshotReader] = {}
        self._memory = memory
        # With the replay's store, nothing writes the cell's files while it runs: a pointer not
        # found on disk is not looked for there again (a pointer Layer 1 cut inside its own text
        # never resolves, and the judge asks at every checkpoint).
        self._not_on_disk: set[str] = set()

    def pointers(self, text: str) -> list[str]:
        if not has_pointer_mark(text):
            return []
        return [p.strip() for p in POINTER_PATTERN.findall(text)]

    def pointers_folded(self, text: str, folded: str) -> list[str]:
        """``pointers(text)``, given ``text.casefold()`` (the judge folds every new text): the mark
        is looked for there. Case folding lowers every ASCII letter and keeps neighbours next to
        each other, so a text whose lowercase holds the mark holds it folded too; a text folded
        into one without it in its lowercase (a ligature) has no match either (has_pointer_mark)."""
        if POINTER_MARK not in folded:
            return []
        return [p.strip() for p in POINTER_PATTERN.findall(text)]

    def read(self, pointer: str) -> Any | None:
        if self._memory is not None:
            record = self._memory.get(pointer)
            if record is not None:
                return record
            if pointer in self._not_on_disk:
                return None
            record = self._read_disk(pointer)
            if record is None:
                self._not_on_disk.add(pointer)
            return record
        return self._read_disk(pointer)

    def _read_disk(self, pointer: str) -> Any | None:
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
