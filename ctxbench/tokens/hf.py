"""Hugging Face ``tokenizer.json`` tokenizers: DeepSeek V3, legacy Claude, and any local one.

Loaded with the ``tokenizers`` library (Rust) from a file, or with ``transformers`` from a
local directory; never from the hub (HF_HUB_OFFLINE is set before transformers loads).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.tokens import framing, sources
from ctxbench.tokens.base import Tokenizer

log = logging.getLogger(__name__)


class HFTokenizer(Tokenizer):
    """A ``tokenizers.Tokenizer``: content is encoded without the post-processor's BOS/EOS
    (framing adds what the chat template adds); added special tokens in template text count
    as one each, as the Rust tokenizer matches them."""

    def __init__(self, name: str, backend: Any, template: framing.ChatTemplate | None) -> None:
        self.name = name
        self._backend = backend
        self.template = template
        if template is not None:
            framing.apply_template(self, template)

    def count(self, text: str) -> int:
        return len(self._backend.encode(text, add_special_tokens=False).ids) if text else 0

    def count_template(self, text: str) -> int:
        # Added tokens in the text are matched as one token each by the Rust tokenizer.
        return len(self._backend.encode(text, add_special_tokens=False).ids) if text else 0

    def encode(self, text: str) -> list[int]:
        return list(self._backend.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self._backend.decode(list(ids), skip_special_tokens=False)


def _from_file(path: Path) -> Any:
    from tokenizers import Tokenizer as RustTokenizer

    try:
        return RustTokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises its own Exception type
        raise ConfigError(f"{path}: not a Hugging Face tokenizer.json ({exc})") from None


def deepseek_v3() -> HFTokenizer:
    return HFTokenizer("deepseek-v3", _from_file(sources.deepseek_json()), framing.DEEPSEEK_V3)


def deepseek_v32() -> HFTokenizer:
    """The same vocabulary (litellm's file carries V3.2's added tokens: <think>, ｜DSML｜) with
    V3.2's request rendering, which DeepSeek's API uses (``ctxbench.tokens.deepseek_dsml``)."""
    return HFTokenizer("deepseek-v3.2", _from_file(sources.deepseek_json()), framing.DEEPSEEK_V32)


def claude_legacy() -> HFTokenizer:
    """Anthropic's only public tokenizer (Claude 1/2). Claude 3+ use an unpublished one;
    calibrate reports how far this one is from the usage a real transcript reports."""
    return HFTokenizer("claude-legacy", _from_file(sources.claude_json()), framing.CLAUDE_LEGACY)


def _template_framing(fast: Any, tok: HFTokenizer) -> None:
    """Framing from a local chat template: render one short user message with and without
    the reply priming and subtract the content's own tokens."""
    probe = "x"
    chat = [{"role": "user", "content": probe}]
    try:
        without = fast.apply_chat_template(chat, tokenize=False, add_generation_prompt=False)
        with_prompt = fast.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    except Exception as exc:  # templates are arbitrary Jinja; a failing one leaves no framing
        log.warning("%s: chat template could not be rendered (%s); counting without framing", tok.name, exc)
        tok.per_message = tok.per_request = 0
        return
    without, with_prompt = tok.count_template(without), tok.count_template(with_prompt)
    tok.per_message = max(without - tok.count(probe), 0)
    tok.per_request = max(with_prompt - without, 0)
    tok.per_tool_call = tok.per_message


def from_path(path: str | Path) -> HFTokenizer:
    """A local tokenizer.json, or a directory holding one (with its chat template if present)."""
    path = Path(path)
    name = f"hf:{path}"
    if path.is_file():
        tok = HFTokenizer(name, _from_file(path), None)
        tok.per_message = tok.per_request = 0  # a bare tokenizer.json has no chat template
        log.info("%s: no chat template beside a bare tokenizer.json; counting without framing", name)
        return tok
    if not (path / "tokenizer.json").is_file():
        raise ConfigError(f"{path}: no tokenizer.json in this directory")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    try:
        fast = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # transformers raises many types for a bad folder
        raise ConfigError(f"{path}: transformers could not load this tokenizer ({exc})") from None
    backend = getattr(fast, "backend_tokenizer", None) or _from_file(path / "tokenizer.json")
    tok = HFTokenizer(name, backend, None)
    if getattr(fast, "chat_template", None):
        _template_framing(fast, tok)
    else:
        tok.per_message = tok.per_request = 0
    return tok
