"""Grouping messages into rounds: an assistant turn together with the results it caused."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from ctxbench.transcripts.model import Message
from ctxbench.transcripts.running import REPLACED_LIMIT, noted_changes, replaced_positions


def group_rounds(messages: Sequence[Message]) -> list[list[int]]:
    """Split non-system messages into rounds, as lists of indices into ``messages``.

    A round starts at an assistant message when the current round already holds one; the
    tool results and user messages that follow an assistant message belong to its round.
    For DB-GPT ReAct text (``Observation:`` user messages) this gives the same rounds as
    :func:`dbgpt_rounds`.
    """
    rounds: list[list[int]] = []
    current: list[int] = []
    has_assistant = False
    for i, message in enumerate(messages):
        if message.role == "system":
            continue
        if message.role == "assistant" and has_assistant:
            rounds.append(current)
            current, has_assistant = [], False
        current.append(i)
        has_assistant = has_assistant or message.role == "assistant"
    if current:
        rounds.append(current)
    return rounds


def is_observation(message: Message) -> bool:
    """DB-GPT's rule: a user/human message whose text starts with ``Observation:``."""
    return message.role == "user" and message.content.lstrip().startswith("Observation:")


def dbgpt_rounds(messages: Sequence[Message]) -> list[list[int]]:
    """DB-GPT's grouping: a round is the run of non-system messages that ends at an
    observation (or a tool result); trailing incomplete messages form a last round."""
    rounds: list[list[int]] = []
    current: list[int] = []
    for i, message in enumerate(messages):
        if message.role == "system":
            continue
        current.append(i)
        if is_observation(message) or (message.role == "tool" and last_result_of_turn(messages, i)):
            rounds.append(current)
            current = []
    if current:
        rounds.append(current)
    return rounds


def last_result_of_turn(messages: Sequence[Message], i: int) -> bool:
    """A tool message ends a round when the next message is not another tool result."""
    return i + 1 >= len(messages) or messages[i + 1].role != "tool"


class DbgptRoundsCache:
    """``dbgpt_rounds`` for a list that changes mostly at its end (a view strategy's history:
    appended messages, and a system prompt swapped for its next version every call).

    Rounds that closed before the first changed message are kept; only the rest is walked
    again. After a call, ``first_change`` is the first position where the list differs from
    the previous one other than a swapped system message, and ``swapped`` the positions of
    swapped system messages before it (they belong to no round)."""

    def __init__(self) -> None:
        # The last list itself, and its length then: lists are only appended to afterwards (see
        # ``DerivedList``), so no copy is needed to know what it held.
        self._seen: Sequence[Message] = []
        self._seen_len = 0
        self.rounds: list[list[int]] = []
        self.ends: list[int] = []  # last index of each closed round
        self.systems: list[int] = []  # positions of system messages
        self.first_change = 0
        self.swapped: list[int] = []
        self.kept = 0  # leading rounds kept from the last call: the same lists, their messages unchanged

    def __call__(self, messages: Sequence[Message]) -> list[list[int]]:
        seen, seen_len = self._seen, self._seen_len
        changed = noted_changes(seen, seen_len, messages)
        if changed is None:
            changed = replaced_positions(seen[:seen_len] if len(seen) > seen_len else seen, messages)
        swapped = [i for i in changed if seen[i].role == "system" and messages[i].role == "system"]
        rest = [i for i in changed if i not in swapped]
        if rest:
            first = rest[0]
        elif len(changed) > REPLACED_LIMIT:
            first = changed[-1]
        else:
            first = min(seen_len, len(messages))
        self.first_change, self.swapped = first, [i for i in swapped if i < first]
        # A tool result closes its round only if the next message is not a tool result: a round
        # that closed at ``end`` is settled when ``end + 1`` is unchanged too.
        # Cut back in place: callers use the rounds only until the next call.
        keep = bisect_left(self.ends, first - 1)
        rounds, ends, systems = self.rounds, self.ends, self.systems
        del rounds[keep:], ends[keep:]
        self.kept = keep
        start = ends[-1] + 1 if ends else 0
        del systems[bisect_left(systems, start) :]
        current: list[int] = []
        for i in range(start, len(messages)):
            message = messages[i]
            if message.role == "system":
                systems.append(i)
                continue
            current.append(i)
            if is_observation(message) or (message.role == "tool" and last_result_of_turn(messages, i)):
                rounds.append(current)
                ends.append(i)
                current = []
        if current:
            rounds.append(current)
        self._seen, self._seen_len = messages, len(messages)
        return rounds
