"""Running totals over a working context that changes mostly at its end.

Between two calls of a replay the working context grows by the new messages and a
compaction layer replaces or drops a few messages; everything before the first changed
message is the very same objects as last time. Sizing the whole context on every call
(estimators, char budgets, the provider's count) is then O(calls x messages) in Python,
which on a long transcript costs more than tokenizing it. These helpers remember the last
list they saw, find the unchanged prefix by identity (in C: ``map(operator.is_not, ...)``),
and only walk what changed. Messages are immutable, so a value computed for an object stays
true for that object.

A layer that builds its output from a list it was given knows what it changed; it can say so
(``DerivedList``), and a follower whose last list is that list takes the changes from the note
instead of comparing the two lists again (DB-GPT's history and Layer 1's copy of it are several
hundred messages, compared by two followers each, every call). A list passed again is taken as
unchanged up to where it was seen: the replay only ever appends to a list it passed on (a rewrite
strategy's prompt becomes its next history), and layers build new lists.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, count, islice
from operator import is_not

from ctxbench.transcripts.model import Message

REPLACED_LIMIT = 16  # more changed positions than this: treat as a shift and re-walk from the first
SKIPPED_REPLACEMENTS = 3  # replaced messages a dropped run may follow (see cut_dropped_runs)


class DerivedList(list[Message]):
    """A list with a note on how it was derived: ``base`` (a list object) as it was then, with
    the objects at ``changed`` replaced (ascending positions below ``base_len``, all of them) and
    anything after ``base_len`` appended. Like every list a layer returns, neither this list nor
    ``base`` (up to ``base_len``) is modified in place afterwards: appending is all the replay
    does to its lists.

    When ``base`` was itself derived (an earlier layer of the same call changed the list first),
    a second note (``prior``) says how this list differs from ``base``'s own base, so a follower
    that last saw the list before either layer (the provider, the request check) still takes the
    changes from a note. The notes of ``base`` are dropped: a chain of notes would keep every
    earlier list alive."""

    __slots__ = ("note", "prior")

    def __init__(self, items: Iterable[Message], base: Sequence[Message], changed: list[int]) -> None:
        super().__init__(items)
        self.note: tuple[Sequence[Message], int, list[int]] | None = (base, len(base), changed)
        self.prior: tuple[Sequence[Message], int, list[int]] | None = None
        if isinstance(base, DerivedList):
            if base.note is not None:
                first, first_len, first_changed = base.note
                merged = sorted({*first_changed, *(i for i in changed if i < first_len)})
                self.prior = (first, first_len, merged)
            base.note = base.prior = None


def noted_changes(given: Sequence[Message] | None, given_len: int, messages: Sequence[Message]) -> list[int] | None:
    """``replaced_positions(given[:given_len], messages)`` without comparing them: none when
    ``messages`` is ``given`` itself (seen at ``given_len`` or shorter: it can only have grown since),
    else from one of ``messages``' notes when it was derived from ``given`` (likewise); None otherwise."""
    if messages is given:
        return [] if len(messages) >= given_len else None
    if type(messages) is not DerivedList:
        return None
    note = messages.note
    if note is None or note[0] is not given:
        note = messages.prior
        if note is None or note[0] is not given:
            return None
    if note[1] < given_len:
        return None
    changed = note[2]
    return changed[: min(bisect_left(changed, min(given_len, len(messages))), REPLACED_LIMIT + 1)]


def common_prefix(seen: Sequence[object], current: Sequence[object]) -> int:
    """How many leading items are the same objects in both sequences."""
    return next(compress(count(), map(is_not, seen, current)), min(len(seen), len(current)))


def replaced_positions(seen: Sequence[object], current: Sequence[object], limit: int = REPLACED_LIMIT) -> list[int]:
    """Positions (within the shorter length) whose objects differ, found in C; at most
    ``limit + 1`` of them: more than ``limit`` means the lists shifted, not a few replacements."""
    return list(islice(compress(count(), map(is_not, seen, current)), limit + 1))


def dropped_run_end(seen: Sequence[object], current: Sequence[object], first: int) -> int | None:
    """If ``current`` continues at ``first`` with an object ``seen`` has later, at ``end``, the
    run ``seen[first:end]`` was dropped: return ``end`` (None when it was not a drop)."""
    if first >= len(current):
        return None
    target = current[first]
    return next((end for end in range(first + 1, len(seen)) if seen[end] is target), None)


