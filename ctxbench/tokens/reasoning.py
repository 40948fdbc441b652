"""Reasoning the provider counts again: the ``metadata["reasoning"]`` part of assistant messages.

Providers resend an assistant turn's reasoning only within the tool-use loop it belongs to: the
assistant messages since the last user message. Anthropic strips earlier turns' thinking from the
context window (``context_window = input_tokens - previous_thinking_tokens + current_turn``);
DeepSeek's thinking mode wants ``reasoning_content`` back during a tool loop and drops it when a new
question starts; OpenAI reasoning items are passed back between tool calls. Text reasoning is
counted with the prompt's tokenizer; encrypted reasoning (``redacted_thinking``) cannot be.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

from ctxbench.tokens.tokenizers import Tokenizer
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.running import REPLACED_LIMIT, noted_changes, replaced_positions

REASONING_KEY = "reasoning"


def reasoning_tokens(message: Message, tokenizer: Tokenizer) -> int:
    """Tokens of one assistant message's reasoning part (cached on the message)."""
    text = message.metadata.get(REASONING_KEY) if message.role == "assistant" else None
    if not isinstance(text, str) or not text:
        return 0
    key = f"reasoning:{tokenizer.name}"
    cached = message.token_cache.get(key)
    if cached is None:
        # A template may close the part with a token of its own (DeepSeek thinking mode's </think>).
        cached = message.token_cache[key] = tokenizer.count(text) + tokenizer.reasoning_end
    return cached


def tool_loop_reasoning(messages: Sequence[Message], tokenizer: Tokenizer, end: int | None = None) -> int:
    """Reasoning tokens a prompt carries: those of the assistant messages after its last user
    message (the prompt is ``messages[:end]``, all of it by default)."""
    total = 0
    for i in range(len(messages) if end is None else end, 0, -1):
        message = messages[i - 1]
        if message.role == "user":
            break
        total += reasoning_tokens(message, tokenizer)
    return total


class LoopReasoning:
    """``tool_loop_reasoning(messages, tokenizer)`` for one evolving working context (the
    provider's): the positions that changed since the last list are found in C (by its note,
    ``DerivedList``, or by identity) and only the messages after the last user message that
    changed are looked at; a change before that user message changes nothing (a view strategy
    rewrites its system prompt every call: DB-GPT). The loop is walked again only when the last
    user message itself may be gone. A tool loop can be the whole context (a coding agent given
    one task): walking it back on every call is O(calls x context)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._seen: Sequence[Message] = []  # the last list and its length then
        self._len = 0
        self._user = -1  # position of the last user message in the last list (-1: none)
        self._values: list[int] = []  # reasoning tokens of each message after it
        self._total = 0

    def _changes_after_user(self, messages: Sequence[Message]) -> tuple[list[int], int] | None:
        """The positions after the last user message whose object changed, and where the walk
        over the new messages starts (where the last list ended, or the first change when the
        changes were too many to list); None when the last user message itself may have changed."""
        seen, end, user = self._seen, min(self._len, len(messages)), self._user
        changed = noted_changes(seen, self._len, messages)
        if changed is None:
            changed = replaced_positions(seen, messages)
        changed = [i for i in changed if i < end]  # ``seen`` may have grown since (appended to)
        if user >= end or user in changed:
            return None
        if len(changed) > REPLACED_LIMIT:  # cut off: not every change is listed
            if changed[-1] <= user:
                return None  # the changes after the user message were not looked at
            return [], next(i for i in changed if i > user)
        return [i for i in changed if i > user], end

    def __call__(self, messages: Sequence[Message]) -> int:
        found = self._changes_after_user(messages)
        self._seen, self._len = messages, len(messages)
        tokenizer, values = self.tokenizer, self._values
        if found is None:  # the last user message may be gone: find it again
            start = len(messages)
            while start > 0 and messages[start - 1].role != "user":
                start -= 1
            self._user = start - 1
            values[:] = [reasoning_tokens(m, tokenizer) for m in islice(messages, start, None)]
            self._total = sum(values)
            return self._total
        changed, end = found
        user = self._user
        # A message after the last user message replaced by one that is not a user message (a
        # masked or compacted tool result): its value swapped in place, the loop not walked again.
        for i in changed:
            if messages[i].role == "user":  # a new last user message: walk on from it
                end = i
                break
            tokens = reasoning_tokens(messages[i], tokenizer)
            self._total += tokens - values[i - user - 1]
            values[i - user - 1] = tokens
        keep = end - user - 1
        if keep < len(values):
            self._total -= sum(islice(values, keep, None))
            del values[keep:]
        for i in range(end, len(messages)):
            message = messages[i]
            if message.role == "user":
                self._user = i
                values.clear()
                self._total = 0
            else:
                tokens = reasoning_tokens(message, tokenizer)
                values.append(tokens)
                self._total += tokens
        return self._total
