"""Importers, one module per source format; each has ``FORMAT`` and ``parse(source, ctx)``."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from ctxbench.transcripts.formats import anthropic, claude_code, openai, openhands, react, sweagent, taubench
from ctxbench.transcripts.formats._common import IMAGE_PLACEHOLDER, ParseContext, TranscriptWarning

_MODULES: tuple[ModuleType, ...] = (openai, sweagent, openhands, taubench, claude_code, anthropic, react)
PARSERS: dict[str, Callable] = {m.FORMAT: m.parse for m in _MODULES}
FORMAT_NAMES: tuple[str, ...] = tuple(PARSERS)

__all__ = ["FORMAT_NAMES", "IMAGE_PLACEHOLDER", "PARSERS", "ParseContext", "TranscriptWarning"]
