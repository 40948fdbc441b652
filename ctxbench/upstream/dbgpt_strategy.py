"""``strategy=upstream_dbgpt``: DB-GPT's own ``ContextManager`` (dbgpt==0.8.2), driven by the replay.

Before every call DB-GPT rebuilds its messages from memory and runs ``manage_context`` on them (a
per-call view: ``compaction = "view"``); on a ``context_too_long`` error it runs
``reactive_compact`` on what it sent and retries once. This strategy does the same with the
upstream objects: each call gets fresh ``AgentMessage`` copies of the history (Layer 1 truncates
in place), the ``context.status`` events DB-GPT pushes to its callback become the replay's events,
and the messages that come back are mapped to the replayed messages (a cut observation becomes a
compacted copy; the Layer 3 summary a new user message) for the provider to count.

What the replay supplies around the upstream code (the seed's agent, not the context package):
tool-result snapshots and the task-progress block (the same ``prepare`` layer as ``dbgpt``), the
model's name for DB-GPT's tokenizer, the budget sized from the model, and an LLM client for
Layer 3 backed by ctxbench's summariser. Deliberate differences, and the switches that remove
them, are listed in ``ctxbench.upstream.differences``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from ctxbench.core import ContextOverflowError, Layer, Param, Strategy, StrategyContext
from ctxbench.layers.base import compacted
from ctxbench.layers.llm_full_compression import SECTIONS
from ctxbench.tokens.dbgpt import message_text
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import last_result_of_turn
from ctxbench.upstream.dbgpt_loader import AgentMessage, ModelMessageRoleType, load_context

ROLES = {
    "system": ModelMessageRoleType.SYSTEM,
    "user": ModelMessageRoleType.HUMAN,
    "assistant": ModelMessageRoleType.AI,
    "tool": ModelMessageRoleType.HUMAN,
}
OVERFLOW_TEXTS = ("context_too_long", "context_length_exceeded", "maximum context length")  # base_agent.py
CONVERSATION_START = "## Conversation to summarize\n"
CONVERSATION_END = "\n\n## Output format"


def run_sync(coroutine: Any) -> Any:
    """Drive one of DB-GPT's coroutines to its end. Nothing in them waits on I/O here (the status
    callback and the LLM client are synchronous underneath), so one step finishes them."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise RuntimeError("DB-GPT's context manager awaited something the replay cannot provide")


class SummariserClient:
    """DB-GPT's ``AIWrapper.generate_text`` for Layer 3, backed by ctxbench's summariser: the
    conversation DB-GPT formats into its prompt is sent as the source text, the rest as the
    instructions (as ctxbench's ``dbgpt`` does), so cassettes, faults and the extractive offline
    summariser work the same."""

    def __init__(self, ctx: StrategyContext) -> None:
        self.ctx = ctx

    async def generate_text(self, prompt: str, llm_model: str | None = None, max_new_tokens: int = 2000) -> str:
        from ctxbench.llm.base import SummaryRequest

        start = prompt.find(CONVERSATION_START)
        end = prompt.find(CONVERSATION_END, start)
        if start < 0 or end < 0:
            source, instructions = prompt, ""
        else:
            source = prompt[start + len(CONVERSATION_START) : end]
            instructions = prompt[: start + len(CONVERSATION_START)] + "(the conversation is in the next message)"
            instructions += prompt[end:]
        request = SummaryRequest(
            instructions=instructions,
            source_text=source,
            sections=SECTIONS,
            max_tokens=max_new_tokens,
            purpose="dbgpt_layer3",
        )
        text = self.ctx.summariser.summarise(request)
        self.ctx.emit({"type": "compaction.summary", "layer": "layer3", "source_chars": len(source)})
        return text


