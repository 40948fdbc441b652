"""The deterministic judge's copy of the last context it judged, position by position.

A replay's context changes little from one checkpoint to the next (new messages at its end, a
few replaced, old rounds dropped), yet every checkpoint needs, for each message, whether it holds
a gold or a snapshot pointer and its place in the transcript. Looking both up for every message
of every checkpoint was most of judging a checkpoint (observation_masking judges at every call).
The view keeps both per position and brings them in line with the next context where it differs:
compared by identity with a private copy of the last one (``ctxbench.transcripts.running``, in
C), so it is exact for any list, however it was made, and walks only what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import islice, repeat
from typing import Generic, TypeVar

from ctxbench.transcripts.model import Message
from ctxbench.transcripts.running import REPLACED_LIMIT, cut_dropped_runs

M = TypeVar("M")


class ContextView(Generic[M]):
    """``marks[i]``: ``mark(working[i])`` (what the judge found in the message when it matters,
    else None), and ``origins[i]``: ``origin_of.get(id(working[i]), -1)``, for the last
    ``working`` given to ``update``. ``mark`` must give the same answer for the same message
    object (``clear`` when it would not: the judge learnt new golds); a position's mark may be
    set to None by its owner when the message no longer matters."""

    def __init__(self, mark: Callable[[Message], M | None]) -> None:
        self.mark = mark
        self.marks: list[M | None] = []
        self.origins: list[int] = []
        self._seen: list[Message] = []
        self._origin_of: Mapping[int, int] | None = None

    def clear(self) -> None:
        del self._seen[:], self.marks[:], self.origins[:]

    def update(self, working: Sequence[Message], origin_of: Mapping[int, int] | None) -> None:
        if origin_of is not self._origin_of:  # other origins: every position's is looked up again
            self.clear()
            self._origin_of = origin_of
        seen, marks, origins, mark = self._seen, self.marks, self.origins, self.mark
        changed = cut_dropped_runs(seen, working, self._cut)
        if len(changed) > REPLACED_LIMIT:  # not a few replaced: walk again from the first change
            first = changed[0]
            del seen[first:], marks[first:], origins[first:]
            changed = []
        for i in changed:
            message = seen[i] = working[i]
            marks[i] = mark(message)
            origins[i] = origin_of.get(id(message), -1) if origin_of is not None else -1
        if len(seen) > len(working):
            del seen[len(working) :], marks[len(working) :], origins[len(working) :]
        if len(seen) < len(working):
            new = list(islice(working, len(seen), None))
            seen.extend(new)
            marks.extend(map(mark, new))
            if origin_of is not None:
                origins.extend(map(origin_of.get, map(id, new), repeat(-1)))
            else:
                origins.extend(repeat(-1, len(new)))

    def _cut(self, first: int, end: int) -> bool:
        del self._seen[first:end], self.marks[first:end], self.origins[first:end]
        return True
