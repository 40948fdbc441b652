"""The cyclic garbage collector paused while a cell is computed (``ctxbench.cells.run_cell``).

What a cell allocates (its working contexts, events, retention rows, the recorder's entries) lives
to the cell's end, so the collections it triggers find next to nothing: a few thousand objects in
cycles per cell (config nodes), on the bundled data and a generated 1M transcript alike. Yet each
full collection walks every object in the process, the loaded transcripts included: on the 8
bundled cells, 0.04 s of observation_masking's and five_layer's 1.1 s, against 0.008 s of `none`'s,
which allocates less and never reached one. Reference counting frees everything else as it goes;
the collector runs again as configured once the cell is done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block; the collector's state as it was after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
