"""A persistent cache of token counts, shared by the cells of a sweep and by its worker processes.

Every cell of a sweep over one dataset reads the same transcripts afresh, and every job would
tokenize them again: a threshold sweep pays the tokenizer once per setting. Here the count of a
message's text (``Tokenizer.count_content`` of a text of ``MIN_CHARS`` characters or more) is
kept under its tokenizer's identity (``Tokenizer.cache_identity``: tiktoken's encodings, with
tiktoken's version) and the text's BLAKE2b digest (128 bits), in memory for the
process and in an SQLite database in WAL mode for the others: a cell reads what other processes
added (``refresh``, at its start) and writes what it counted (``flush``, at its end, and at exit).
SQLite's transactions keep the file whole when a process is killed (kill -9 loses only the counts
not yet flushed) and let concurrent workers read and write it; a database that cannot be opened or
written is left alone for the rest of the process (logged at debug level). The file keeps at most
``MAX_ENTRIES`` counts: past that the oldest half is dropped. A count is the tokenizer's, so the
results are the same with the cache as without it.

Where: ``$CTXBENCH_COUNT_CACHE`` (a folder), else ``token_counts.sqlite3`` in ctxbench's cache
folder (``ctxbench.tokens.rank_cache.cache_dir``: ``$CTXBENCH_CACHE_DIR``, ``$XDG_CACHE_HOME/ctxbench``
or ``~/.cache/ctxbench``). ``CTXBENCH_COUNT_CACHE=off`` (or ``CTXBENCH_CACHE_DIR=off``) turns it off.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from ctxbench.tokens.rank_cache import cache_dir

log = logging.getLogger(__name__)

CACHE_ENV = "CTXBENCH_COUNT_CACHE"
FILE = "token_counts.sqlite3"
MIN_CHARS = 512  # shorter texts cost less to count than to hash and look up
MAX_ENTRIES = 500_000  # about 56 MB of file (11.3 MB per 100,000 counts, measured)
FLUSH_EVERY = 512  # new counts held in memory before they are written
_SCHEMA = """CREATE TABLE IF NOT EXISTS counts (
    id INTEGER PRIMARY KEY, tokenizer TEXT NOT NULL, digest BLOB NOT NULL, tokens INTEGER NOT NULL,
    UNIQUE (tokenizer, digest))"""


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class CountCache:
    """Token counts by (tokenizer name, text digest): in memory, and in the SQLite file at ``path``."""

    def __init__(self, path: Path, max_entries: int = MAX_ENTRIES) -> None:
        self.path = path
        self.max_entries = max_entries
        self._db: sqlite3.Connection | None = None
        self._broken = False  # the file could not be used: memory only from then on
        self._known: dict[tuple[str, bytes], int] = {}
        self._read_up_to = 0  # the highest row id read from the file
        self._new: list[tuple[str, bytes, int]] = []
        self.hits = 0
        self.misses = 0

    def count(self, tokenizer: str, text: str, count: Callable[[str], int]) -> int:
        """``count(text)``, or the count another cell (of any process) made of the same text."""
        key = (tokenizer, digest(text))
        tokens = self._known.get(key)
        if tokens is None and self._db is None and not self._broken:
            self.refresh()  # the first look-up of the process reads the file
            tokens = self._known.get(key)
        if tokens is not None:
            self.hits += 1
            return tokens
        self.misses += 1
        tokens = self._known[key] = count(text)
        self._new.append((tokenizer, key[1], tokens))
        if len(self._new) >= FLUSH_EVERY:
            self.flush()
        return tokens

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # in WAL mode: whole after a crash, maybe a little older
                db.execute(_SCHEMA)
                self._db = db
            except (OSError, sqlite3.Error) as exc:
                self._fail(exc)
        return self._db

    def _fail(self, exc: Exception) -> None:
        log.debug("token count cache %s not used: %s", self.path, exc)
        self._broken = True
        self._db = None

    def refresh(self) -> None:
        """Read the counts other processes added since the last read."""
        db = self._connect()
        if db is None:
            return
        try:
            rows = db.execute(
                "SELECT id, tokenizer, digest, tokens FROM counts WHERE id > ? ORDER BY id", (self._read_up_to,)
            ).fetchall()
        except sqlite3.Error as exc:
            self._fail(exc)
            return
        if len(self._known) + len(rows) > self.max_entries:
            self._known.clear()  # bounded in memory too: keep what is newest
            rows = rows[-self.max_entries // 2 :]
        for row_id, tokenizer, key, tokens in rows:
            self._known[(tokenizer, bytes(key))] = tokens
            self._read_up_to = max(self._read_up_to, row_id)

    def flush(self) -> None:
        """Write the counts made since the last flush (one transaction), keeping the file bounded."""
        new, self._new = self._new, []
        db = self._connect()
        if db is None or not new:
            return
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT OR IGNORE INTO counts (tokenizer, digest, tokens) VALUES (?, ?, ?)", new)
                low, high = db.execute("SELECT min(id), max(id) FROM counts").fetchone()
                if low is not None and high - low + 1 > self.max_entries:
                    db.execute("DELETE FROM counts WHERE id <= ?", (high - self.max_entries // 2,))
        except sqlite3.Error as exc:
            self._fail(exc)


_shared: CountCache | None = None
_resolved = False


def location() -> Path | None:
    """Where the cache lives, or None when it is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return None if configured.lower() == "off" else Path(configured) / FILE
    folder = cache_dir()
    return None if folder is None else folder / FILE


def shared() -> CountCache | None:
    """The process's cache (None when off), flushed at exit."""
    global _shared, _resolved
    if not _resolved:
        path = location()
        _shared = None if path is None else CountCache(path)
        _resolved = True
        if _shared is not None:
            atexit.register(_shared.flush)
    return _shared


def reset() -> None:
    """Forget the process's cache (after ``CTXBENCH_COUNT_CACHE`` changed: tests, the bench)."""
    global _shared, _resolved
    if _shared is not None:
        _shared.flush()
    _shared, _resolved = None, False


def counted(tokenizer: str | None, text: str, count: Callable[[str], int]) -> int:
    """``count(text)`` through the shared cache when the text is long enough, the tokenizer has a
    stable identity (``Tokenizer.cache_identity``) and the cache is on."""
    if tokenizer is None or len(text) < MIN_CHARS:
        return count(text)
    cache = shared()
    return count(text) if cache is None else cache.count(tokenizer, text, count)


def cell_started() -> None:
    """A cell starts: take the counts other workers wrote meanwhile."""
    cache = shared()
    if cache is not None and cache._db is not None:
        cache.refresh()


def cell_finished() -> None:
    """A cell is done: hand its counts to the other workers."""
    cache = shared()
    if cache is not None:
        cache.flush()