class UpstreamDbgpt(Strategy):
    compaction = "view"

    def __init__(
        self,
        max_context_tokens: Annotated[
            int | None, Param("DB-GPT's context_length (non-positive: 120000; None: the model's window)")
        ] = 120_000,
        reserved_tokens: Annotated[int, Param("tokens DB-GPT keeps for the reply", ge=0)] = 4096,
        warning_threshold: Annotated[
            float, Param("share of the budget from which Layers 1 and 2 run", gt=0, le=1)
        ] = 0.70,
        error_threshold: Annotated[float, Param("share of the budget from which Layer 3 runs", gt=0, le=1)] = 0.90,
        critical_threshold: Annotated[float, Param("share of the budget reported as critical", gt=0, le=1)] = 0.95,
        min_keep_recent_rounds: Annotated[int, Param("the newest rounds Layers 2 and 3 keep", ge=0)] = 3,
        max_observation_age_rounds: Annotated[
            int, Param("the newest rounds whose observations Layer 1 keeps whole", ge=0)
        ] = 5,
        truncated_observation_max_chars: Annotated[
            int, Param("characters Layer 1 keeps of an older observation", ge=0)
        ] = 200,
        min_keep_tokens: Annotated[
            int, Param("Layer 2 keeps older rounds while the kept tokens stay below this", ge=0)
        ] = 10_000,
        max_compact_failures: Annotated[
            int, Param("consecutive summary failures that open Layer 3's breaker", ge=0)
        ] = 3,
        follow_model_window: Annotated[
            bool, Param("plan against the smaller of context_length and the model's window")
        ] = True,
        set_model_name: Annotated[
            bool, Param("give DB-GPT the model's name (its tiktoken encoding follows it)")
        ] = True,
        tool_results_as_observations: Annotated[
            bool, Param("hand tool results to DB-GPT as its Observation messages")
        ] = True,
        prepare: Annotated[Sequence[Layer], Param("layers run on each call's new messages first (snapshots)")] = (),
        max_retries: Annotated[int, Param("retries after an overflow", ge=0)] = 1,
        name: Annotated[str, Param("the strategy's name in results")] = "upstream_dbgpt",
    ) -> None:
        self.upstream = load_context()
        self.settings = {
            "max_context_tokens": max_context_tokens,
            "reserved_tokens": reserved_tokens,
            "warning_threshold": warning_threshold,
            "error_threshold": error_threshold,
            "critical_threshold": critical_threshold,
            "min_keep_recent_rounds": min_keep_recent_rounds,
            "max_observation_age_rounds": max_observation_age_rounds,
            "truncated_observation_max_chars": truncated_observation_max_chars,
            "min_keep_tokens": min_keep_tokens,
            "max_compact_failures": max_compact_failures,
        }
        self.follow_model_window = follow_model_window
        self.set_model_name = set_model_name
        self.tool_results_as_observations = tool_results_as_observations
        self.prepare_layers = list(prepare)
        self.max_retries = max_retries
        self.name = name
        self.manager: Any = None
        self._ctx: StrategyContext | None = None
        self._copies: dict[tuple[int, str], tuple[Message, Message]] = {}  # (source id, text) -> copy
        self._summaries: dict[str, Message] = {}

    # --- the manager, built on the first call (the budget follows the model) ----------------
    def _manager(self, ctx: StrategyContext) -> Any:
        self._ctx = ctx
        if self.manager is not None:
            return self.manager
        budget, manager = self.upstream.budget, self.upstream.manager
        settings = dict(self.settings)
        window = settings["max_context_tokens"]
        if window is None:  # as ctxbench's dbgpt: the model's window
            settings["max_context_tokens"] = ctx.model.context_window
        elif self.follow_model_window:
            window = window if window > 0 else budget.DEFAULT_MAX_CONTEXT_TOKENS
            settings["max_context_tokens"] = min(window, ctx.model.context_window)
        config = budget.ContextBudgetConfig(**settings)
        client = SummariserClient(ctx) if ctx.summariser is not None else None
        self.manager = manager.ContextManager(
            config=config, model_name=ctx.model.name, llm_client=client, on_status_event=self._on_status
        )
        if self.set_model_name:
            self.manager.model_name = ctx.model.name  # the attribute manage_context reads but never sets
        for layer in ("layer1", "layer2", "layer3", "layer4"):
            self._watch(layer)
        if self.tool_results_as_observations:
            self._extend_observations()
        return self.manager

    async def _on_status(self, event: dict[str, Any]) -> None:
        assert self._ctx is not None
        self._ctx.state = event["state"]
        self._ctx.emit(dict(event))

    def _watch(self, layer: str) -> None:
        """Record the layers that changed the messages (ctxbench's per-call ``layers``)."""
        target = getattr(self.manager, f"_{layer}")
        compact = target.compact

        def snapshot(messages: Sequence[Any]) -> list[tuple[int, Any]]:
            return [(id(m), m.content) for m in messages]

        if layer == "layer3":

            async def watched(messages: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
                before = snapshot(messages)
                out = await compact(messages, *args, **kwargs)
                if snapshot(out) != before and self._ctx is not None:
                    self._ctx.mark_layer(layer)
                return out
        else:

            def watched(messages: list[Any], *args: Any, **kwargs: Any) -> list[Any]:  # type: ignore[misc]
                before = snapshot(messages)
                out = compact(messages, *args, **kwargs)
                if snapshot(out) != before and self._ctx is not None:
                    self._ctx.mark_layer(layer)
                return out

        target.compact = watched

    def _extend_observations(self) -> None:
        """DB-GPT's agents write tool results as ``Observation:`` text; a function-calling transcript
        has them as tool messages. A tool message that ends its turn counts as an observation, as in
        ctxbench's ``dbgpt`` (ctxbench.upstream.differences lists this)."""
        compact = self.upstream.compact
        original = compact._is_observation_message
        if getattr(original, "ctxbench_extended", False):
            return

        def is_observation(msg: Any) -> bool:
            return bool(getattr(msg, "tool_turn_end", False)) or original(msg)

        is_observation.ctxbench_extended = True  # type: ignore[attr-defined]
        compact._is_observation_message = is_observation

    # --- the replay's messages as DB-GPT's, and back ---------------------------------------
    def _agent_messages(self, messages: Sequence[Message]) -> list[AgentMessage]:
        out = []
        for i, message in enumerate(messages):
            snapshot = message.metadata.get("snapshot")
            agent = AgentMessage(
                content=message_text(message),
                role=ROLES.get(message.role, ModelMessageRoleType.HUMAN),
                context={"snapshot_path": snapshot} if snapshot else None,
                source=message,
            )
            if message.role == "tool" and last_result_of_turn(messages, i):
                agent.tool_turn_end = True  # type: ignore[attr-defined]
            out.append(agent)
        return out

    def _replayed(self, agents: Sequence[Any]) -> list[Message]:
        out = []
        for agent in agents:
            source = getattr(agent, "source", None)
            content = agent.content or ""
            if source is None:  # Layer 3's summary
                summary = self._summaries.get(content)
                if summary is None:
                    summary = self._summaries[content] = Message(
                        role="user", content=content, metadata={"compacted_by": ["layer3"]}
                    )
                out.append(summary)
            elif content == message_text(source):
                out.append(source)
            else:  # Layer 1 cut it: the same copy every call keeps its token count cached
                key = (id(source), content)
                hit = self._copies.get(key)
                if hit is None or hit[0] is not source:
                    text = content[: len(content) - len(message_text(source)) + len(source.content)]
                    hit = self._copies[key] = (
                        source,
                        compacted(source, text if source.tool_calls else content, "layer1"),
                    )
                out.append(hit[1])
        return out

    # --- the Strategy interface ------------------------------------------------------------
    def prepare(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        for layer in self.prepare_layers:
            messages = layer.apply(messages, ctx)
        return messages

    def write_files(self, workdir: Path) -> None:
        for layer in self.prepare_layers:
            layer.write_files(workdir)  # the snapshot store

    def snapshots(self, workdir: Any) -> Any:
        for layer in self.prepare_layers:
            source = layer.snapshots(workdir)
            if source is not None:
                return source
        return None

    def before_call(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        manager = self._manager(ctx)
        agents = self._agent_messages(messages)
        current_round = len(self.upstream.compact._detect_round_boundaries(agents))
        tracker = manager.tracker
        failures, tripped = tracker._compact_failure_count, tracker.circuit_breaker_tripped
        out = run_sync(manager.manage_context(agents, current_round=current_round))
        if tracker._compact_failure_count > failures:  # Layer 3 raised (manager.py logs and counts it)
            count = tracker._compact_failure_count
            ctx.emit({"type": "compaction.failure", "layer": "layer3", "consecutive_failures": count})
            if tracker.circuit_breaker_tripped and not tripped:
                ctx.emit({"type": "circuit_breaker.open", "layer": "layer3", "consecutive_failures": count})
        result = self._replayed(out)
        return messages if len(result) == len(messages) and all(map(lambda a, b: a is b, result, messages)) else result

    def on_overflow(
        self, messages: list[Message], error: ContextOverflowError, ctx: StrategyContext, attempt: int
    ) -> list[Message] | None:
        text = error.text.lower()
        if not any(marker in text for marker in OVERFLOW_TEXTS):
            return None
        manager = self._manager(ctx)
        out = run_sync(manager.reactive_compact(self._agent_messages(messages)))
        return self._replayed(out)  # DB-GPT retries once, changed or not
