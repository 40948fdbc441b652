"""The real implementations, run inside ctxbench's replay (optional extras).

Each adapter loads the upstream code as it ships on the package index and raises
``UpstreamMissing`` with a one-line reason when it is not installed. Deliberate differences
between ctxbench's own versions and the upstream code are listed in ``differences.py``.
"""

from __future__ import annotations


class UpstreamMissing(RuntimeError):
    """The upstream package an adapter needs is not installed (the message says how to get it)."""


def missing(strategy: str) -> str | None:
    """Why ``strategy`` (a config name) cannot run here, or None: the upstream strategies need their
    optional packages; everything else always runs."""
    loaders = {
        "upstream_dbgpt": "ctxbench.upstream.dbgpt_loader:load_context",
        "inspect_compaction": "ctxbench.upstream.inspect_strategy:load_inspect",
        "langchain_middleware": "ctxbench.upstream.langchain_strategy:load_langchain",
    }
    target = loaders.get(strategy)
    if target is None:
        return None
    import importlib

    module, function = target.split(":")
    try:
        getattr(importlib.import_module(module), function)()
    except UpstreamMissing as exc:
        return str(exc)
    return None
