"""A strategy built from layers: proactive steps before each call, reactive steps after an
overflow error, each step with its own trigger, and a recount plus a ``context.status``
event after every count and every layer that fired (progressive escalation).

DB-GPT's 4 layers, the 5-layer strategy and the alternatives are all this class with
different YAML (ctxbench/configs/strategy/*.yaml); a new mix is a new YAML file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from ctxbench.core import ContextOverflowError, ModelSpec, Param, SnapshotSource, Strategy, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.llm.errors import OVERFLOW_TEXTS, SIZE_EXCEEDS_PATTERN
from ctxbench.thresholds import LevelNames
from ctxbench.transcripts.model import Message

# Overflow texts that real providers and agents match (reference.md 1b, one list in
# ctxbench.llm.errors); rate limits must not match.
DEFAULT_OVERFLOW_PATTERNS: tuple[str, ...] = (
    *(re.escape(text) for text in OVERFLOW_TEXTS),
    SIZE_EXCEEDS_PATTERN,
    r"413.*too large",
)


@dataclass(frozen=True)
class Budget:
    """The prompt budget a strategy plans against.

    ``max_context_tokens`` None means the model's window; a non-positive value falls back
    to ``fallback_tokens`` (DB-GPT's rule). ``reserved_tokens`` None means the model's
    reserved output.
    """

    max_context_tokens: Annotated[
        int | None, Param("the window planned against (None: the model's; non-positive: fallback_tokens)")
    ] = None
    reserved_tokens: Annotated[int | None, Param("tokens kept for the reply (None: the model's reserve)", ge=0)] = None
    fallback_tokens: Annotated[int, Param("the window when max_context_tokens is not positive", gt=0)] = 120_000
    follow_model_window: Annotated[
        bool, Param("never plan against more than the model's window (false: the setting as it is)")
    ] = True

    def window(self, model: ModelSpec) -> int:
        """The setting, but never more than the model's window: a budget the model cannot hold
        would only ever be met by overflow errors (DB-GPT sizes it from the model's metadata).
        ``follow_model_window=False`` plans against the setting as it is (DB-GPT 0.8.2's agent passes
        a fixed 120,000 from AgentContext, whatever the model)."""
        if self.max_context_tokens is None:
            return model.context_window
        setting = self.max_context_tokens if self.max_context_tokens > 0 else self.fallback_tokens
        return min(setting, model.context_window) if self.follow_model_window else setting

    def effective(self, model: ModelSpec) -> int:
        reserved = model.reserved_output_tokens if self.reserved_tokens is None else self.reserved_tokens
        return self.window(model) - reserved


@dataclass
class Step:
    """A layer and when it runs.

    ``when``: run only when used / base >= when (None: always). ``of``: the base is the
    effective budget (window - reserved) or the raw window. ``from_attempt``: for reactive
    steps, run only from this retry attempt on (0 = the first overflow); ``until_attempt``: only
    up to this one; ``forced_from_attempt``: from this attempt on, run even when ``when`` says no
    (the provider rejected what the estimate let through). ``always_report``:
    recount and emit ``context.status`` after the layer ran even if it changed nothing
    (DB-GPT reports every layer it runs).
    """

    layer: Annotated[Layer, Param("the layer: a _target_ config, or a layer object")]
    when: Annotated[float | None, Param("run when the prompt reaches this share of the base (None: always)", ge=0)] = (
        None
    )
    of: Annotated[Literal["budget", "window"], Param("the base: the budget (window - reserved) or the raw window")] = (
        "budget"
    )
    from_attempt: Annotated[int, Param("a reactive step runs from this retry on (0: the first overflow)", ge=0)] = 0
    until_attempt: Annotated[int | None, Param("and up to this retry (None: every one)", ge=0)] = None
    forced_from_attempt: Annotated[int | None, Param("from this retry on, run even below when", ge=0)] = None
    always_report: Annotated[bool, Param("recount and report after the layer ran, even when it changed nothing")] = (
        False
    )

    @classmethod
    def coerce(cls, value: Step | Mapping[str, Any] | Layer) -> Step:
        if isinstance(value, Step):
            return value
        if isinstance(value, Layer):
            return cls(layer=value)
        return cls(**value)


class LayeredStrategy(Strategy):
    # Its steps compare `when` with the prompt's share of the base, its levels name a ratio
    # (LevelNames); a layer's own parameter used otherwise taints the cell (ctxbench/thresholds.py).
    compares_params_only = True

    def __init__(
        self,
        proactive: Annotated[
            Sequence[Step | Mapping[str, Any] | Layer], Param("steps run before each call, in order (Step's fields)")
        ] = (),
        reactive: Annotated[
            Sequence[Step | Mapping[str, Any] | Layer],
            Param("steps run when the provider rejects the prompt (Step's fields)"),
        ] = (),
        max_retries: Annotated[int, Param("retries after an overflow", ge=0)] = 1,
        budget: Annotated[
            Budget | Mapping[str, Any] | None, Param("the prompt budget planned against (Budget's fields)")
        ] = None,
        thresholds: Annotated[
            Mapping[str, float] | None,
            Param("named shares of the budget (warning, error, critical) for events and reports", gt=0, le=1),
        ] = None,
        overflow_patterns: Annotated[
            Sequence[str], Param("provider error texts that count as an overflow")
        ] = DEFAULT_OVERFLOW_PATTERNS,
        name: Annotated[str, Param("the strategy's name in results")] = "layered",
        prepare: Annotated[Sequence[Layer], Param("layers run on each call's new messages before anything else")] = (),
        compaction: Annotated[
            str, Param("rewrite: compaction changes the stored history; view: each call compacts a copy")
        ] = "rewrite",
    ) -> None:
        # Layers that rewrite what arrived before the first count (e.g. tool-result snapshots):
        # not compaction, so they emit no status event and are not recorded as layers.
        self.prepare_layers = list(prepare)
        if compaction not in ("rewrite", "view"):
            from ctxbench.errors import ConfigError

            raise ConfigError(f"strategy compaction must be 'rewrite' or 'view', got {compaction!r}")
        self.compaction = compaction  # type: ignore[assignment]
        self.proactive = [Step.coerce(s) for s in proactive]
        self.reactive = [Step.coerce(s) for s in reactive]
        self.max_retries = max_retries
        self.budget = budget if isinstance(budget, Budget) else Budget(**(budget or {}))
        # State names by the ratio at which they start; >= 1.0 is always "overflow". A label, not a
        # decision: in a sweep the cells that differ only in these names share a replay (thresholds.py).
        self.levels = LevelNames(thresholds or {}, above="overflow", below="normal")
        self._overflow = re.compile("|".join(f"(?:{p})" for p in overflow_patterns), re.IGNORECASE)
        self.name = name
        self._bases: tuple[ModelSpec, Budget, int, int] | None = None  # model and budget (frozen), and the two

    def _base(self, model: ModelSpec) -> tuple[int, int]:
        """``budget.effective(model)`` and ``budget.window(model)``, worked out once per model and
        budget (both frozen): the strategy reports against them after every count."""
        bases, budget = self._bases, self.budget
        if bases is None or bases[0] is not model or bases[1] is not budget:
            bases = self._bases = (model, budget, budget.effective(model), budget.window(model))
        return bases[2], bases[3]

    # --- counting and status -------------------------------------------------------
    def classify(self, ratio: float) -> str:
        return self.levels.name(ratio)

    def status(self, messages: list[Message], ctx: StrategyContext, layer: str | None) -> int:
        """Recount with the strategy's estimator and emit DB-GPT's ``context.status`` event."""
        used = ctx.estimate(messages)
        budget = self._base(ctx.model)[0]
        ratio = used / budget if budget > 0 else float("inf")
        ctx.state = self.classify(ratio)
        ctx.emit(
            {
                "type": "context.status",
                "used": used,
                "budget": budget,
                "ratio": round(ratio, 4),
                "state": ctx.state,
                "compact_layer": layer,
            }
        )
        return used

    def _ratio(self, used: int, step: Step, ctx: StrategyContext) -> float:
        effective, window = self._base(ctx.model)
        base = effective if step.of == "budget" else window
        return used / base if base > 0 else float("inf")

    def _run(
        self, steps: list[Step], messages: list[Message], ctx: StrategyContext, attempt: int | None
    ) -> list[Message]:
        # Before the proactive layers DB-GPT reports the count; its reactive Layer 4 reports only
        # after it ran (reactive_compact), so a reaction starts from a silent count.
        used = self.status(messages, ctx, None) if attempt is None else ctx.estimate(messages)
        for step in steps:
            if attempt is not None and (
                attempt < step.from_attempt or (step.until_attempt is not None and attempt > step.until_attempt)
            ):
                continue
            forced = (
                attempt is not None and step.forced_from_attempt is not None and attempt >= step.forced_from_attempt
            )
            if step.when is not None and not forced and self._ratio(used, step, ctx) < step.when:
                continue
            result = step.layer.apply(messages, ctx)
            if result is messages:
                # A layer that was skipped (e.g. DB-GPT's open circuit breaker) reports nothing.
                if step.always_report and getattr(step.layer, "ran", True):
                    used = self.status(messages, ctx, step.layer.name)
                continue
            messages = result
            ctx.mark_layer(step.layer.name)
            used = self.status(messages, ctx, step.layer.name)
        return messages

    # --- the Strategy interface ------------------------------------------------------
    def snapshots(self, workdir: Path | None) -> SnapshotSource | None:
        """The first of its layers' snapshot sources (DB-GPT's tool-result snapshots)."""
        layers = [*self.prepare_layers, *(s.layer for s in self.proactive), *(s.layer for s in self.reactive)]
        for layer in layers:
            source = layer.snapshots(workdir)
            if source is not None:
                return source
        return None

    def write_files(self, workdir: Path) -> None:
        for layer in [*self.prepare_layers, *(s.layer for s in self.proactive), *(s.layer for s in self.reactive)]:
            write = getattr(layer, "write_files", None)  # a layer need not derive from Layer
            if write is not None:
                write(workdir)

    def prepare(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        for layer in self.prepare_layers:
            messages = layer.apply(messages, ctx)
        return messages

    def before_call(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        return self._run(self.proactive, messages, ctx, attempt=None)

    def is_overflow(self, error: ContextOverflowError) -> bool:
        return bool(self._overflow.search(error.text))

    def on_overflow(
        self, messages: list[Message], error: ContextOverflowError, ctx: StrategyContext, attempt: int
    ) -> list[Message] | None:
        if not self.reactive or not self.is_overflow(error):
            return None
        # Steps reserved for later attempts run now when the earlier ones found nothing to do:
        # a retry of the same request would be rejected again.
        for step_attempt in range(attempt, max(self.max_retries, attempt + 1)):
            result = self._run(self.reactive, messages, ctx, attempt=step_attempt)
            if result is not messages:
                return result
        return None
