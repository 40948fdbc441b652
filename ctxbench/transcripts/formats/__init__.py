"""Importers, one module per source format; each has ``FORMAT`` and ``parse(source, ctx)``."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from types import ModuleType

from ctxbench.transcripts.formats import (
    anthropic,
    claude_code,
    codex,
    gemini,
    openai,
    openhands,
    openhands_v1,
    react,
    sweagent,
    taubench,
)
from ctxbench.transcripts.formats._common import IMAGE_PLACEHOLDER, ParseContext, TranscriptWarning

_MODULES: tuple[ModuleType, ...] = (
    openai,
    sweagent,
    openhands,
    openhands_v1,
    taubench,
    claude_code,
    codex,
    gemini,
    anthropic,
    react,
)
PARSERS: dict[str, Callable] = {m.FORMAT: m.parse for m in _MODULES}
FORMAT_NAMES: tuple[str, ...] = tuple(PARSERS)
PLUGIN_GROUP = "ctxbench.importers"


@cache
def install_plugin_parsers() -> None:
    """Importers of installed plugins (entry point group ``ctxbench.importers``) join ``PARSERS``;
    a built-in name wins. Called once; cheap afterwards (``ctxbench.registry`` lists them)."""
    for point in entry_points(group=PLUGIN_GROUP):
        PARSERS.setdefault(point.name, point.load())


__all__ = [
    "FORMAT_NAMES",
    "IMAGE_PLACEHOLDER",
    "PARSERS",
    "ParseContext",
    "TranscriptWarning",
    "install_plugin_parsers",
]
