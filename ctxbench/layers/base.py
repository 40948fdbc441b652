"""Helpers for layers. The ``Layer`` interface lives in ctxbench.core (re-exported here)."""

from __future__ import annotations

from ctxbench.core import Layer
from ctxbench.transcripts.model import Message

__all__ = ["Layer", "compacted"]


def compacted(message: Message, content: str, layer: str) -> Message:
    """A copy of ``message`` with new content, marked with the layer that changed it."""
    history = [*message.metadata.get("compacted_by", []), layer]
    return message.replace(content=content, metadata={**message.metadata, "compacted_by": history})
