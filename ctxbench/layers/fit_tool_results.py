"""After the summary, tool results cut until the prompt fits (OpenClaw's overflow recovery: run.ts
retries an overflow with compaction, then truncates tool results, ``truncateOversizedToolResultsInSession``).

What compaction cannot shrink is the kept tail's newest result: the agent has just received it and
the model has not seen it. On a small window the system prompt, the tool schemas and that one result
may already be over the prompt budget (OpenHands on a 12k window: 4,571 tokens of system prompt and
tool schemas, a file listing of 11,988 characters and 4,136 tokens, a 7,904-token budget), and then no
summary rescues the call. OpenClaw's recovery cuts tool results, newest first
(``buildAggregateToolResultReplacements``), until they fit its budget.

``budget`` says which budget:

* ``prompt`` (default): the prompt's estimate (the strategy's estimator, tool schemas included) within
  the prompt budget over SAFETY_MARGIN 1.2, OpenClaw's buffer for the estimate's error; when the provider
  already rejected a prompt of this call and counted more than its estimate, over that ratio too
  (OpenClaw hands compaction the token count of the overflow error, ``currentTokenCount``). No result
  is cut below ``min_keep_chars`` (OpenClaw's recovery: 0).
* ``openclaw``: OpenClaw's own numbers, ``MAX_TOOL_RESULT_CONTEXT_SHARE`` 0.3 of the window at 4
  chars/token, for each result and for all results together (with at least two results). After
  strategy 1 no result is over window x 2 x 0.5 chars, under 0.3 x 4 x window, so only the
  aggregate rule can fire; on the 12k OpenHands calls above it never does.
* ``none``: nothing is cut (the summary alone).

A cut result ends with strategy 1's marker; tool results are ``tool`` messages and the observations an
importer marked (``transcripts.model.is_tool_result``).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.layers.truncate_tool_result import TRUNCATION_NOTICE, truncate_text
from ctxbench.transcripts.model import Message, is_tool_result

MAX_TOOL_RESULT_CONTEXT_SHARE = 0.3  # OpenClaw's tool-result-truncation.ts
OPENCLAW_CHARS_PER_TOKEN = 4


def observed_ratio(ctx: StrategyContext) -> float:
    """The provider's count of the last prompt of this call it rejected over the strategy's estimate of
    that prompt (the last ``context.status`` before the ``overflow_error`` event); 1 when there is none or
    the estimate was not under."""
    events = ctx.events
    for k in range(len(events) - 1, -1, -1):
        event = events[k]
        if event.get("call") != ctx.call_index:
            break
        if event.get("type") != "overflow_error":
            continue
        for j in range(k - 1, -1, -1):
            earlier = events[j]
            if earlier.get("call") != ctx.call_index:
                break
            if earlier.get("type") == "context.status" and earlier.get("used"):
                return max(1.0, float(event.get("prompt_tokens") or 0) / float(earlier["used"]))
        break
    return 1.0


class FitToolResults(Layer):
    name = "fit_tool_results"

    def __init__(
        self,
        budget: Annotated[
            Literal["prompt", "openclaw", "none"],
            Param("cut until the prompt's estimate fits the prompt budget, to OpenClaw's 0.3 of the window, or not"),
        ] = "prompt",
        safety_margin: Annotated[float, Param("the estimate must fit the prompt budget over this", ge=1)] = 1.2,
        min_keep_chars: Annotated[
            int, Param("no result is cut below this many characters (at a line break after 70% of them)", ge=0)
        ] = 0,
        context_window: Annotated[
            int | None, Param("the window OpenClaw's share is taken of (None: the model's)", gt=0)
        ] = None,
    ) -> None:
        if budget not in ("prompt", "openclaw", "none"):
            raise ValueError(f"budget must be prompt, openclaw or none, got {budget!r}")
        self.budget = budget
        self.safety_margin = float(safety_margin)
        self.min_keep_chars = int(min_keep_chars)
        self.context_window = context_window

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        results = [i for i, m in enumerate(messages) if is_tool_result(m)]
        if not results or self.budget == "none":
            return messages
        out = list(messages)
        before = ctx.estimator.prompt(messages)
        ratio = observed_ratio(ctx)
        if self.budget == "prompt":
            cut = self._fit_prompt(out, results, ctx, before, ratio)
        else:
            cut = self._fit_openclaw(out, results, ctx)
        if not cut:
            return messages
        removed = sum(len(messages[i].content) - len(out[i].content) for i in cut)
        ctx.emit(
            {
                "type": "five_layer.fit",
                "budget": self.budget,
                "results": len(cut),
                "chars_removed": removed,
                "estimate_before": before,
                "estimate_after": ctx.estimator.prompt(out),
                "observed_ratio": round(ratio, 4),
            }
        )
        return out

    def _cut(self, out: list[Message], i: int, keep: int) -> bool:
        """Cut result ``i`` to ``keep`` characters (never below ``min_keep_chars``); whether it changed."""
        message = out[i]
        text = truncate_text(message.content, max(self.min_keep_chars, keep))
        if len(text) >= len(message.content):
            return False
        out[i] = compacted(message, text, self.name)
        return True

    def _fit_prompt(
        self, out: list[Message], results: list[int], ctx: StrategyContext, before: int, ratio: float
    ) -> list[int]:
        target = int(ctx.model.prompt_budget / self.safety_margin / ratio)
        need = before - target
        cut: list[int] = []
        for i in reversed(results):  # newest first, as OpenClaw's aggregate recovery
            if need <= 0:
                break
            message = out[i]
            tokens = ctx.estimator.message(message)
            if tokens <= 0 or len(message.content) <= len(TRUNCATION_NOTICE):
                continue
            chars_per_token = len(message.content) / tokens
            keep = len(message.content) - math.ceil(need * chars_per_token)
            if self._cut(out, i, keep):
                need -= tokens - ctx.estimator.message(out[i])
                cut.append(i)
        return cut

    def _fit_openclaw(self, out: list[Message], results: list[int], ctx: StrategyContext) -> list[int]:
        window = int(self.context_window or ctx.model.context_window)
        max_chars = int(window * MAX_TOOL_RESULT_CONTEXT_SHARE) * OPENCLAW_CHARS_PER_TOKEN
        cut = [i for i in results if len(out[i].content) > max_chars and self._cut(out, i, max_chars)]
        total = sum(len(out[i].content) for i in results)
        if len(results) < 2 or total <= max_chars:
            return cut
        excess = total - max_chars
        for i in reversed(results):
            if excess <= 0:
                break
            length = len(out[i].content)
            if self._cut(out, i, length - excess):
                excess -= length - len(out[i].content)
                if i not in cut:
                    cut.append(i)
        return cut
