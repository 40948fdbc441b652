"""Amortized forgetting: OpenHands' ``AmortizedForgettingCondenser``.

When the history grows past ``max_size`` messages (OpenHands counts events; here one message
is one event), keep the head (``keep_first`` messages) and the most recent messages, down to
``max_size // 2`` in all; the rest is forgotten in one go, so forgetting happens once per
``max_size // 2`` new messages instead of on every call (that is the "amortized").

Two documented differences from OpenHands, both in the direction of a valid, faithful request:
system messages are always kept (they are not counted in ``keep_first``; OpenHands' head is
usually the system prompt plus the first user message, hence ``keep_first = 1`` here), and
pinned messages are kept. A tool call is never separated from its result: a pinned message keeps
its call/result partners, and a result whose call fell off the cut is dropped with it
(``repair_tool_pairs``).

With ``target_ratio`` the layer forgets by tokens instead of by count: it keeps the head and
the longest recent tail that fits in ``target_ratio`` of the prompt budget (always at least the
last round). That is the reactive fallback the other strategies use after an overflow.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.tool_pairs import repair_tool_pairs
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import group_rounds


def with_tool_partners(messages: Sequence[Message], keep: Iterable[int]) -> set[int]:
    """``keep`` plus the tool calls and results that belong with the kept messages."""
    kept = set(keep)
    call_owner = {c.id: i for i, m in enumerate(messages) if m.role == "assistant" for c in m.tool_calls}
    results: dict[str, list[int]] = {}
    for i, message in enumerate(messages):
        if message.role == "tool" and message.tool_call_id is not None:
            results.setdefault(message.tool_call_id, []).append(i)
    for i in list(kept):
        message = messages[i]
        if message.role == "tool" and message.tool_call_id in call_owner:
            kept.add(call_owner[message.tool_call_id])
    for i in list(kept):
        for call in messages[i].tool_calls:
            kept.update(results.get(call.id, ()))
    return kept


def head_indices(messages: Sequence[Message], keep_first: int) -> list[int]:
    """System messages plus the first ``keep_first`` other messages from the first user message on
    (the task): an agent's greeting before the task is not the task."""
    head = [i for i, m in enumerate(messages) if m.role == "system"]
    task = next((i for i, m in enumerate(messages) if m.role == "user"), 0)
    others = [i for i in range(task, len(messages)) if messages[i].role != "system"]
    return sorted({*head, *others[:keep_first]})


class AmortizedForgetting(Layer):
    def __init__(
        self,
        max_size: Annotated[
            int | None, Param("forget when the history passes this many messages (down to half)", ge=1)
        ] = 100,
        keep_first: Annotated[int, Param("head messages kept, beside the system messages", ge=0)] = 1,
        target_ratio: Annotated[
            float | None,
            Param("forget by tokens instead: keep the tail that fits this share of the budget", gt=0, le=1),
        ] = None,
        keep_pinned: Annotated[bool, Param("keep pinned messages")] = True,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "amortized_forgetting",
    ) -> None:
        if max_size is None and target_ratio is None:
            raise ValueError("set max_size (forget by count) or target_ratio (forget by tokens)")
        if max_size is not None and keep_first >= max_size // 2:
            raise ValueError(f"keep_first ({keep_first}) must be less than half of max_size ({max_size})")
        if keep_first < 0:
            raise ValueError(f"keep_first must be >= 0, got {keep_first}")
        if target_ratio is not None and not 0 < target_ratio <= 1:
            raise ValueError(f"target_ratio must be in (0, 1], got {target_ratio}")
        self.max_size = max_size
        self.keep_first = keep_first
        self.target_ratio = target_ratio
        self.keep_pinned = keep_pinned
        self.name = name

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        head = head_indices(messages, self.keep_first)
        if self.target_ratio is not None:
            tail_start = self._tail_by_tokens(messages, head, ctx)
        else:
            tail_start = self._tail_by_count(messages, head)
        if tail_start is None:
            return messages
        keep = set(head) | set(range(tail_start, len(messages)))
        if self.keep_pinned:
            # A pinned message keeps its call/result partners; orphans at the tail's edge are dropped below.
            keep |= with_tool_partners(messages, (i for i, m in enumerate(messages) if m.pinned))
        if len(keep) == len(messages):
            return messages
        out = repair_tool_pairs([m for i, m in enumerate(messages) if i in keep])
        ctx.emit(
            {
                "type": "amortized_forgetting",
                "forgotten": len(messages) - len(out),
                "kept": len(out),
                "mode": "tokens" if self.target_ratio is not None else "count",
            }
        )
        return out

    def _tail_by_count(self, messages: list[Message], head: list[int]) -> int | None:
        """OpenHands: over ``max_size``, keep head + tail of ``max_size // 2 - len(head)``."""
        assert self.max_size is not None
        if len(messages) <= self.max_size:
            return None
        # Head here includes system messages that OpenHands' keep_first would count; at least one tail message.
        tail_length = max(1, self.max_size // 2 - len(head))
        return max(len(messages) - tail_length, max(head, default=-1) + 1)

    def _tail_by_tokens(self, messages: list[Message], head: list[int], ctx: StrategyContext) -> int | None:
        assert self.target_ratio is not None
        estimate = ctx.estimator.message
        target = self.target_ratio * ctx.model.prompt_budget
        if ctx.estimator.prompt(messages) <= target:
            return None
        rounds = [r for r in group_rounds(messages) if any(i not in head for i in r)]
        if not rounds:
            return None
        head_set = set(head)
        used = sum(estimate(messages[i]) for i in head)
        start = rounds[-1][0]
        used += sum(estimate(messages[i]) for i in range(start, len(messages)) if i not in head_set)
        # Walk back message by message; a cut that lands on a tool result is repaired afterwards.
        while start - 1 > max(head, default=-1):
            cost = estimate(messages[start - 1])
            if used + cost > target:
                break
            used += cost
            start -= 1
        return start
