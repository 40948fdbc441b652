"""The replay engine: walk a recorded transcript call by call through a strategy.

Before each recorded assistant message the strategy holds its history plus what arrived
since the last call; it may rewrite what arrived (``prepare``) and compact; the simulated
provider counts the prompt with the real tokenizer and may reject it; the strategy may
react and retry; then the recorded assistant message is appended. What it is appended to
depends on the strategy's ``compaction``: a ``rewrite`` strategy's compacted prompt becomes
its history (Claude Code, OpenClaw), a ``view`` strategy compacted a per-call copy and its
history stays whole (DB-GPT rebuilds the prompt from its memory before every call).
Condensations the agent itself made and the transcript recorded (OpenHands) are applied to the
history as they happened (``ctxbench.transcripts.condensations``). The provider also counts
the agent's tool schemas in every request, where the transcript
recorded them (``ctxbench.transcripts.tool_schemas``). Every message is counted once (counts
are cached on the message) and sums are kept running, so a replay costs O(total text), not
O(calls x context).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ctxbench.core import ContextOverflowError, ModelSpec, Strategy, StrategyContext
from ctxbench.replay.billing import CallBilling, cost_summary
from ctxbench.replay.provider import RequestProblemCount, SimulatedProvider
from ctxbench.tokens.counting import TokenCounter, tools_tokens
from ctxbench.tokens.estimators import Estimator
from ctxbench.tokens.reasoning import reasoning_tokens
from ctxbench.transcripts.condensations import CondensationReplay, condensation_event
from ctxbench.transcripts.model import Message, Transcript


class ReplayObserver(Protocol):
    """Watches a replay (probes at checkpoints, progress). Both methods are optional."""

    def on_call(self, record: dict[str, Any], working: Sequence[Message], ctx: StrategyContext) -> None: ...

    def on_end(self, working: Sequence[Message], ctx: StrategyContext) -> None: ...


@dataclass
class ReplayResult:
    calls: list[dict[str, Any]]
    events: list[dict[str, Any]]
    summary: dict[str, Any]
    working: list[Message] = field(default_factory=list)


def replay(
    transcript: Transcript,
    strategy: Strategy,
    estimator: Estimator,
    model: ModelSpec,
    counter: TokenCounter,
    *,
    workdir: Path | None = None,
    summariser: Any = None,
    observers: Sequence[ReplayObserver] = (),
    on_progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    tools = tools_tokens(counter.tokenizer, transcript)  # the agent's tool schemas: in every request
    provider = SimulatedProvider(model, counter, tools)
    problems = RequestProblemCount()
    billing = CallBilling(model, counter, summariser, tools)
    estimator.start(transcript)  # its tool schemas (and an exact first call, where it has a tokenizer)
    ctx = StrategyContext(
        model=model, estimator=estimator, transcript=transcript, workdir=workdir, summariser=summariser
    )
    if hasattr(summariser, "attach"):  # the summariser's LLM failures become events at the call they happen
        summariser.attach(ctx.emit)
    calls: list[dict[str, Any]] = []
    view = getattr(strategy, "compaction", "rewrite") == "view"
    history: list[Message] = []  # what the next call starts from
    working: list[Message] = []  # the prompt sent last
    uncompacted = counter.tokenizer.per_request + tools  # the full history's prompt size, kept incrementally
    loop_reasoning = 0  # reasoning the provider counts again: the tool loop's since the last user message
    condensations = CondensationReplay(transcript)  # the agent's own, where the transcript recorded them
    agent_history: list[Message] | None = [] if condensations else None  # what the agent held: the baseline
    start = 0
    if transcript.call_indices:
        # The replay counts every message up to the last call anyway (the full history's size);
        # counting them in one pass first, not between the strategy's steps, keeps the tokenizer's
        # tables in the CPU caches: about 7% less CPU on the 1M dbgpt replay, the same counts.
        counter.precount(transcript.messages[: transcript.call_indices[-1] + 1])
    for call_index, at in enumerate(transcript.call_indices):
        new = transcript.messages[start:at]
        uncompacted += sum(counter.sizes(new))
        for m in new:
            loop_reasoning = 0 if m.role == "user" else loop_reasoning + reasoning_tokens(m, counter.tokenizer)
        history.extend(new)
        ctx.begin_call(call_index, new)
        events_before = len(ctx.events)
        if agent_history is not None:
            agent_history.extend(new)
            due = condensations.advance(at)
            if due:
                agent_history, change = condensations.view_counted(agent_history, counter.sizes)
                uncompacted += change
                history = condensations.view(history)[0]
                ctx.emit(condensation_event(due))

        history = strategy.prepare(history, ctx)
        # A view strategy gets the history itself: layers never modify a list in place.
        working = strategy.before_call(history, ctx)
        overflow_errors = retries = 0
        accepted = False
        while True:
            try:
                sent = provider.send(working)
                accepted = True
                break
            except ContextOverflowError as error:
                sent = error.prompt_tokens
                overflow_errors += 1
                ctx.emit({"type": "overflow_error", "prompt_tokens": error.prompt_tokens, "limit": error.limit})
                if retries >= strategy.max_retries:
                    break
                smaller = strategy.on_overflow(working, error, ctx, retries)
                if smaller is None:
                    break
                working = smaller
                retries += 1
        estimated = ctx.estimate(working)  # of what was finally sent, before calibration
        if accepted:
            strategy.after_call(working, sent, ctx)

        full = uncompacted + loop_reasoning  # the full history as the provider counts it
        record = {
            "call": call_index,
            "message_index": at,
            "tokens_sent": sent,
            "tokens_uncompacted": full,
            "tokens_estimated": estimated,
            "messages_sent": len(working),
            "accepted": accepted,
            "overflow_errors": overflow_errors,
            "retries": retries,
            "layers": list(ctx.layers_applied),
            "state": ctx.state,
            "request_problems": problems(working),
            "events": len(ctx.events) - events_before,
            **(
                billing.bill(working, sent, accepted, transcript.messages, at, full, recorded=True)
                if agent_history is None
                else billing.bill(
                    working, sent, accepted, [*agent_history, transcript.messages[at]], len(agent_history), full
                )
            ),
        }
        calls.append(record)
        for observer in observers:
            if hasattr(observer, "on_call"):
                observer.on_call(record, working, ctx)
        assistant = transcript.messages[at]
        if agent_history is not None:
            agent_history.append(assistant)
        if view:
            history.append(assistant)
        else:
            working.append(assistant)
            history = working
        uncompacted += counter.message(assistant)
        loop_reasoning += reasoning_tokens(assistant, counter.tokenizer)
        start = at + 1
        if on_progress is not None:
            on_progress(1)

    if view and working is not history and transcript.call_indices:
        working = [*working, transcript.messages[transcript.call_indices[-1]]]  # the last prompt and its reply
    for observer in observers:
        if hasattr(observer, "on_end"):
            observer.on_end(working, ctx)
    return ReplayResult(calls=calls, events=ctx.events, summary=summarise_calls(calls, estimator), working=working)


def summarise_calls(calls: Sequence[dict[str, Any]], estimator: Estimator | None = None) -> dict[str, Any]:
    """Totals over a replay's per-call records (the numbers a comparison table shows)."""
    sent = [c["tokens_sent"] for c in calls]
    full = [c["tokens_uncompacted"] for c in calls]
    accepted = [c for c in calls if c["accepted"]]
    layer_counts = Counter(layer for c in calls for layer in c["layers"])
    total_full = sum(full)
    summary = {
        "calls": len(calls),
        "tokens_sent_total": sum(sent),
        "tokens_sent_peak": max(sent, default=0),
        "tokens_accepted_total": sum(c["tokens_sent"] for c in accepted),
        "tokens_uncompacted_total": total_full,
        "tokens_uncompacted_peak": max(full, default=0),
        "savings": round(1 - sum(sent) / total_full, 6) if total_full else 0.0,
        "overflow_errors": sum(c["overflow_errors"] for c in calls),
        "retries": sum(c["retries"] for c in calls),
        "failed_calls": len(calls) - len(accepted),
        "compacted_calls": sum(1 for c in calls if c["layers"]),
        "layers": dict(sorted(layer_counts.items())),
        "invalid_requests": sum(1 for c in calls if c["request_problems"]),
        "agent_cost_usd": round(sum(c["cost_usd"] for c in calls), 6),
        "estimate_mape": _mape(calls),
        **cost_summary(calls),
    }
    if estimator is not None:
        summary["estimator"] = {"name": estimator.name, **estimator.state()}
    return summary


def _mape(calls: Sequence[dict[str, Any]]) -> float:
    errors = [abs(c["tokens_estimated"] - c["tokens_sent"]) / c["tokens_sent"] for c in calls if c["tokens_sent"]]
    return round(sum(errors) / len(errors), 6) if errors else 0.0
