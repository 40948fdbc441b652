"""Real tokenizers, loaded offline, each counting a chat message as its provider bills it.

A tokenizer is loaded once per process (``get_tokenizer`` caches by name). Files come from
packages that ship them (see ``ctxbench.tokens.sources``), never from the network.

Names ``get_tokenizer`` accepts:

- a registered tokenizer (``available_tokenizers()``) or a model name that maps to one
  (``gpt-4o``, ``llama-3.1-70b``, ``qwen2.5-coder-32b``, ``deepseek-v3``, ``mistral-large``,
  ``claude-sonnet-4``; a ``provider/`` prefix is ignored);
- ``hf:/path/to/dir-or-tokenizer.json``: a local Hugging Face tokenizer;
- ``PRIMARY|FALLBACK`` (e.g. ``my-model|cl100k_base``): use FALLBACK, with a logged warning,
  when PRIMARY is unknown or its files are missing. This is how a model config asks for a
  fallback; without it an unknown name is a ``ConfigError`` listing what is available.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.tokens import sources
from ctxbench.tokens.line_starts import PieceCounter
from ctxbench.transcripts.model import Message, ToolCall

log = logging.getLogger(__name__)

HF_PREFIX = "hf:"
FALLBACK_SEP = "|"
# DB-GPT's Layer 1 keeps this many characters of an old observation (its default
# truncated_observation_max_chars): a tool result's count remembers its start's count.
OBSERVATION_HEAD_CHARS = 200
# Texts this long are counted from tiktoken's token buffer (4 bytes a token) instead of its list
# of Python ints (about 40): no transient list the size of a long tool result. Shorter texts keep
# the list, whose call costs less.
BUFFER_COUNT_CHARS = 4096


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


def arguments_key(tokenizer: str, call: int) -> str:
    """Where ``Tokenizer.count_message`` keeps the count of a message's ``call``-th tool-call
    arguments in its ``token_cache`` (DB-GPT's estimate counts them again inside its text)."""
    return f"arguments:{call}:{tokenizer}"


def litellm_tokenizer_dir() -> Path:
    """The folder in which litellm ships real tokenizer files (tiktoken ranks, HF JSON)."""
    return sources.litellm_tokenizer_dir()


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

    def count_content(self, message: Message) -> int:
        """Tokens of the message's content alone, cached on the message: estimators that count
        content without framing (DB-GPT's) share this count instead of tokenizing again."""
        key = f"content:{self.name}"
        cached = message.token_cache.get(key)
        if cached is None:
            base = message.appended_to
            if base is None:
                if message.role == "tool" and self.splits_at_line_starts:
                    # The start of a tool result (a pre-token boundary near 200 characters in) is
                    # counted apart and remembered: when DB-GPT's Layer 1 cuts it to that start,
                    # only the few characters after that boundary are tokenized again.
                    cached = self.pieces().with_head(message.content, OBSERVATION_HEAD_CHARS)
                else:
                    cached = self.count(message.content)
            else:
                suffix = message.content[len(base.content) :]
                cached = self.count_appended(base.content, self.count_content(base), suffix)
            message.token_cache[key] = cached
        return cached

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
            tokens += self.count(message.name)
        return tokens

    def _count_whole(self, message: Message, pieces: dict[str, tuple[str, ...]]) -> int:
        """A message's framing, content and tool calls counted as one text (the seams merge)."""
        before, after = (pieces.get(message.role) or pieces.get("user") or ("", ""))[:2]
        calls = self.tool_calls_text(message.tool_calls) if self.tool_calls_text and message.tool_calls else ""
        return self.count_template(f"{before}{message.content}{calls}{after}")


class TiktokenTokenizer(Tokenizer):
    """An OpenAI BPE encoding (cl100k_base, o200k_base) through tiktoken; OpenAI's chat
    format adds 3 tokens per message and 3 to prime the reply."""

    def __init__(self, encoding: str) -> None:
        # tiktoken looks for its cached rank files here; litellm ships them under the same names.
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(litellm_tokenizer_dir()))
        import tiktoken

        from ctxbench.tokens.rank_cache import tiktoken_rank_cache

        self.name = encoding
        with tiktoken_rank_cache():
            self._encoding = tiktoken.get_encoding(encoding)
        # Reviewed split patterns (tests/test_line_starts.py checks the identity on both).
        self.splits_at_line_starts = encoding in ("cl100k_base", "o200k_base")
        self._count = tiktoken_counter(self._encoding)

    def count(self, text: str) -> int:
        return self._count(text) if text else 0

    def piece_count(self) -> Callable[[str], int]:
        return self._count  # counts "" as 0 too

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self._encoding.decode(list(ids))


TokenizerFactory = Callable[[], Tokenizer]


def _lazy(target: str, *args: str) -> TokenizerFactory:
    """A factory that imports its module only when the tokenizer is first used."""

    def factory() -> Tokenizer:
        module, func = target.split(":")
        return getattr(importlib.import_module(module), func)(*args)

    return factory


