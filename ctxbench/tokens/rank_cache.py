"""A local cache of parsed BPE rank tables, so a process loads a tokenizer in less time.

tiktoken parses its rank files (one base64 token per line) in Python every time a process
loads an encoding: 0.33 s for o200k_base and 0.17 s for cl100k_base here, paid by every
`ctxbench` command and by every sweep worker. The parsed table, stored with ``marshal``, loads
in about a fifth of that. Entries are keyed by the SHA-256 that tiktoken checks the rank file
against (the content, not the path) and by the Python version (marshal's format); a missing,
unreadable or corrupt entry is parsed again from the rank file and rewritten.

Where: ``$CTXBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/ctxbench``, else ``~/.cache/ctxbench``.
``CTXBENCH_CACHE_DIR=off`` turns the cache off. A folder that cannot be written is skipped
(logged at debug level); the tokenizer is the same either way.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ctxbench.atomic import write_bytes_atomic

log = logging.getLogger(__name__)

CACHE_ENV = "CTXBENCH_CACHE_DIR"
Ranks = dict[bytes, int]
_patch_lock = threading.Lock()


def cache_dir() -> Path | None:
    """The cache folder, or None when ``CTXBENCH_CACHE_DIR=off``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return None if configured.lower() == "off" else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ctxbench"


def cached_ranks(key: str, parse: Callable[[], Ranks]) -> Ranks:
    """The rank table stored under ``key`` (a content hash), else ``parse()``, stored for next time."""
    folder = cache_dir()
    if folder is None:
        return parse()
    entry = folder / "ranks" / f"{key}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"
    with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
        ranks = marshal.loads(entry.read_bytes())
        if isinstance(ranks, dict) and ranks:
            return ranks
    ranks = parse()
    try:
        write_bytes_atomic(entry, marshal.dumps(ranks))
    except OSError as exc:
        log.debug("rank cache %s not written: %s", entry, exc)
    return ranks


@contextlib.contextmanager
def tiktoken_rank_cache() -> Iterator[None]:
    """While open, tiktoken's bundled encodings read their rank tables through the cache.

    ``tiktoken_ext.openai_public`` calls the module-level name ``load_tiktoken_bpe(url,
    expected_hash)``; that name is swapped for a caching one and put back on exit."""
    import tiktoken_ext.openai_public as public

    with _patch_lock:
        original = public.load_tiktoken_bpe

        def load(url: str, expected_hash: str | None = None) -> Ranks:
            if not expected_hash:  # nothing to key the entry on: parse as tiktoken does
                return original(url, expected_hash)
            return cached_ranks(expected_hash, lambda: original(url, expected_hash))

        public.load_tiktoken_bpe = load
        try:
            yield
        finally:
            public.load_tiktoken_bpe = original
