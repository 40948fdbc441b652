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


def common_prefix(seen: Sequence[object], current: Sequence[object]) -> int:
    """How many leading items are the same objects in both sequences."""
    return next(compress(count(), map(is_not, seen, current)), min(len(seen), len(current)))


class RunningSum:
    """``sum(value(m) for m in messages)``, recomputed only from the first changed message.

    ``value`` must give the same number for the same message object (a cached count or a
    size). One instance should follow one evolving list (the replay's working context);
    given an unrelated list it is still exact, it just walks the whole list."""

    def __init__(self, value: Callable[[Message], int]) -> None:
        self.value = value
        self._seen: list[Message] = []
        self._sums: list[int] = [0]  # _sums[k] = total of the first k messages seen

    def __call__(self, messages: Sequence[Message]) -> int:
        seen, sums = self._seen, self._sums
        same = common_prefix(seen, messages)
        if same < len(seen):
            del seen[same:]
            del sums[same + 1 :]
        total = sums[-1]
        if same < len(messages):
            value = self.value
            for message in islice(messages, same, None):
                total += value(message)
                sums.append(total)
            seen.extend(islice(messages, same, None))
        return total


class SeenPrefix:
    """Remembers the last list a layer returned, so the next call can skip the messages it
    already examined: ``unchanged(messages)`` is how many leading ones are the same objects."""

    def __init__(self) -> None:
        self._seen: list[Message] = []

    def unchanged(self, messages: Sequence[Message]) -> int:
        return common_prefix(self._seen, messages)

    def remember(self, messages: Sequence[Message]) -> None:
        self._seen = list(messages)
