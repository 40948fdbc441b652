"""Per-message token counts, cached on the message so each message is counted once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from operator import attrgetter

from ctxbench.tokens.tokenizers import Tokenizer
from ctxbench.transcripts.model import Message, Transcript
from ctxbench.transcripts.running import RunningSum
from ctxbench.transcripts.tool_schemas import tools_text

_TOKEN_CACHE = attrgetter("token_cache")


class TokenCounter:
    """Counts messages with one tokenizer, caching each message's count on the message."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.key = f"exact:{tokenizer.name}"
        self.tokenized_chars = 0  # how much text was actually tokenized (cache misses)

    def message(self, message: Message) -> int:
        cached = message.token_cache.get(self.key)
        if cached is None:
            cached = self.tokenizer.count_message(message)
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
    """Tokens of the transcript's recorded tool schemas, sent with every request (0 without)."""
    text = tools_text(transcript)
    return tokenizer.count(text) if text else 0