def cut_dropped_runs(
    seen: list[Message],
    current: Sequence[Message],
    cut: Callable[[int, int], bool],
    changed: list[int] | None = None,
) -> list[int]:
    """Bring ``seen`` in line with ``current`` where whole runs were dropped (a window or pruning
    drops old rounds, shifting everything after them): while more than ``REPLACED_LIMIT``
    positions differ and ``current`` continues at the first one with a later object of ``seen``,
    ``cut(first, end)`` removes ``seen[first:end]`` and what its owner keeps beside it, or returns
    False to stop. Returns the positions that still differ (see ``replaced_positions``);
    ``changed``: those positions if the caller already has them."""
    if changed is None:
        changed = replaced_positions(seen, current)
    for _ in range(REPLACED_LIMIT):
        if len(changed) <= REPLACED_LIMIT:
            break
        # The run may start after a few replaced messages (a view strategy's system prompt changes
        # every call, and the rounds after it are dropped from the front).
        found = next(
            (
                (first, end)
                for first in changed[:SKIPPED_REPLACEMENTS]
                if (end := dropped_run_end(seen, current, first))
            ),
            None,
        )
        if found is None or not cut(*found):
            break
        changed = replaced_positions(seen, current)
    return changed


class RunningSum:
    """``sum(value(m) for m in messages)``, recomputed only where the list changed.

    A few replaced messages (a compacted tool result, DB-GPT's system prompt with its progress
    block) are swapped in place, dropped runs of messages (old rounds) are cut out; anything
    else (an insertion, a summary replacing many) re-walks from the first change.
    ``value`` must give the same number for the same message object (a cached count or a
    size). One instance should follow one evolving list (the replay's working context);
    given an unrelated list it is still exact, it just walks the whole list."""

    def __init__(self, value: Callable[[Message], int]) -> None:
        self.value = value
        self._seen: list[Message] = []  # a copy of the last list, kept in line with each new one
        self._values: list[int] = []
        self._total = 0
        self._given: Sequence[Message] | None = None  # the last list object itself (see ``DerivedList``)
        self._given_len = 0

    def __call__(self, messages: Sequence[Message], changed: list[int] | None = None) -> int:
        """The sum over ``messages``; ``changed``: ``replaced_positions(last list, messages)`` if known."""
        seen, values, value = self._seen, self._values, self.value
        if changed is None:
            changed = noted_changes(self._given, self._given_len, messages)
        self._given, self._given_len = messages, len(messages)
        if changed is None or len(changed) > REPLACED_LIMIT:  # few known changes: nothing to cut
            changed = cut_dropped_runs(seen, messages, self._cut, changed)
        if len(changed) > REPLACED_LIMIT:
            first = changed[0]
            del seen[first:], values[first:]
            self._total = sum(values)
        else:
            for i in changed:
                new = value(messages[i])
                self._total += new - values[i]
                seen[i], values[i] = messages[i], new
        if len(seen) > len(messages):
            self._total -= sum(values[len(messages) :])
            del seen[len(messages) :], values[len(messages) :]
        # A slice, not islice: skipping the part seen would touch every message object, each call.
        for message in messages[len(seen) :]:
            new = value(message)
            self._total += new
            seen.append(message)
            values.append(new)
        return self._total

    def _cut(self, first: int, end: int) -> bool:
        self._total -= sum(self._values[first:end])
        del self._seen[first:end], self._values[first:end]
        return True