_FACTORIES: dict[str, TokenizerFactory] = {
    "cl100k_base": lambda: TiktokenTokenizer("cl100k_base"),
    "o200k_base": lambda: TiktokenTokenizer("o200k_base"),
    "llama3": _lazy("ctxbench.tokens.bpe:llama3"),
    "qwen2.5": _lazy("ctxbench.tokens.bpe:qwen", "qwen2.5"),
    "qwen3": _lazy("ctxbench.tokens.bpe:qwen", "qwen3"),
    "qwen3.5": _lazy("ctxbench.tokens.bpe:qwen", "qwen3.5"),
    "mistral-tekken": _lazy("ctxbench.tokens.bpe:tekken"),
    "deepseek-v3": _lazy("ctxbench.tokens.hf:deepseek_v3"),
    "deepseek-v3.2": _lazy("ctxbench.tokens.hf:deepseek_v32"),
    "claude-legacy": _lazy("ctxbench.tokens.hf:claude_legacy"),
}
_ALIASES: dict[str, str] = {
    "gpt-4": "cl100k_base",
    "gpt-4-turbo": "cl100k_base",
    "gpt-4-32k": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "text-embedding-3-small": "cl100k_base",
    "gpt-4o": "o200k_base",
    "gpt-4o-mini": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4.1-mini": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
    "llama-3.1-70b": "llama3",
    "llama-3.1-8b": "llama3",
    "llama-3.1-405b": "llama3",
    "llama-3.3-70b": "llama3",
    "qwen2.5-coder-32b": "qwen2.5",
    "qwen2.5-72b": "qwen2.5",
    "qwen3-coder-480b": "qwen3",
    # DeepSeek's API serves V3.2 under these names (its rendering, not V3's template: deepseek_dsml).
    "deepseek-chat": "deepseek-v3.2",
    "deepseek-r1": "deepseek-v3",
    "deepseek-reasoner": "deepseek-v3.2",
    "mistral-large": "mistral-tekken",
    "mistral-nemo": "mistral-tekken",
    "claude-3-5-sonnet": "claude-legacy",
    "claude-sonnet-4": "claude-legacy",
}
# Model-family prefixes, longest first, for dated or suffixed names (``gpt-4o-2024-08-06``,
# ``meta-llama-3.1-70b-instruct``, ``claude-3-7-sonnet-latest``).
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("o1-", "o200k_base"),
    ("o3-", "o200k_base"),
    ("o4-", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("meta-llama-3", "llama3"),
    ("llama-3", "llama3"),
    ("llama3", "llama3"),
    ("qwen3.5", "qwen3.5"),
    ("qwen3.6", "qwen3.5"),
    ("qwen3", "qwen3"),
    ("qwen2.5", "qwen2.5"),
    ("qwen2", "qwen2.5"),
    ("deepseek-v3.2", "deepseek-v3.2"),
    ("deepseek-v3", "deepseek-v3"),
    ("deepseek-r1", "deepseek-v3"),
    ("deepseek-chat", "deepseek-v3.2"),
    ("deepseek-reasoner", "deepseek-v3.2"),
    ("mistral-large", "mistral-tekken"),
    ("mistral-nemo", "mistral-tekken"),
    ("open-mistral-nemo", "mistral-tekken"),
    ("claude", "claude-legacy"),
)


def register_tokenizer(name: str, factory: TokenizerFactory, aliases: Sequence[str] = ()) -> None:
    """Make a tokenizer available by name (and by model-name aliases)."""
    _FACTORIES[name] = factory
    for alias in aliases:
        _ALIASES[alias] = name


def available_tokenizers() -> list[str]:
    return sorted(_FACTORIES)


def _unknown(name: str) -> ConfigError:
    return ConfigError(
        f"unknown tokenizer {name!r}; available: {', '.join(available_tokenizers())} "
        f"(or a model name such as {', '.join(sorted(_ALIASES)[:6])}, ...; "
        f"or hf:/path/to/tokenizer; or '{name}{FALLBACK_SEP}cl100k_base' for an explicit fallback)"
    )


def resolve_tokenizer_name(name: str) -> str:
    """Map a tokenizer or model name to a registered tokenizer name, or fail listing them.

    ``hf:`` names resolve to themselves (their path is checked); ``A|B`` resolves to A's
    tokenizer if A is known, else to B's with a logged warning."""
    if FALLBACK_SEP in name:
        primary, fallback = (part.strip() for part in name.split(FALLBACK_SEP, 1))
        try:
            return resolve_tokenizer_name(primary)
        except ConfigError as exc:
            log.warning("tokenizer %r: %s; falling back to %r as configured", primary, exc, fallback)
            return resolve_tokenizer_name(fallback)
    if name.startswith(HF_PREFIX):
        path = Path(name[len(HF_PREFIX) :]).expanduser()
        if not path.exists():
            raise ConfigError(f"{path}: no such Hugging Face tokenizer file or directory (from {name!r})")
        return f"{HF_PREFIX}{path.resolve()}"
    if name in _FACTORIES:
        return name
    if name in _ALIASES:
        return _ALIASES[name]
    base = name.lower().rsplit("/", 1)[-1]
    base = base.split(".", 1)[1] if base.startswith(("meta.", "mistral.", "anthropic.")) else base
    if base in _FACTORIES or base in _ALIASES:
        return base if base in _FACTORIES else _ALIASES[base]
    for prefix, target in _PREFIXES:
        if base.startswith(prefix):
            return target
    raise _unknown(name)


def _load(resolved: str) -> Tokenizer:
    if resolved.startswith(HF_PREFIX):
        from ctxbench.tokens.hf import from_path

        return from_path(resolved[len(HF_PREFIX) :])
    return _FACTORIES[resolved]()


@functools.cache
def get_tokenizer(name: str) -> Tokenizer:
    """The tokenizer for a name, loaded once per process.

    With ``A|B``, B is used (logged) when A is unknown or cannot be loaded."""
    if FALLBACK_SEP in name:
        primary, fallback = (part.strip() for part in name.split(FALLBACK_SEP, 1))
        try:
            return get_tokenizer(primary)
        except ConfigError as exc:
            log.warning("tokenizer %r unavailable (%s); falling back to %r as configured", primary, exc, fallback)
            return get_tokenizer(fallback)
    resolved = resolve_tokenizer_name(name)
    if resolved != name:
        return get_tokenizer(resolved)
    return _load(resolved)
