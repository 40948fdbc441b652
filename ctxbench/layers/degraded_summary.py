"""Strategy 5 of the 5-layer strategy: the summary degrades instead of failing (OpenClaw's
``summarizeWithFallback``). This layer is strategy 4 (``ChunkedSummary``) plus the fallbacks,
so ctxbench/configs/strategy/five_layer.yaml uses it alone for strategies 4 and 5.

* Level 1: the full chunked summary, each call tried 3 times (backoff recorded, not slept).
* Level 2: messages whose estimated tokens x SAFETY_MARGIN 1.2 exceed 0.5 x window are left out
  (with the tool batch they belong to, so no call is summarised without its result) and noted
  as ``[Large {role} (~NK tokens) omitted from summary]``; the rest is summarised. Tried whenever
  small messages remain, oversized ones or not (OpenClaw's ``summarizeWithFallback``): a transient
  failure of level 1 is often over by then.
* Level 3: the bare notice ``Context contained N messages (M oversized). Summary unavailable
  due to size limits.``

The ``five_layer.summary`` event records the level reached, the failures, the backoff and the
summariser's usage and cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ctxbench.core import StrategyContext
from ctxbench.layers.chunked_summary import ChunkedSummary, SummaryRun, tool_groups
from ctxbench.llm.base import SummariserError
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Message

OVERSIZED_SHARE = 0.5
OVERSIZED_NOTE = "[Large {role} (~{k}K tokens) omitted from summary]"
BARE_NOTICE = "Context contained {n} messages ({m} oversized). Summary unavailable due to size limits."


def oversized_plan(
    messages: Sequence[Message], estimator: Estimator, window: int, safety_margin: float = 1.2
) -> tuple[list[Message], list[str]]:
    """(messages small enough to summarise, notes for the oversized ones)."""
    threshold = window * OVERSIZED_SHARE
    tokens = [estimator.message(m) for m in messages]
    small: list[Message] = []
    notes: list[str] = []
    for start, end in tool_groups(messages):
        big = [i for i in range(start, end) if tokens[i] * safety_margin > threshold]
        # ~NK rounds half up, as JS Math.round does
        notes.extend(OVERSIZED_NOTE.format(role=messages[i].role, k=math.floor(tokens[i] / 1000 + 0.5)) for i in big)
        drop_batch = any(messages[i].role in ("assistant", "tool") for i in big)
        for i in range(start, end):
            if i in big or (drop_batch and messages[i].role in ("assistant", "tool")):
                continue
            small.append(messages[i])
    return small, notes


def notice_cause(failures: Sequence[str]) -> str:
    """What really led to the level-3 notice (whose text, sent to the model, always says "size
    limits"): the last failure's family and kind."""
    kind = failures[-1] if failures else "error"
    if kind == "overflow":
        return f"size limits: {kind}"
    if kind in ("empty", "malformed", "truncated"):
        return f"malformed output: {kind}"
    return f"provider errors: {kind}"


class DegradedSummary(ChunkedSummary):
    name = "degraded_summary"

    def produce(
        self, ctx: StrategyContext, source: list[Message], run: SummaryRun
    ) -> tuple[str | None, int | None, dict[str, Any]]:
        try:
            return self.summarise(ctx, source, run), 1, {}
        except SummariserError as error:
            first = error.kind
        small, notes = oversized_plan(source, ctx.estimator, self.window(ctx), self.plan.safety_margin)
        extra: dict[str, Any] = {"failed": first, "oversized": len(notes)}
        if small:
            try:
                text = self.summarise(ctx, small, run)
                return text + ("\n\n" + "\n".join(notes) if notes else ""), 2, extra
            except SummariserError as error:
                extra["failed_level2"] = error.kind
        extra["notice_cause"] = notice_cause(run.failures)
        return BARE_NOTICE.format(n=len(source), m=len(notes)), 3, extra
