"""Strategy 3 of the 5-layer strategy: message-history pruning (on an overflow error, and
preemptively when the estimate passes PREEMPTIVE_OVERFLOW_RATIO x window).

Kept: every system message, the first user message, pinned messages (``Message.pinned``, the
document's ``_pin: true``), the last N = min(6, floor(total/3)) messages and the current (last)
message; a recent block that would start with tool results is extended back to their assistant
call, so the current message is never dropped as an orphan. The pruned middle becomes one
notice ``[context compacted: X earlier messages removed]`` placed just before the recent
messages; then orphaned tool pairs are repaired as OpenClaw's session-transcript-repair does, so
the request stays valid: a tool result whose call was pruned is dropped (and counted in the
notice), a call whose result was pruned gets a synthetic error result (``orphan_calls="strip"``
strips it instead, the reading before issue 26). A pinned message is never dropped: a pinned tool
result keeps its call.

The notice carries the pruned messages in ``metadata["pruned_messages"]`` (never sent to the
provider): a later LLM summary (strategies 4-5) summarises them, as OpenClaw summarises from the
session transcript rather than from the pruned view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.tool_pairs import repair_as_openclaw
from ctxbench.transcripts.model import Message

NOTICE_TEMPLATE = "[context compacted: {removed} earlier messages removed]"
PRUNED_KEY = "pruned_messages"


def recent_count(total: int, max_recent: int = 6) -> int:
    """N = min(6, floor(total / 3))."""
    return min(max_recent, total // 3)


def head_indices(messages: Sequence[Message], first_user: bool = True) -> set[int]:
    """System messages, the first user message (unless ``first_user`` is false) and pinned messages:
    never pruned or summarised."""
    keep = {i for i, m in enumerate(messages) if m.role == "system" or m.pinned}
    pinned_results = {m.tool_call_id for i, m in enumerate(messages) if m.pinned and m.role == "tool"}
    if pinned_results:  # a pinned result keeps its call, or the repair would drop it as an orphan
        keep |= {
            i
            for i, m in enumerate(messages)
            if m.role == "assistant" and any(c.id in pinned_results for c in m.tool_calls)
        }
    task = next((i for i, m in enumerate(messages) if m.role == "user"), None) if first_user else None
    if task is not None:
        keep.add(task)
    return keep


def split_history(messages: Sequence[Message], max_recent: int = 6) -> tuple[list[int], list[int], list[int]]:
    """(kept head indices, middle indices to remove, recent indices incl. the current message)."""
    total = len(messages)
    recent_start = total - max(1, recent_count(total, max_recent)) if total else 0
    # A recent block starting with tool results takes their assistant call along, so the current
    # message never loses its call to the orphan repair.
    while 0 < recent_start < total and messages[recent_start].role == "tool":
        recent_start -= 1
    head = head_indices(messages)
    kept_head = sorted(i for i in head if i < recent_start)
    middle = [i for i in range(recent_start) if i not in head]
    return kept_head, middle, list(range(recent_start, total))


def pruned_payload(removed: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in removed]


class PruneHistory(Layer):
    name = "prune_history"

    def __init__(
        self,
        max_recent: Annotated[int, Param("the newest messages kept (at most a third of the history)", ge=0)] = 6,
        notice_role: Annotated[str, Param("role of the '[context compacted: ...]' notice")] = "user",
        orphan_calls: Annotated[
            Literal["synthetic", "strip"],
            Param("a kept call whose result was pruned: OpenClaw's synthetic error result, or stripped"),
        ] = "synthetic",
    ) -> None:
        if notice_role not in ("user", "assistant", "system"):
            raise ValueError(f"notice_role must be user, assistant or system, got {notice_role!r}")
        if orphan_calls not in ("synthetic", "strip"):
            raise ValueError(f"orphan_calls must be synthetic or strip, got {orphan_calls!r}")
        self.orphan_calls = orphan_calls
        self.max_recent = max_recent
        self.notice_role = notice_role

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        kept_head, middle, recent = split_history(messages, self.max_recent)
        if not middle:
            return messages
        placeholder = Message(role=self.notice_role, content="")  # type: ignore[arg-type]
        candidate = [messages[i] for i in kept_head] + [placeholder] + [messages[i] for i in recent]
        repaired, repair = repair_as_openclaw(candidate, self.orphan_calls)
        # The notice counts every message the prune took out, those the repair dropped too.
        removed = [messages[i] for i in middle] + repair.dropped
        notice = Message(
            role=self.notice_role,  # type: ignore[arg-type]
            content=NOTICE_TEMPLATE.format(removed=len(removed)),
            metadata={"compacted_by": [self.name], PRUNED_KEY: pruned_payload(removed)},
        )
        repaired = [notice if m is placeholder else m for m in repaired]
        estimate = ctx.estimator.prompt
        if estimate(repaired) >= estimate(messages):  # a tiny middle: the notice would cost more
            return messages
        ctx.emit(
            {
                "type": "five_layer.prune",
                "removed": len(removed),
                "kept": len(repaired),
                "recent": len(recent),
                "orphan_results_dropped": sum(1 for m in repair.dropped if m.role == "tool"),
                "orphan_calls_stripped": repair.stripped,
                "synthetic_results_added": repair.added,
            }
        )
        return repaired
