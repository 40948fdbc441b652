"""The extension contract in one place: what a strategy, a layer and a summariser implement,
what they are given, and the one error a provider raises on overflow.

This module imports nothing else of ctxbench at run time (a CI test walks the import graph),
so every other package can build on it without cycles. The older import paths
(``ctxbench.strategies.base``, ``ctxbench.layers.base``, ``ctxbench.replay.provider``,
``ctxbench.llm.base``) re-export these names. See docs/extending.md for worked examples.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: importing them here would tie the contract to the implementations
    from ctxbench.tokens.estimators import Estimator
    from ctxbench.transcripts.model import Message, Transcript


# --- a parameter's declaration -------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """What a parameter of a layer, strategy or estimator may be, declared once where it lives, in
    its annotation: ``keep: Annotated[int, Param("newest messages kept", ge=1)] = 20``. The type
    and the default come from the signature; the range and the one-line ``about`` from here.
    ``ctxbench run`` checks every configured value against it before any work
    (``ctxbench.params``), ``ctxbench ls`` shows it; a plugin's parameters get the same for free.
    ``folder``: a folder the layer writes into, which must stay inside the cell."""

    about: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    folder: bool = False


# --- the simulated model and its overflow error ------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """The simulated model: window, output reserve, tokenizer, price per 1M tokens, the provider's
    prompt caching (``cache``: a ``ctxbench.replay.prefix_cache.CacheRules``; None bills every prompt
    token in full) and an optional latency model (``ctxbench.replay.billing.LatencyModel``)."""

    name: Annotated[str, Param("the model's name in results (litellm's, for its prices)")] = "gpt-4o"
    context_window: Annotated[int, Param("the window: the prompt plus the reserved output, in tokens", gt=0)] = 128_000
    reserved_output_tokens: Annotated[
        int, Param("tokens kept for the reply (the prompt budget is the window minus these)", ge=0)
    ] = 4_096
    tokenizer: Annotated[str, Param("the tokenizer the provider counts with (ctxbench ls tokenizer)")] = "o200k_base"
    input_price_per_mtok: Annotated[float, Param("USD per 1M prompt tokens", ge=0)] = 0.0
    output_price_per_mtok: Annotated[float, Param("USD per 1M output tokens", ge=0)] = 0.0
    error_style: Annotated[str, Param("how the provider words an overflow rejection (openai, anthropic, ...)")] = (
        "openai"
    )
    cache: Annotated[
        Any, Param("the provider's prompt caching (CacheRules' fields; null: every prompt token billed in full)")
    ] = None
    latency: Annotated[Any, Param("a latency model (LatencyModel's fields; null: none)")] = None

    @property
    def prompt_budget(self) -> int:
        return self.context_window - self.reserved_output_tokens


class ContextOverflowError(Exception):
    """The provider rejected a prompt that does not fit its window."""

    def __init__(self, text: str, prompt_tokens: int, limit: int) -> None:
        super().__init__(text)
        self.text = text
        self.prompt_tokens = prompt_tokens
        self.limit = limit


# --- the summariser protocol (what LLM-summary layers call) ------------------------------
# Every way a call can fail; layers branch on these (e.g. "overflow" triggers emergency truncation).
# "truncated": the reply was cut at max_tokens (finish_reason "length"), so it may end mid-sentence.
FAULT_KINDS: tuple[str, ...] = ("error", "timeout", "rate_limit", "empty", "malformed", "overflow", "truncated")


@dataclass(frozen=True)
class SummaryRequest:
    instructions: str  # the full prompt text for an LLM (system/instructions incl. section headings)
    source_text: str  # the conversation span to summarise, rendered as text
    sections: tuple[str, ...]  # the section headings the summary must have, in order
    max_tokens: int = 2000
    purpose: str = "summary"  # e.g. "dbgpt_layer3", "five_layer_chunk", "five_layer_merge"


class SummariserError(Exception):
    """Any failure of a summariser or LLM call; ``kind`` is one of FAULT_KINDS."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown SummariserError kind {kind!r}; choose from {FAULT_KINDS}")
        super().__init__(message)
        self.kind = kind
        self.message = message


@runtime_checkable
class Summariser(Protocol):
    name: str
    usage: list[dict]  # one record per call: role, model, prompt_tokens, completion_tokens, cost_usd, cached, fault

    def summarise(self, request: SummaryRequest) -> str: ...  # raises SummariserError


