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

from ctxbench.tokens.tokenizers import Tokenizer
from ctxbench.transcripts.model import Message

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
