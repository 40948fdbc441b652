"""Real tokenizers, loaded offline, each counting a chat message as its provider bills it.

A tokenizer is loaded once per process (``get_tokenizer`` caches by name). Files come from
packages that ship them (see ``ctxbench.tokens.sources``), never from the network.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path

from ctxbench.errors import ConfigError
from ctxbench.transcripts.model import Message


def litellm_tokenizer_dir() -> Path:
    """The folder in which litellm ships real tokenizer files (tiktoken ranks, HF JSON)."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        raise ConfigError("litellm is not installed: it carries the offline tokenizer files")
    return Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"


class Tokenizer(ABC):
    """Counts text and chat messages. ``per_message`` and ``per_request`` are the framing
    tokens a chat template adds around each message and once per request."""

    name: str
    per_message: int = 3
    per_request: int = 3

    @abstractmethod
    def count(self, text: str) -> int:
        """Tokens in plain text, without any chat framing."""

    def count_message(self, message: Message) -> int:
        """Tokens a message costs inside a prompt: framing, content, tool calls, tool name."""
        tokens = self.per_message + self.count(message.content)
        for call in message.tool_calls:
            tokens += self.count(call.name) + self.count(call.arguments) + self.per_message
        if message.name and message.role == "tool":
            tokens += self.count(message.name)
        return tokens


class TiktokenTokenizer(Tokenizer):
    """An OpenAI BPE encoding (cl100k_base, o200k_base) through tiktoken; OpenAI's chat
    format adds 3 tokens per message and 3 to prime the reply."""

    def __init__(self, encoding: str) -> None:
        # tiktoken looks for its cached rank files here; litellm ships them under the same names.
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(litellm_tokenizer_dir()))
        import tiktoken

        self.name = encoding
        self._encoding = tiktoken.get_encoding(encoding)
        self._encode = functools.partial(self._encoding.encode_ordinary)

    def count(self, text: str) -> int:
        return len(self._encode(text)) if text else 0

    def encode(self, text: str) -> list[int]:
        return self._encode(text)


TokenizerFactory = Callable[[], Tokenizer]
_FACTORIES: dict[str, TokenizerFactory] = {
    "cl100k_base": lambda: TiktokenTokenizer("cl100k_base"),
    "o200k_base": lambda: TiktokenTokenizer("o200k_base"),
}
_ALIASES: dict[str, str] = {}


def register_tokenizer(name: str, factory: TokenizerFactory, aliases: Sequence[str] = ()) -> None:
    """Make a tokenizer available by name (and by model-name aliases)."""
    _FACTORIES[name] = factory
    for alias in aliases:
        _ALIASES[alias] = name


def available_tokenizers() -> list[str]:
    return sorted(_FACTORIES)


def resolve_tokenizer_name(name: str) -> str:
    """Map a tokenizer or model name to a registered tokenizer name, or fail listing them."""
    if name in _FACTORIES:
        return name
    if name in _ALIASES:
        return _ALIASES[name]
    raise ConfigError(f"unknown tokenizer {name!r}; available: {', '.join(available_tokenizers())}")


@functools.cache
def get_tokenizer(name: str) -> Tokenizer:
    """The tokenizer for a name, loaded once per process."""
    return _FACTORIES[resolve_tokenizer_name(name)]()
