"""The strategy interface: one small object that may compact the working context before
each call and may react to an overflow error. Layers and pipelines build on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.replay.provider import ContextOverflowError, ModelSpec
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Message, Transcript


@dataclass
class StrategyContext:
    """What a strategy may know and use while it decides, for one call of one transcript."""

    model: ModelSpec
    estimator: Estimator
    transcript: Transcript
    call_index: int = 0
    new_messages: list[Message] = field(default_factory=list)
    workdir: Path | None = None  # where the strategy may write files (e.g. tool-result snapshots)
    summariser: Any = None  # an object with ``summarise(...)``; see ctxbench.llm
    events: list[dict[str, Any]] = field(default_factory=list)
    layers_applied: list[str] = field(default_factory=list)
    state: str | None = None
    shared: dict[str, Any] = field(default_factory=dict)  # per-replay state layers share (e.g. a circuit breaker)

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append({"call": self.call_index, **event})

    def mark_layer(self, layer: str) -> None:
        self.layers_applied.append(layer)


class Strategy:
    """Override ``before_call`` to compact proactively and ``on_overflow`` to react.

    A strategy object serves one transcript: the engine makes a fresh one per transcript,
    so per-conversation state (circuit breakers, counters, summaries) lives on ``self``.
    """

    name: str = "strategy"
    max_retries: int = 0

    def before_call(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        return messages

    def on_overflow(
        self, messages: list[Message], error: ContextOverflowError, ctx: StrategyContext, attempt: int
    ) -> list[Message] | None:
        """Return a smaller context to retry with, or None to give up."""
        return None

    def after_call(self, messages: list[Message], prompt_tokens: int, ctx: StrategyContext) -> None:
        """Called with the provider's reported prompt tokens after a call succeeded."""
        ctx.estimator.observe(messages, prompt_tokens)
