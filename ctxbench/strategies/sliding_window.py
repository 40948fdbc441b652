"""``sliding_window``: keep the system prompt (and the task), then the most recent whole
rounds that fit in a share of the prompt budget; on overflow, shrink the share and retry."""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate
from typing import Annotated

from ctxbench.core import ContextOverflowError, Param, Strategy, StrategyContext
from ctxbench.transcripts.model import Message


class SlidingWindow(Strategy):
    def __init__(
        self,
        budget_ratio: Annotated[
            float, Param("share of the prompt budget the kept messages may fill", gt=0, le=1)
        ] = 0.8,
        keep_first_user: Annotated[bool, Param("the first user message (the task) stays")] = True,
        max_retries: Annotated[int, Param("retries after an overflow, each keeping less", ge=0)] = 3,
        retry_shrink: Annotated[
            float, Param("each retry keeps this share of what the previous one kept", gt=0, le=1)
        ] = 0.5,
        name: Annotated[str, Param("the strategy's name in results")] = "sliding_window",
    ) -> None:
        if not 0 < budget_ratio <= 1:
            raise ValueError(f"budget_ratio must be in (0, 1], got {budget_ratio}")
        self.budget_ratio = budget_ratio
        self.keep_first_user = keep_first_user
        self.max_retries = max_retries
        self.retry_shrink = retry_shrink
        self.name = name

    def before_call(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        return self._fit(messages, ctx, int(ctx.model.prompt_budget * self.budget_ratio))

    def on_overflow(
        self, messages: list[Message], error: ContextOverflowError, ctx: StrategyContext, attempt: int
    ) -> list[Message] | None:
        budget = int(ctx.model.prompt_budget * self.budget_ratio * self.retry_shrink**attempt)
        return self._fit(messages, ctx, budget)

    def _fit(self, messages: list[Message], ctx: StrategyContext, budget: int) -> list[Message]:
        estimate = ctx.estimator
        if estimate.prompt(messages) <= budget:
            return messages
        head = [i for i, m in enumerate(messages) if m.role == "system" or m.pinned]
        if self.keep_first_user:
            first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
            if first_user is not None and first_user not in head:
                head.append(first_user)
        head.sort()
        sizes = estimate.sizes(messages)
        running = list(accumulate(sizes, initial=0))  # running[i]: the first i messages' estimate
        used = sum(sizes[i] for i in head)
        # Walk back over whole rounds (``group_rounds``: each assistant message after the first
        # starts one) so no tool call is separated from its result; the last round is always kept.
        starts = [i for i, m in enumerate(messages) if m.role == "assistant"][1:]
        first = next((i for i, m in enumerate(messages) if m.role != "system"), None)
        kept_from = len(messages)  # where the kept rounds start: all that follows is kept
        kept_any = False  # whether a kept round held a message besides the head's
        if first is not None:
            starts.insert(0, first)
            end = len(messages)
            for start in reversed(starts):
                # The round's messages less the head's among them (the system prompt, the task, pinned ones).
                inside = head[bisect_left(head, start) : bisect_left(head, end)]
                cost = running[end] - running[start] - sum(sizes[i] for i in inside)
                if kept_any and used + cost > budget:
                    break
                kept_any = kept_any or end - start > len(inside)
                kept_from, end = start, start
                used += cost
        kept = [messages[i] for i in head if i < kept_from]
        kept += messages[kept_from:]
        ctx.mark_layer("sliding_window")
        ctx.emit({"type": "sliding_window", "dropped": len(messages) - len(kept), "kept": len(kept)})
        return kept
