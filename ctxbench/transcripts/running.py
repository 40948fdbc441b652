"""Running totals over a working context that changes mostly at its end.

Between two calls of a replay the working context grows by the new messages and a
compaction layer replaces or drops a few messages; everything before the first changed
message is the very same objects as last time. Sizing the whole context on every call
(estimators, char budgets, the provider's count) is then O(calls x messages) in Python,
which on a long transcript costs more than tokenizing it. These helpers remember the last
list they saw, find the unchanged prefix by identity (in C: ``map(operator.is_not, ...)``),
and only walk what changed. Messages are immutable, so a value computed for an object stays
true for that object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, count, islice
from operator import is_not

from ctxbench.transcripts.model import Message

REPLACED_LIMIT = 16  # more changed positions than this: treat as a shift and re-walk from the first


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


def cut_dropped_runs(seen: list[Message], current: Sequence[Message], cut: Callable[[int, int], bool]) -> list[int]:
    """Bring ``seen`` in line with ``current`` where whole runs were dropped (a window or pruning
    drops old rounds, shifting everything after them): while more than ``REPLACED_LIMIT``
    positions differ and ``current`` continues at the first one with a later object of ``seen``,
    ``cut(first, end)`` removes ``seen[first:end]`` and what its owner keeps beside it, or returns
    False to stop. Returns the positions that still differ (see ``replaced_positions``)."""
    changed = replaced_positions(seen, current)
    for _ in range(REPLACED_LIMIT):
        end = dropped_run_end(seen, current, changed[0]) if len(changed) > REPLACED_LIMIT else None
        if end is None or not cut(changed[0], end):
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
        self._seen: list[Message] = []
        self._values: list[int] = []
        self._total = 0

    def __call__(self, messages: Sequence[Message]) -> int:
        seen, values, value = self._seen, self._values, self.value
        changed = cut_dropped_runs(seen, messages, self._cut)
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
        for message in islice(messages, len(seen), None):
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
    already examined: ``unchanged(messages)`` is how many leading ones are the same objects."""

    def __init__(self) -> None:
        self._seen: list[Message] = []

    def unchanged(self, messages: Sequence[Message]) -> int:
        return common_prefix(self._seen, messages)

    def remember(self, messages: Sequence[Message]) -> None:
        self._seen = list(messages)


class RunningSums:
    """``RunningSum`` for several lists that evolve side by side.

    A view strategy (DB-GPT) sizes its whole history and the compacted copies it makes of it,
    every call: one follower would re-walk the history each time it switches between them.
    Each list is summed by the follower that saw the most similar list (fewest replaced
    positions, then closest length); a list unlike all of them gets a new follower while
    there are free slots."""

    def __init__(self, value: Callable[[Message], int], slots: int = 4) -> None:
        self.value = value
        self.slots = slots
        self._sums: list[RunningSum] = []

    def __call__(self, messages: Sequence[Message]) -> int:
        best: RunningSum | None = None
        best_key: tuple[int, int] | None = None
        for running in self._sums:
            seen = running._seen
            key = (len(replaced_positions(seen, messages)), abs(len(seen) - len(messages)))
            if best_key is None or key < best_key:
                best, best_key = running, key
        free = len(self._sums) < self.slots
        if best is None or (best_key[0] > REPLACED_LIMIT and free and _unrelated(best, messages)):
            best = RunningSum(self.value)
            self._sums.append(best)
        return best(messages)


def _unrelated(running: RunningSum, messages: Sequence[Message]) -> bool:
    """True when ``messages`` shares little with what ``running`` saw: neither a long common
    prefix nor a dropped run (which ``RunningSum`` cuts out cheaply)."""
    seen = running._seen
    first = common_prefix(seen, messages)
    return first < len(messages) // 2 and dropped_run_end(seen, messages, first) is None
