"""Appends messages while counting real tokens and keeping every planted value unique.

The guard is what makes a probe honest: before a fact is needed, its gold value may appear
only in the one message that states it. Filler text that happens to contain a value (a
random 5-digit number equal to a planted port) is rewritten so it no longer does.
"""

from __future__ import annotations

from ctxbench.datagen.facts import Fact
from ctxbench.tokens import TokenCounter, get_tokenizer
from ctxbench.transcripts.model import Message, ToolCall


def message_text(message: Message) -> str:
    """All text of a message a reader (or a model) sees: content, tool names and arguments."""
    return "\n".join([message.content, *(f"{c.name} {c.arguments}" for c in message.tool_calls)])


def _perturb(value: str) -> str:
    """A different string of the same shape: the last letter or digit moved on by one."""
    chars = list(value)
    for i in range(len(chars) - 1, -1, -1):
        c = chars[i]
        if c.isdigit():
            chars[i] = str((int(c) + 1) % 10)
            return "".join(chars)
        if c.isascii() and c.isalpha():
            base = ord("a") if c.islower() else ord("A")
            chars[i] = chr(base + (ord(c) - base + 1) % 26)
            return "".join(chars)
    return value + "_"


class Builder:
    """Holds the messages of one transcript being generated and its running token count."""

    def __init__(self, facts: list[Fact], tokenizer: str = "o200k_base") -> None:
        self.messages: list[Message] = []
        self.facts = facts
        self.counter = TokenCounter(get_tokenizer(tokenizer))
        self.tokens = self.counter.tokenizer.per_request
        self.calls = 0
        self._tool_ids = 0

    def next_call_id(self, rng_suffix: str) -> str:
        self._tool_ids += 1
        return f"call_{self._tool_ids:03d}{rng_suffix}"

    def _guard(self, message: Message, exempt: tuple[Fact | None, ...]) -> Message:
        for fact in self.facts:
            if fact in exempt or fact.needed_at is not None:
                continue
            gold = fact.value
            if gold not in message_text(message):
                continue
            alt = gold
            while gold in message_text(message):
                alt = _perturb(alt)
                message = message.replace(
                    content=message.content.replace(gold, alt),
                    tool_calls=tuple(
                        ToolCall(c.id, c.name, c.arguments.replace(gold, alt)) for c in message.tool_calls
                    ),
                )
        return message

    def add(self, message: Message, states: Fact | None = None, needs: Fact | None = None) -> int:
        """Append a message; ``states``/``needs`` mark it as where a fact is stated or used."""
        message = self._guard(message, (states, needs))
        index = len(self.messages)
        text = message_text(message)
        for fact, role in ((states, "states"), (needs, "needs")):
            if fact is not None and fact.value not in text:
                raise AssertionError(f"message {index} {role} fact {fact.id} but lacks its value")
        if states is not None:
            states.stated_at = index
        if needs is not None:
            needs.needed_at = index
        self.messages.append(message)
        self.tokens += self.counter.message(message)
        if message.role == "assistant":
            self.calls += 1
        return index
