"""Per-message token counts, cached on the message so each message is counted once.

A counter counts messages as the provider received them. Most agents send them as they are recorded
(the chat template frames them); an agent that wrote its tool calls into the prompt instead
(OpenHands' mock function calling, ``metadata["tools_rendering"]``) sent some of them as other text,
and ``TokenCounter.for_transcript`` counts them so. The messages themselves stay as recorded: what
strategies and estimators see does not change.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from operator import attrgetter

from ctxbench.tokens.line_starts import LINE_START
from ctxbench.tokens.tokenizers import Tokenizer
from ctxbench.transcripts.model import Message, Transcript
from ctxbench.transcripts.rendering import RENDERERS, SentAs
from ctxbench.transcripts.running import RunningSum
from ctxbench.transcripts.tool_schemas import tool_schemas, tools_rendering, tools_text

_TOKEN_CACHE = attrgetter("token_cache")


class TokenCounter:
    """Counts messages with one tokenizer, caching each message's count on the message.
    ``rendering``: how the agent sent the messages (None: as recorded; see ``for_transcript``)."""

    def __init__(self, tokenizer: Tokenizer, rendering: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.rendering = rendering
        self.renderer = RENDERERS.get(rendering) if rendering else None
        self.key = f"exact:{tokenizer.name}" + (f":{rendering}" if rendering else "")
        self.tokenized_chars = 0  # how much text was actually tokenized (cache misses)

    def for_transcript(self, transcript: Transcript) -> TokenCounter:
        """This counter for what ``transcript``'s agent sent (itself when the rendering is the same)."""
        rendering = tools_rendering(transcript)
        return self if rendering == self.rendering else type(self)(self.tokenizer, rendering)

    def message(self, message: Message) -> int:
        cached = message.token_cache.get(self.key)
        if cached is None:
            if self.renderer is None:
                cached = self.tokenizer.count_message(message)
            else:
                cached = count_rendered(self.tokenizer, message, self.renderer.message(message))
            message.token_cache[self.key] = cached
            self.tokenized_chars += message.char_count
        return cached

    def sizes(self, messages: Iterable[Message]) -> list[int]:
        """``[self.message(m) for m in messages]`` with the cached counts looked up in C: billing
        sizes a whole prompt whenever its first message changed (DB-GPT's system prompt, every call)."""
        messages = list(messages)
        counts: list[int | None] = list(map(dict.get, map(_TOKEN_CACHE, messages), repeat(self.key)))
        if None in counts:
            return [self.message(m) if c is None else c for m, c in zip(messages, counts, strict=True)]
        return counts  # type: ignore[return-value]  # no None left: every count was cached

    def precount(self, messages: Iterable[Message]) -> None:
        """Count (and cache) each message now: the replay counts what it will need in one pass."""
        self.sizes(messages)

    def prompt(self, messages: Sequence[Message]) -> int:
        """Tokens of a whole request: every message plus the per-request framing."""
        key, total = self.key, self.tokenizer.per_request
        for m in messages:  # inlined cache lookup: strategies recount the whole context on every call
            cached = m.token_cache.get(key)
            total += self.message(m) if cached is None else cached
        return total

    def running_prompt(self) -> Callable[[Sequence[Message]], int]:
        """``prompt`` for one evolving working context (the provider's, an estimator's): only
        the messages after its unchanged prefix are looked up again."""
        total, per_request = RunningSum(self.message), self.tokenizer.per_request
        return lambda messages: per_request + total(messages)


def tools_tokens(tokenizer: Tokenizer, transcript: Transcript) -> int:
    """Tokens of the transcript's recorded tool schemas, sent with every request (0 without): as
    the provider's template renders native tools where it has its own rendering (DeepSeek V3.2),
    else as ``tools_text``."""
    schemas = tool_schemas(transcript)
    if schemas and tokenizer.tools_text is not None and tools_rendering(transcript) is None:
        return _count_once(tokenizer, tokenizer.tools_text(schemas))
    text = tools_text(transcript)
    return _count_once(tokenizer, text) if text else 0


@functools.lru_cache(maxsize=64)
def _count_once(tokenizer: Tokenizer, text: str) -> int:
    """One count per tool-schema text: every cell replaying an agent's transcripts sends the same."""
    return tokenizer.count(text)


def count_rendered(tokenizer: Tokenizer, message: Message, sent: SentAs | None) -> int:
    """Tokens of a message as its agent sent it (``ctxbench.transcripts.rendering``). The message's
    own text is counted once for both renderings (``count_content``); what a renderer adds is
    counted from the seam (exact where lines start pre-tokens, else the whole text again). What
    every request added (the tools' description) is in ``tools_tokens``."""
    if sent is None:
        return tokenizer.count_message(message)
    if sent.text is not None:
        text = sent.text
        if message.content and text.startswith(message.content):
            content = tokenizer.count_appended(
                message.content, tokenizer.count_content(message), text[len(message.content) :]
            )
        else:
            content = tokenizer.count(text)
        return tokenizer.message_overhead(sent.role) + content
    prefix = sent.prefix  # ends a line: the content starts the next
    if prefix and tokenizer.splits_at_line_starts and LINE_START.match("\n" + message.content[:64]):
        content = tokenizer.count(prefix) + tokenizer.count_content(message)
    else:
        content = tokenizer.count(prefix + message.content) if prefix else tokenizer.count_content(message)
    return tokenizer.message_overhead(sent.role) + content
