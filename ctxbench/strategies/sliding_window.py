"""``sliding_window``: keep the system prompt (and the task), then the most recent whole
rounds that fit in a share of the prompt budget; on overflow, shrink the share and retry."""

from __future__ import annotations

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
        # The head (the system prompt, the task, pinned messages) is always kept; the kept rounds
        # (``group_rounds``: each assistant message after the first starts one, so no tool call is
        # separated from its result) are the longest run of whole rounds at the end that fits
        # beside it, and the last round with a message besides the head's is always kept.
        # Round costs are >= 0, so that run is found from the front: drop the oldest rounds until
        # the rest fits. A window that overflows drops a few rounds a call, so this walks those
        # few instead of every kept round (tests/test_sliding_window.py: the same messages as
        # walking back over every round).
        first_user = (
            next((i for i, m in enumerate(messages) if m.role == "user"), None) if self.keep_first_user else None
        )

        def in_head(i: int) -> bool:
            message = messages[i]
            return message.role == "system" or message.pinned or i == first_user

        first = next((i for i, m in enumerate(messages) if m.role != "system"), None)
        kept_from = len(messages)  # where the kept rounds start: all that follows is kept
        if first is not None:
            kept_from = first
            # The last message besides the head's: the round holding it is always kept.
            last = next((i for i in range(len(messages) - 1, first - 1, -1) if not in_head(i)), None)
            sizes = estimate.sizes(messages)
            used = sum(sizes)  # the head and every round: what precedes ``first`` is system prompts
            first_assistant = next((i for i in range(first, len(messages)) if messages[i].role == "assistant"), None)
            while last is not None and used > budget:
                # The round starting at ``kept_from`` ends where the next assistant message (not the first) is.
                end = next(
                    (
                        i
                        for i in range(kept_from + 1, last + 1)
                        if messages[i].role == "assistant" and i != first_assistant
                    ),
                    None,
                )
                if end is None:  # the round holds ``last``
                    break
                used -= sum(sizes[i] for i in range(kept_from, end) if not in_head(i))
                kept_from = end
        kept = [m for i, m in enumerate(messages[:kept_from]) if in_head(i)]
        kept += messages[kept_from:]
        ctx.mark_layer("sliding_window")
        ctx.emit({"type": "sliding_window", "dropped": len(messages) - len(kept), "kept": len(kept)})
        return kept
