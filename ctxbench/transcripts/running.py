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
        changed = replaced_positions(seen, messages)
        for _ in range(REPLACED_LIMIT):  # dropped runs (a window or pruning drops old rounds): cut them out
            if len(changed) <= REPLACED_LIMIT:
                break
            first = changed[0]
            end = dropped_run_end(seen, messages, first)
            if end is None:
                break
            self._total -= sum(values[first:end])
            del seen[first:end], values[first:end]
            changed = replaced_positions(seen, messages)
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


class SeenPrefix:
    """Remembers the last list a layer returned, so the next call can skip the messages it
    already examined: ``unchanged(messages)`` is how many leading ones are the same objects."""

    def __init__(self) -> None:
        self._seen: list[Message] = []

    def unchanged(self, messages: Sequence[Message]) -> int:
        return common_prefix(self._seen, messages)

    def remember(self, messages: Sequence[Message]) -> None:
        self._seen = list(messages)
