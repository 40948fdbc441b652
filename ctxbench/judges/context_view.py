"""The deterministic judge's copy of the last context it judged, position by position.

A replay's context changes little from one checkpoint to the next (new messages at its end, a
few replaced, old rounds dropped), yet every checkpoint needs, for each message, whether it holds
a gold or a snapshot pointer and its place in the transcript. Looking both up for every message
of every checkpoint was most of judging a checkpoint (observation_masking judges at every call).
The view keeps both per position and brings them in line with the next context where it differs:
compared by identity with a private copy of the last one (``ctxbench.transcripts.running``, in
C), so it is exact for any list, however it was made, and walks only what changed; a context
noted as derived from the last one (``DerivedList``, whose contract is that neither list changes
in place afterwards) is not compared at all: the note names the replaced positions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, islice, repeat
from typing import Generic, TypeVar

from ctxbench.transcripts.model import Message
from ctxbench.transcripts.running import REPLACED_LIMIT, DerivedList, cut_dropped_runs, noted_changes

M = TypeVar("M")


class ContextView(Generic[M]):
    """``marks[i]``: ``mark(working[i])`` (what the judge found in the message when it matters,
    else None), ``origins[i]``: ``origin_of.get(id(working[i]), -1)``, and ``reach[i]``:
    ``max(origins[: i + 1])``, for the last ``working`` given to ``update``. ``mark`` must give
    the same answer for the same message object (``clear`` when it would not: the judge learnt new
    golds); a position's mark may be set to None by its owner when the message no longer matters."""

    def __init__(self, mark: Callable[[Message], M | None]) -> None:
        self.mark = mark
        self.marks: list[M | None] = []
        self.origins: list[int] = []
        # The highest origin up to each position: whether a checkpoint hides a message before one
        # (a probe's verdict skips transcript messages from where the fact was needed on) is then
        # one look-up, not a walk of the context before it. Origins mostly rise along a context,
        # so a change moves few of these (``_fix_reach`` stops where they agree again).
        self.reach: list[int] = []
        self._seen: list[Message] = []
        self._origin_of: Mapping[int, int] | None = None
        self._given: Sequence[Message] | None = None  # the last list object itself, for its notes
        self._given_len = 0

    def clear(self) -> None:
        del self._seen[:], self.marks[:], self.origins[:], self.reach[:]
        self._given = None

    def update(self, working: Sequence[Message], origin_of: Mapping[int, int] | None) -> None:
        if origin_of is not self._origin_of:  # other origins: every position's is looked up again
            self.clear()
            self._origin_of = origin_of
        seen, marks, origins, reach, mark = self._seen, self.marks, self.origins, self.reach, self.mark
        noted = None
        # Only a derived list's note, not "the same list again": a plain list may have changed in place.
        if type(working) is DerivedList and len(seen) == self._given_len:
            noted = noted_changes(self._given, self._given_len, working)
        self._given, self._given_len = working, len(working)
        changed = cut_dropped_runs(seen, working, self._cut, noted)
        if len(changed) > REPLACED_LIMIT:  # not a few replaced: walk again from the first change
            first = changed[0]
            del seen[first:], marks[first:], origins[first:], reach[first:]
            changed = []
        for i in changed:
            message = seen[i] = working[i]
            marks[i] = mark(message)
            origin = origin_of.get(id(message), -1) if origin_of is not None else -1
            if origin != origins[i]:
                origins[i] = origin
                self._fix_reach(i)
        if len(seen) > len(working):
            del seen[len(working) :], marks[len(working) :], origins[len(working) :], reach[len(working) :]
        if len(seen) < len(working):
            # A slice, not islice: skipping the part seen would touch every message object.
            new = working[len(seen) :]
            seen.extend(new)
            marks.extend(map(mark, new))
            known = len(origins)
            if origin_of is not None:
                origins.extend(map(origin_of.get, map(id, new), repeat(-1)))
            else:
                origins.extend(repeat(-1, len(new)))
            running = accumulate(origins[known:], max, initial=reach[-1] if reach else -1)
            reach.extend(islice(running, 1, None))  # without the initial value

    def _fix_reach(self, start: int) -> None:
        """``reach`` right again from ``start`` on, after the origin there changed (or the one
        before it: a run cut out): up to the first position where it already was."""
        origins, reach = self.origins, self.reach
        highest = reach[start - 1] if start else -1
        for i in range(start, len(reach)):
            origin = origins[i]
            if origin > highest:
                highest = origin
            if reach[i] == highest:
                return
            reach[i] = highest

    def _cut(self, first: int, end: int) -> bool:
        del self._seen[first:end], self.marks[first:end], self.origins[first:end], self.reach[first:end]
        self._fix_reach(first)
        return True
