"""Tool-result clearing: Anthropic's context-editing strategy ``clear_tool_uses_20250919``.

When the prompt reaches the trigger, the oldest tool results are replaced by a placeholder,
keeping the ``keep`` most recent tool uses; tools in ``exclude_tools`` are never cleared;
``clear_tool_inputs`` also clears the call arguments (all tools when true, or only the listed
ones). If clearing everything eligible would free fewer than ``clear_at_least`` tokens,
nothing is cleared (Anthropic: clearing breaks the prompt cache, so it must be worth it).

Defaults are Anthropic's documented ones (trigger 100,000 input tokens, keep 3 tool uses,
clear_at_least none, no inputs cleared). The API docs only say "placeholder text"; the text
used here is the one Anthropic's own Claude Code client puts in place of cleared results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.transcripts.model import Message, ToolCall

CLEARED_RESULT = "[Old tool result content cleared]"
CLEARED_INPUT = "{}"  # arguments are JSON text; an empty object stays valid for any provider


@dataclass(frozen=True)
class ToolUse:
    """One tool call and where its call and result sit in the message list."""

    call_message: int
    call_position: int
    result_message: int | None
    tool: str


def tool_uses(messages: Sequence[Message]) -> list[ToolUse]:
    """Every tool call in order, with the index of its result (None when it has none)."""
    results = {m.tool_call_id: i for i, m in enumerate(messages) if m.role == "tool"}
    uses = []
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue
        for position, call in enumerate(message.tool_calls):
            uses.append(ToolUse(i, position, results.get(call.id), call.name))
    return uses


class ClearToolUses(Layer):
    """Clear old tool results once the prompt reaches ``trigger_tokens`` or ``trigger_ratio``.

    ``trigger_ratio`` is a share of the model's prompt budget (window - reserved output); when
    both are set the layer fires at whichever is reached first; when neither is set it fires
    whenever its pipeline step runs. ``keep`` counts the most recent tool uses of any tool (excluded
    tools included); parallel calls are separate tool uses. Anthropic's ``tool_uses`` trigger unit is
    not offered: token triggers are what replays compare.
    """

    def __init__(
        self,
        trigger_tokens: Annotated[int | None, Param("clear when the prompt reaches this many tokens", ge=0)] = 100_000,
        trigger_ratio: Annotated[
            float | None, Param("or this share of the prompt budget (above 1: never)", ge=0)
        ] = None,
        keep: Annotated[int, Param("the newest tool uses kept", ge=0)] = 3,
        clear_at_least: Annotated[int, Param("clear only when this many tokens are freed", ge=0)] = 0,
        exclude_tools: Annotated[Sequence[str], Param("tools whose results are never cleared")] = (),
        clear_tool_inputs: Annotated[
            bool | Sequence[str], Param("also clear call arguments: of every tool (true) or of these")
        ] = False,
        placeholder: Annotated[str, Param("the text that replaces a cleared result")] = CLEARED_RESULT,
        input_placeholder: Annotated[str, Param("the text that replaces cleared arguments")] = CLEARED_INPUT,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "clear_tool_uses",
    ) -> None:
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        if trigger_ratio is not None and trigger_ratio <= 0:
            raise ValueError(f"trigger_ratio must be > 0, got {trigger_ratio}")
        self.trigger_tokens = trigger_tokens
        self.trigger_ratio = trigger_ratio
        self.keep = keep
        self.clear_at_least = max(0, int(clear_at_least or 0))
        self.exclude_tools = frozenset(exclude_tools or ())
        self.clear_tool_inputs = clear_tool_inputs
        self.placeholder = placeholder
        self.input_placeholder = input_placeholder
        self.name = name

    def triggered(self, used: int, ctx: StrategyContext) -> bool:
        thresholds: list[float] = []
        if self.trigger_tokens is not None:
            thresholds.append(self.trigger_tokens)
        if self.trigger_ratio is not None:
            thresholds.append(self.trigger_ratio * ctx.model.prompt_budget)
        return not thresholds or used >= min(thresholds)

    def _clears_input(self, tool: str) -> bool:
        if isinstance(self.clear_tool_inputs, bool):
            return self.clear_tool_inputs
        return tool in self.clear_tool_inputs

    @staticmethod
    def _is_cleared(message: Message) -> bool:
        return bool(message.metadata.get("cleared"))  # by any clearing layer

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        used = ctx.estimator.prompt(messages)
        if not self.triggered(used, ctx):
            return messages
        uses = tool_uses(messages)
        candidates = uses[: max(0, len(uses) - self.keep)]
        changed: dict[int, Message] = {}
        cleared_uses = 0
        for use in candidates:
            if use.tool in self.exclude_tools or use.result_message is None:
                continue
            result = messages[use.result_message]
            if self._is_cleared(result) or result.pinned:
                continue
            changed[use.result_message] = compacted(result, self.placeholder, self.name)
            changed[use.result_message].metadata["cleared"] = True
            cleared_uses += 1
            if self._clears_input(use.tool):
                call_message = changed.get(use.call_message, messages[use.call_message])
                calls = list(call_message.tool_calls)
                old = calls[use.call_position]
                calls[use.call_position] = ToolCall(id=old.id, name=old.name, arguments=self.input_placeholder)
                if use.call_message not in changed:
                    call_message = compacted(call_message, call_message.content, self.name)
                changed[use.call_message] = call_message.replace(tool_calls=tuple(calls))
        if not changed:
            return messages
        estimate = ctx.estimator.message
        freed = sum(estimate(messages[i]) - estimate(m) for i, m in changed.items())
        if freed <= 0 or freed < self.clear_at_least:
            ctx.emit(
                {
                    "type": "clear_tool_uses.skipped",
                    "reason": "below clear_at_least",
                    "would_clear": freed,
                    "clear_at_least": self.clear_at_least,
                }
            )
            return messages
        out = [changed.get(i, m) for i, m in enumerate(messages)]
        ctx.emit(
            {
                "type": "clear_tool_uses",
                "cleared_tool_uses": cleared_uses,
                "cleared_input_tokens": freed,
                "kept_tool_uses": min(self.keep, len(uses)),
            }
        )
        return out
