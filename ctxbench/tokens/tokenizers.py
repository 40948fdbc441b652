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
from collections.abc import Callable, Sequence
from pathlib import Path

from ctxbench.errors import ConfigError
from ctxbench.tokens import sources
from ctxbench.tokens.base import BUFFER_COUNT_CHARS as BUFFER_COUNT_CHARS  # re-exported: the older import path
from ctxbench.tokens.base import Tokenizer as Tokenizer
from ctxbench.tokens.base import arguments_key as arguments_key
from ctxbench.tokens.base import tiktoken_counter as tiktoken_counter

log = logging.getLogger(__name__)

HF_PREFIX = "hf:"
FALLBACK_SEP = "|"


def litellm_tokenizer_dir() -> Path:
    """The folder in which litellm ships real tokenizer files (tiktoken ranks, HF JSON)."""
    return sources.litellm_tokenizer_dir()


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
        # The encoding's ranks are fixed by its name (tiktoken checks their hash): counts are shared.
        self.cache_identity = f"tiktoken-{tiktoken.__version__}:{encoding}"

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
