"""Load DB-GPT's agent context package (``dbgpt==0.8.2``, ``dbgpt/agent/core/context/``) from the
installed wheel without running DB-GPT's package ``__init__`` files.

``import dbgpt.agent.core.context`` runs ``dbgpt.agent``'s ``__init__``, which pulls in most of
DB-GPT (and breaks with recent pydantic). The four modules themselves need only three names from
the rest of DB-GPT, which a small shim provides (reference.md section 7):

* ``dbgpt.core.ModelMessageRoleType``: the role constants (the same strings as DB-GPT's);
* ``dbgpt.model.utils.token_utils.ProxyTokenizerWrapper``: DB-GPT's own ``token_utils.py``, loaded
  by file, its counts memoised per text (a view strategy recounts its whole history every call;
  the count of a text does not change);
* ``dbgpt.agent.core.agent.AgentMessage`` (imported by Layer 3 when it builds its summary): a
  message with DB-GPT's ``content``, ``role`` and ``context`` fields.

``budget.py``, ``compact.py``, ``manager.py`` and ``storage.py`` are executed unmodified.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import types
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ctxbench.upstream import UpstreamMissing

VERSION = "0.8.2"
PACKAGE = "ctxbench_upstream_dbgpt_context"  # the name the context modules are loaded under
INSTALL = f'pip install --no-deps dbgpt=={VERSION}  (or pip install -e ".[upstream]")'


class ModelMessageRoleType:
    """DB-GPT's role constants (dbgpt/core/interface/message.py)."""

    SYSTEM = "system"
    HUMAN = "human"
    AI = "ai"
    VIEW = "view"


@dataclass
class AgentMessage:
    """The fields of DB-GPT's AgentMessage the context package reads and writes.

    ``source`` is ctxbench's: the replayed message this one stands for (None for a summary)."""

    content: str | None = None
    role: str | None = None
    context: dict[str, Any] | None = None
    source: Any = field(default=None, repr=False)


def dbgpt_dir() -> Path:
    """The installed ``dbgpt`` package folder, found without importing it."""
    spec = importlib.util.find_spec("dbgpt")
    if spec is None or not spec.submodule_search_locations:
        raise UpstreamMissing(f"DB-GPT is not installed: {INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


def installed_version() -> str:
    try:
        return metadata.version("dbgpt")
    except metadata.PackageNotFoundError:
        raise UpstreamMissing(f"DB-GPT is not installed: {INSTALL}") from None


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UpstreamMissing(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _tokenizer_module(root: Path) -> types.ModuleType:
    """DB-GPT's token_utils.py, loaded by file, with its count memoised per text."""
    from ctxbench.tokens.tokenizers import litellm_tokenizer_dir

    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(litellm_tokenizer_dir()))  # tiktoken files, offline
    real = _load(f"{PACKAGE}._token_utils", root / "model" / "utils" / "token_utils.py")

    class ProxyTokenizerWrapper(real.ProxyTokenizerWrapper):  # type: ignore[name-defined, misc]
        def __init__(self) -> None:
            super().__init__()
            self._memo: dict[tuple[str, str | None], int] = {}

        def count_token(self, messages: Any, model_name: str | None = None) -> int:
            if not isinstance(messages, str):
                return super().count_token(messages, model_name)
            key = (messages, model_name)
            count = self._memo.get(key)
            if count is None:
                count = self._memo[key] = super().count_token(messages, model_name)
            return count

    shim = types.ModuleType("dbgpt.model.utils.token_utils")
    shim.ProxyTokenizerWrapper = ProxyTokenizerWrapper  # type: ignore[attr-defined]
    return shim


@cache
def load_context() -> types.SimpleNamespace:
    """DB-GPT's context modules: ``budget``, ``compact``, ``manager``, ``storage``."""
    version = installed_version()
    if version != VERSION:
        raise UpstreamMissing(f"DB-GPT {version} is installed; the adapter is checked against {VERSION}: {INSTALL}")
    root = dbgpt_dir()
    folder = root / "agent" / "core" / "context"
    if not (folder / "manager.py").is_file():
        raise UpstreamMissing(f"{folder} has no manager.py: {INSTALL}")
    core = types.ModuleType("dbgpt.core")
    core.ModelMessageRoleType = ModelMessageRoleType  # type: ignore[attr-defined]
    agent = types.ModuleType("dbgpt.agent.core.agent")
    agent.AgentMessage = AgentMessage  # type: ignore[attr-defined]
    shims = {
        "dbgpt.core": core,
        "dbgpt.model.utils.token_utils": _tokenizer_module(root),
        "dbgpt.agent.core.agent": agent,
    }
    for name, module in shims.items():
        # Kept for the process: Layer 3 imports AgentMessage when it runs. A real DB-GPT module
        # imported before is left alone (its names are the same).
        sys.modules.setdefault(name, module)
    # manager.py logs a "[CTX-DEBUG]" warning on every call and a traceback for each Layer 3
    # failure: the replay records both as events (context.status, compaction.failure).
    logging.getLogger(PACKAGE).setLevel(logging.CRITICAL)
    package = types.ModuleType(PACKAGE)
    package.__path__ = [str(folder)]  # type: ignore[attr-defined]
    sys.modules[PACKAGE] = package
    modules = {name: _load(f"{PACKAGE}.{name}", folder / f"{name}.py") for name in ("storage", "budget", "compact")}
    modules["manager"] = _load(f"{PACKAGE}.manager", folder / "manager.py")
    return types.SimpleNamespace(version=version, folder=folder, **modules)
