"""A layer is one compaction step: small, separately tested, configured on its own.

Layers know nothing of thresholds: a strategy pipeline (ctxbench.strategies.pipeline)
decides when each layer runs. A layer returns the *same list object* when it changes
nothing, so the pipeline can tell cheaply whether it fired.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ctxbench.strategies.base import StrategyContext
from ctxbench.transcripts.model import Message


class Layer(ABC):
    name: str = "layer"

    @abstractmethod
    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        """Return a compacted copy of ``messages``, or ``messages`` itself if nothing changed."""


def compacted(message: Message, content: str, layer: str) -> Message:
    """A copy of ``message`` with new content, marked with the layer that changed it."""
    history = [*message.metadata.get("compacted_by", []), layer]
    return message.replace(content=content, metadata={**message.metadata, "compacted_by": history})
