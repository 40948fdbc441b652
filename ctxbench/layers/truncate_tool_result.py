"""Strategy 1 of the 5-layer strategy (OpenClaw's tool-result context guard): before every
call, a single tool result longer than its char budget is cut, at a line boundary when one
falls late enough, and marked. A tool result is a ``tool`` message or an observation an older
SWE-agent sent as a user message (marked by the importer: ``transcripts.model.is_tool_result``).

The budgets are in characters on the model window, as OpenClaw computes them:
single result = window x TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE (2) x SINGLE_TOOL_RESULT_CONTEXT_SHARE
(0.5), i.e. half the window at a conservative 2 chars/token; never below 1024 chars.
"""

from __future__ import annotations

from typing import Annotated

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.transcripts.model import Message, is_tool_result
from ctxbench.transcripts.running import DerivedList, SeenPrefix

TRUNCATION_NOTICE = "[truncated: output exceeded context limit]"
TRUNCATION_SUFFIX = "\n" + TRUNCATION_NOTICE
MIN_BUDGET_CHARS = 1024
LINE_BREAK_MIN_SHARE = 0.7  # cut at the last newline only if it keeps more than 70% of the budget


def window_tokens(ctx: StrategyContext, override: int | None) -> int:
    """The window the char budgets are computed on: the override, else the model's window."""
    return max(1, int(override if override is not None else ctx.model.context_window))


def char_budget(window: int, chars_per_token: float, share: float) -> int:
    """OpenClaw's ``max(1024, floor(window x chars/token x share))``."""
    return max(MIN_BUDGET_CHARS, int(window * chars_per_token * share))


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` chars including the suffix; the cut is at the last
    newline within the body budget when that newline lies after 70% of it, else at the budget."""
    if len(text) <= max_chars:
        return text
    body = max(0, max_chars - len(TRUNCATION_SUFFIX))
    if body <= 0:
        return TRUNCATION_NOTICE
    cut = body
    newline = text.rfind("\n", 0, body + 1)  # JS lastIndexOf("\n", body): at or before index body
    if newline > body * LINE_BREAK_MIN_SHARE:
        cut = newline
    return text[:cut] + TRUNCATION_SUFFIX


class TruncateToolResult(Layer):
    name = "truncate_tool_result"

    def __init__(
        self,
        single_tool_result_context_share: Annotated[
            float, Param("share of the window one tool result may take", gt=0, le=1)
        ] = 0.5,
        tool_result_chars_per_token: Annotated[
            float, Param("characters per token assumed for a tool result", gt=0)
        ] = 2.0,
        context_window: Annotated[
            int | None, Param("the window the budget is computed on (None: the model's)", gt=0)
        ] = None,
    ) -> None:
        if not 0 < single_tool_result_context_share <= 1:
            share = single_tool_result_context_share
            raise ValueError(f"single_tool_result_context_share must be in (0, 1], got {share}")
        self.share = single_tool_result_context_share
        self.chars_per_token = tool_result_chars_per_token
        self.context_window = context_window
        self._checked = SeenPrefix()  # what the last call returned: all within budget already
        self._checked_budget: int | None = None

    def budget(self, ctx: StrategyContext) -> int:
        return char_budget(window_tokens(ctx, self.context_window), self.chars_per_token, self.share)

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        budget = self.budget(ctx)
        out: list[Message] | None = None
        cut_chars = truncated = 0
        changed: list[int] = []
        # Only what changed since the last call's list was checked (a compacted result, the new messages).
        positions = self._checked.positions(messages) if budget == self._checked_budget else range(len(messages))
        for i in positions:
            message = messages[i]
            if len(message.content) <= budget or not is_tool_result(message):
                continue
            if out is None:
                out = list(messages)
            text = truncate_text(message.content, budget)
            cut_chars += len(message.content) - len(text)
            truncated += 1
            out[i] = compacted(message, text, self.name)
            changed.append(i)
        if out is not None:  # a copy that says what changed: the followers take it from the note
            out = DerivedList(out, messages, changed)
        self._checked.remember(messages if out is None else out)
        self._checked_budget = budget
        if out is None:
            return messages
        ctx.emit(
            {"type": "five_layer.truncate", "results": truncated, "chars_removed": cut_chars, "budget_chars": budget}
        )
        return out
