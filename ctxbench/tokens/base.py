"""What every tokenizer is: ``Tokenizer`` counts text and chat messages, framing included.

The implementations (``ctxbench.tokens.tokenizers`` for tiktoken's encodings and the name table,
``ctxbench.tokens.bpe``, ``ctxbench.tokens.hf``) import this module; it imports none of them, so
the table that names them can import them in turn.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ctxbench.tokens import count_cache
from ctxbench.tokens.line_starts import PieceCounter
from ctxbench.transcripts.model import Message, ToolCall

# Texts this long are counted from tiktoken's token buffer (4 bytes a token) instead of its list
# of Python ints (about 40): no transient list the size of a long tool result. Shorter texts keep
# the list, whose call costs less.
BUFFER_COUNT_CHARS = 4096
# A layer's copy of a message (``Message.origin`` set) with content this short is a placeholder or
# a notice, whose few texts recur call after call ("Old environment output: (12 lines omitted)"):
# its content and tool name are counted once per text per tokenizer (up to COPY_MEMO_ENTRIES texts).
COPY_MEMO_CHARS = 256
COPY_MEMO_ENTRIES = 4096


def tiktoken_counter(encoding: Any) -> Callable[[str], int]:
    """Token count of plain text with a ``tiktoken.Encoding``, special-token text as ordinary
    text (what ``encode_ordinary`` does); the same count either way, less memory for long text."""
    # encode_to_numpy imports numpy on its first call: do it with the tokenizer, not in the
    # middle of the first long count (0.1 s, and OpenBLAS starting its threads).
    import numpy  # noqa: F401

    ordinary = encoding.encode_ordinary
    # Short texts go to the Rust method encode_ordinary wraps (DB-GPT's replay counts thousands of
    # pieces of a few words: the wrapper's frame is a fifth of such a count); the wrapper itself
    # only when that method refuses the text (lone surrogates, which it replaces first).
    core = getattr(getattr(encoding, "_core_bpe", None), "encode_ordinary", ordinary)
    # No special token is allowed and none is checked for: the buffer holds encode_ordinary's ids.
    buffered = functools.partial(encoding.encode_to_numpy, allowed_special=frozenset(), disallowed_special=())

    def count(text: str) -> int:
        if len(text) >= BUFFER_COUNT_CHARS:
            return len(buffered(text))
        try:
            return len(core(text))
        except UnicodeEncodeError:
            return len(ordinary(text))

    return count


def content_key(tokenizer: str) -> str:
    """Where ``Tokenizer.count_content`` keeps the count of a message's content in its ``token_cache``
    (DB-GPT's estimator puts there the count of a progress block it summed line by line)."""
    return f"content:{tokenizer}"


def arguments_key(tokenizer: str, call: int) -> str:
    """Where ``Tokenizer.count_message`` keeps the count of a message's ``call``-th tool-call
    arguments in its ``token_cache`` (DB-GPT's estimate counts them again inside its text)."""
    return f"arguments:{call}:{tokenizer}"


class Tokenizer(ABC):
    """Counts text and chat messages.

    ``per_message`` and ``per_request`` are the framing tokens a chat template adds around
    each message and once per request; ``role_overhead`` (when set) gives the framing by
    role, ``per_tool_call`` the framing around each tool call (default ``per_message``).
    """

    name: str
    per_message: int = 3
    per_request: int = 3
    role_overhead: dict[str, int] | None = None
    per_tool_call: int | None = None
    count_tool_name: bool = True
    # (before name, between name and arguments, after arguments): a tool call rendered as its
    # template renders it and counted as one string, so merges across the seams are exact.
    tool_call_pieces: tuple[str, str, str] | None = None
    # A template that renders a message's tool calls (and the request's tools) as text of its own
    # (DeepSeek V3.2's DSML): the calls are counted as that text, in one piece.
    tool_calls_text: Callable[[Sequence[ToolCall]], str] | None = None
    tools_text: Callable[[Sequence[dict[str, Any]]], str] | None = None
    reasoning_end: int = 0  # tokens that close a resent reasoning part (DeepSeek thinking mode's </think>)
    # role -> (text before, text after) when each message is counted as one text (``framing``).
    whole_message_pieces: dict[str, tuple[str, ...]] | None = None
    # True when the split pattern makes every line start a pre-token boundary (see
    # ``ctxbench.tokens.line_starts``): appended text is then counted from the last line only.
    splits_at_line_starts: bool = False
    _pieces: PieceCounter | None = None
    _copy_counts: dict[str, int] | None = None  # see COPY_MEMO_CHARS
    # What makes this tokenizer's counts the same in every process (its encoding and the code that
    # counts with it): long texts' counts are then shared through ``ctxbench.tokens.count_cache``.
    # None: never shared (a tokenizer whose files could change under the same name).
    cache_identity: str | None = None

    @abstractmethod
    def count(self, text: str) -> int:
        """Tokens in plain text, without any chat framing."""

    def count_template(self, text: str) -> int:
        """Tokens of chat-template text, in which special tokens count as one each."""
        return self.count(text)

    def message_overhead(self, role: str) -> int:
        if self.role_overhead is None:
            return self.per_message
        return self.role_overhead.get(role, self.per_message)

    def count_content(self, message: Message, count: Callable[[str], int] | None = None) -> int:
        """Tokens of the message's content alone, cached on the message: estimators that count
        content without framing (DB-GPT's) share this count instead of tokenizing again.

        ``count``: how a text not counted yet is counted, when the caller has a way that gives
        the same number as ``self.count`` and leaves something it needs later remembered
        (DB-GPT's estimator: ``ctxbench.tokens.dbgpt``); ``self.count`` by default."""
        key = content_key(self.name)
        cached = message.token_cache.get(key)
        if cached is None:
            base = message.appended_to
            content = message.content
            if base is None and count is None and message.origin is not None and len(content) <= COPY_MEMO_CHARS:
                cached = self.copy_count(content)
            elif base is None:  # a long text's count may come from another cell (count_cache)
                cached = count_cache.counted(self.cache_identity, content, count or self.count)
            else:
                suffix = message.content[len(base.content) :]
                cached = self.count_appended(base.content, self.count_content(base, count), suffix)
            message.token_cache[key] = cached
        return cached

    def copy_count(self, text: str) -> int:
        """``self.count(text)`` for a short text of a layer's copy, remembered by the text."""
        memo = self._copy_counts
        if memo is None:
            memo = self._copy_counts = {}
        tokens = memo.get(text)
        if tokens is None:
            if len(memo) >= COPY_MEMO_ENTRIES:
                memo.clear()
            tokens = memo[text] = self.count(text)
        return tokens

    def count_appended(self, text: str, text_tokens: int, suffix: str) -> int:
        """Tokens of ``text + suffix`` given ``text_tokens``, the count of ``text``: from the
        text's last line when the split pattern allows it, else counted in full."""
        if not self.splits_at_line_starts:
            return self.count(text + suffix)
        return self.pieces().appended(text, text_tokens, suffix)

    def pieces(self) -> PieceCounter:
        """This tokenizer's counter of text pieces (with its remembered counts)."""
        if self._pieces is None:
            self._pieces = PieceCounter(self.piece_count())
        return self._pieces

    def piece_count(self) -> Callable[[str], int]:
        """The quickest exact ``count`` for short pieces (no call in between when the tokenizer allows)."""
        return self.count

    def count_message(self, message: Message) -> int:
        """Tokens a message costs inside a prompt: framing, content, tool calls, tool name."""
        if self.whole_message_pieces is not None:
            return self._count_whole(message, self.whole_message_pieces)
        tokens = self.message_overhead(message.role) + self.count_content(message)
        per_call = self.per_message if self.per_tool_call is None else self.per_tool_call
        for i, call in enumerate(message.tool_calls):
            if self.tool_call_pieces is not None:
                before, between, after = self.tool_call_pieces
                tokens += self.count_template(f"{before}{call.name}{between}{call.arguments}{after}")
            else:
                arguments = message.token_cache[arguments_key(self.name, i)] = self.count(call.arguments)
                tokens += self.count(call.name) + arguments + per_call
        if message.name and message.role == "tool" and self.count_tool_name:
            name = message.name
            tokens += self.copy_count(name) if message.origin is not None else self.count(name)
        return tokens

    def _count_whole(self, message: Message, pieces: dict[str, tuple[str, ...]]) -> int:
        """A message's framing, content and tool calls counted as one text (the seams merge)."""
        before, after = (pieces.get(message.role) or pieces.get("user") or ("", ""))[:2]
        calls = self.tool_calls_text(message.tool_calls) if self.tool_calls_text and message.tool_calls else ""
        return self.count_template(f"{before}{message.content}{calls}{after}")
