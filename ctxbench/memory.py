"""Handing freed heap memory back to the operating system.

glibc keeps freed memory in the process for reuse, so a process that once held a large
parse buffer keeps it in its RSS. ``malloc_trim(0)`` returns whole free pages, wherever they
are in the heap. Elsewhere (macOS, musl) this is a no-op: memory is returned or kept as the
allocator decides.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    with contextlib.suppress(OSError, AttributeError, TypeError):
        return ctypes.CDLL(None).malloc_trim
    return None


def trim_heap() -> None:
    """Return free heap pages to the system (glibc ``malloc_trim``); a few ms on a large heap."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def release_free_memory() -> None:
    """Collect garbage, then trim the heap: the RSS afterwards is live memory."""
    gc.collect()
    trim_heap()