class SeenPrefix:
    """Remembers the last list a layer returned, so the next call can skip the messages it
    already examined: ``unchanged(messages)`` is how many leading ones are the same objects.
    The list itself is kept (lists are never modified in place, only appended to: see
    ``DerivedList``), and the next one is compared with it only when it is neither that list
    grown nor noted as derived from it."""

    def __init__(self) -> None:
        self._seen: Sequence[Message] = []
        self._len = 0

    def unchanged(self, messages: Sequence[Message]) -> int:
        return self.compare(messages)[0]

    def compare(self, messages: Sequence[Message]) -> tuple[int, list[int] | None]:
        """``unchanged(messages)``, and the positions below the last list's length at which
        ``messages`` holds other objects when a note says which (all of them, ascending), else None."""
        seen, seen_len = self._seen, self._len
        changed = noted_changes(seen, seen_len, messages)
        if changed is None:
            return min(seen_len, common_prefix(seen, messages)), None
        start = changed[0] if changed else min(seen_len, len(messages))
        return start, changed if len(changed) <= REPLACED_LIMIT else None

    def positions(self, messages: Sequence[Message]) -> Iterable[int]:
        """The positions of ``messages`` that are not the same objects as in the list remembered:
        the replaced ones a note names (``DerivedList``) and those appended, or, without a note,
        every one from the first change on."""
        start, replaced = self.compare(messages)
        if replaced is None:
            return range(start, len(messages))
        return [*replaced, *range(min(self._len, len(messages)), len(messages))]

    def remember(self, messages: Sequence[Message]) -> None:
        self._seen, self._len = messages, len(messages)


class RunningSums:
    """``RunningSum`` for several lists that evolve side by side.

    A view strategy (DB-GPT) sizes its whole history and the compacted copies it makes of it,
    every call: one follower would re-walk the history each time it switches between them.
    Each list is summed by the follower whose last list is cheapest to bring up to date (fewest
    replaced positions plus the difference in length). A list that no follower can follow
    cheaply (many replaced positions, and no dropped run to cut out) gets the least recently
    used follower, so the followers of the lists that recur every call are kept."""

    def __init__(self, value: Callable[[Message], int], slots: int = 4) -> None:
        self.value = value
        self.slots = slots
        self._sums: list[RunningSum] = []
        self._used: list[int] = []  # when each follower was last used
        self._clock = 0

    def __call__(self, messages: Sequence[Message]) -> int:
        self._clock += 1
        best, best_changed = self._noted(messages)
        if best < 0:
            best, best_changed = self._grown(messages)
        if best >= 0:
            self._used[best] = self._clock
            return self._sums[best](messages, best_changed)
        best_cost = 0
        closest: list[int] = []  # the replaced positions of the closest follower
        for index, running in enumerate(self._sums):
            seen = running._seen
            changed = replaced_positions(seen, messages)
            cost = len(changed) + abs(len(seen) - len(messages))
            if best < 0 or cost < best_cost:
                best, best_cost, closest = index, cost, changed
        best_changed = closest
        if best < 0 or (best_cost > REPLACED_LIMIT and _unrelated(self._sums[best], messages, closest)):
            best_changed = None  # a fresh follower
            if len(self._sums) < self.slots:
                self._sums.append(RunningSum(self.value))
                self._used.append(0)
                best = len(self._sums) - 1
            else:
                best = min(range(len(self._sums)), key=self._used.__getitem__)
                self._sums[best] = RunningSum(self.value)
        self._used[best] = self._clock
        return self._sums[best](messages, best_changed)

    def _noted(self, messages: Sequence[Message]) -> tuple[int, list[int] | None]:
        """The follower whose last list ``messages`` is (grown), or was derived from with a few
        replacements by its note (``DerivedList``), without comparing them. Returns (follower,
        replaced positions) or (-1, None)."""
        for index, running in enumerate(self._sums):
            changed = noted_changes(running._given, running._given_len, messages)
            if changed is not None and len(changed) <= REPLACED_LIMIT:
                return index, changed
        return -1, None

    def _grown(self, messages: Sequence[Message]) -> tuple[int, list[int] | None]:
        """The common case without comparing every follower's list in full: a follower whose
        last list ``messages`` only extends, with a few messages replaced (its last message is
        still at its place). Returns (follower, replaced positions) or (-1, None)."""
        for index, running in enumerate(self._sums):
            seen = running._seen
            if 0 < len(seen) <= len(messages) and seen[-1] is messages[len(seen) - 1]:
                changed = replaced_positions(seen, messages)
                if len(changed) <= REPLACED_LIMIT:
                    return index, changed
        return -1, None


def _unrelated(running: RunningSum, messages: Sequence[Message], changed: list[int]) -> bool:
    """True when ``messages`` is not ``running``'s list with a run dropped (possibly after a few
    replaced messages), which ``RunningSum`` would cut out cheaply; ``changed``: the positions
    that differ (``replaced_positions``)."""
    seen = running._seen
    return not any(dropped_run_end(seen, messages, first) for first in changed[:SKIPPED_REPLACEMENTS])