# --- snapshots a strategy keeps outside the context (read by the judge) ------------------
@runtime_checkable
class SnapshotSource(Protocol):
    """Where a strategy keeps what it moved out of the context (e.g. DB-GPT's tool-result
    snapshots), so a judge can tell a fact that is gone from one still reachable by pointer."""

    def pointers(self, text: str) -> list[str]:
        """The snapshot pointers the strategy wrote into ``text``, in order. A pointer never
        spans a line break: a text's pointers are its lines' in turn (the deterministic judge
        reads only the new lines of a message that grew)."""
        ...

    def read(self, pointer: str) -> Any | None:
        """The snapshot's content (text or JSON value), or None when it is not (yet) written."""
        ...


# --- what a strategy is given, and what it implements ------------------------------------
@dataclass
class StrategyContext:
    """What a strategy may know and use while it decides, for one call of one transcript."""

    model: ModelSpec
    estimator: Estimator
    transcript: Transcript
    call_index: int = 0
    new_messages: list[Message] = field(default_factory=list)
    workdir: Path | None = None  # where the strategy may write files (e.g. tool-result snapshots)
    summariser: Any = None  # a Summariser (see above), or None when no LLM is configured
    events: list[dict[str, Any]] = field(default_factory=list)
    layers_applied: list[str] = field(default_factory=list)
    state: str | None = None
    shared: dict[str, Any] = field(default_factory=dict)  # per-replay state layers share (e.g. a circuit breaker)
    # The list last estimated in this call, its length and its estimate (see ``estimate``).
    _estimated: tuple[Sequence[Message], int, int] | None = field(default=None, init=False, repr=False, compare=False)

    def begin_call(self, call_index: int, new_messages: list[Message]) -> None:
        """Reset what belongs to one call (the engine calls this before each one)."""
        self.call_index, self.new_messages, self.layers_applied, self.state = call_index, new_messages, [], None
        self._estimated = None

    def estimate(self, messages: Sequence[Message]) -> int:
        """``estimator.prompt(messages)``, remembered for the list last estimated in this call: a
        pipeline reports the estimate of the list it returns, and the engine records the estimate
        of the same list. Layers never modify a list in place, so within a call the same list
        object of the same length holds the same messages (and the estimator learns only after
        the call, in ``after_call``)."""
        last = self._estimated
        if last is not None and last[0] is messages and last[1] == len(messages):
            return last[2]
        used = self.estimator.prompt(messages)
        self._estimated = (messages, len(messages), used)
        return used

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append({"call": self.call_index, **event})

    def mark_layer(self, layer: str) -> None:
        self.layers_applied.append(layer)


Compaction = Literal["rewrite", "view"]


class Strategy:
    """Override ``before_call`` to compact proactively and ``on_overflow`` to react.

    A strategy object serves one transcript: the engine makes a fresh one per transcript,
    so per-conversation state (circuit breakers, counters, summaries) lives on ``self``.

    ``compaction`` says what the compacted context is. ``"rewrite"`` (Claude Code, OpenClaw,
    inspect_ai's summary): it replaces the history, and the next call starts from it.
    ``"view"`` (DB-GPT): each call compacts a copy of the full history, which itself only
    grows (``prepare`` may still rewrite what arrived, as DB-GPT's memory stores observations
    with their snapshot pointers); the next call starts again from the full history.
    """

    name: str = "strategy"
    max_retries: int = 0
    compaction: Compaction = "rewrite"
    # True: its float ``strategy.params`` may reach it as ctxbench.thresholds.Tracked values, which it
    # only compares (a sweep then copies the cells of settings making the same decisions); a type
    # check would see a Tracked, not a float. False (the default): never shared.
    compares_params_only: bool = False

    def prepare(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        """Rewrite what arrived before the call (kept in the history; not compaction)."""
        return messages

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

    def snapshots(self, workdir: Path | None) -> SnapshotSource | None:
        """The snapshots this strategy writes under ``workdir``, or None if it keeps none."""
        return None

    def write_files(self, workdir: Path) -> None:
        """Write what the strategy kept for the cell's folder (DB-GPT's snapshot store), after
        the replay, when the cell is published (``ctxbench run``); the judge reads it in memory."""


class Layer(ABC):
    """One compaction step. Layers know nothing of thresholds: a strategy pipeline
    (ctxbench.strategies.pipeline) decides when each runs. A layer returns the *same list
    object* when it changes nothing, so the pipeline can tell cheaply whether it fired."""

    name: str = "layer"

    @abstractmethod
    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        """Return a compacted copy of ``messages``, or ``messages`` itself if nothing changed."""

    def snapshots(self, workdir: Path | None) -> SnapshotSource | None:
        """The snapshots this layer writes under ``workdir``, or None if it keeps none."""
        return None

    def write_files(self, workdir: Path) -> None:
        """Write what the layer kept for the cell's folder (see ``Strategy.write_files``)."""
