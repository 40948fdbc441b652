"""Grouping messages into rounds: an assistant turn together with the results it caused."""

from __future__ import annotations

from collections.abc import Sequence

from ctxbench.transcripts.model import Message


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
        if is_observation(message) or (message.role == "tool" and _last_result_of_turn(messages, i)):
            rounds.append(current)
            current = []
    if current:
        rounds.append(current)
    return rounds


def _last_result_of_turn(messages: Sequence[Message], i: int) -> bool:
    """A tool message ends a round when the next message is not another tool result."""
    return i + 1 >= len(messages) or messages[i + 1].role != "tool"
