"""Strategy 2 of the 5-layer strategy (OpenClaw's tool-result context guard): when the whole
input exceeds its char budget, replace old tool results with a placeholder, oldest first,
until it fits again.

* Total budget = window x CHARS_PER_TOKEN_ESTIMATE (4) x CONTEXT_INPUT_HEADROOM_RATIO (0.75),
  never below 1024 chars.
* The input is measured as OpenClaw's ``estimateContextChars`` does: tool results count
  ``ceil(chars x 4/2)`` (they are denser: 2 chars/token against 4), other messages their chars.
* Only whitelisted high-output tools are compacted (the design document's list); Write/Create
  results are always kept because later steps build on them; the newest results are kept
  (the trailing results the model has not seen yet are never touched, and the walk stops as
  soon as enough is freed).
* The later OpenClaw variant (ctxbench/configs/strategy/five_layer_v2.yaml): headroom 0.8, the 3 most
  recent tool results protected, and MIN_COMPACTION_SAVINGS_RATIO 0.2: a pass runs only if it
  can free at least 20% of the budget, then frees at least that much (hysteresis), and skips
  results that would save less than twice the placeholder.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ctxbench.core import StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.layers.truncate_tool_result import char_budget, window_tokens
from ctxbench.tokens.estimators import message_chars
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.running import RunningSum

COMPACTION_PLACEHOLDER = "[compacted: tool output removed to free context]"
DEFAULT_WHITELIST = ("Read File", "Bash", "Grep", "Glob", "Search Files", "Web Fetch", "Edit")
DEFAULT_KEEP = ("Write", "Create")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_FILE_WORDS = ("file", "files")


def name_words(name: str) -> tuple[str, ...]:
    """``"Read File"``, ``"read_file"``, ``"ReadFile"`` -> ("read", "file")."""
    return tuple(w.lower() for w in _WORD.findall(name))


def tool_matches(tool: str, entry: str) -> bool:
    """Case-, space-, underscore- and camelCase-insensitive match of a tool name to a list entry:
    the entry's words appear as a run in the tool's words (``edit_file``, ``execute_bash`` match
    ``Edit``, ``Bash``), or the tool is the entry without its trailing "file(s)" (Claude Code's
    ``Read`` matches ``Read File``). ``web_search`` does not match ``Search Files``."""
    tool_w, entry_w = name_words(tool), name_words(entry)
    if not tool_w or not entry_w:
        return False
    n = len(entry_w)
    if any(tool_w[i : i + n] == entry_w for i in range(len(tool_w) - n + 1)):
        return True
    return len(entry_w) > 1 and entry_w[-1] in _FILE_WORDS and tool_w == entry_w[:-1]


def tool_names(messages: Sequence[Message]) -> dict[int, str]:
    """Index of each tool result -> its tool's name (its own ``name``, else its call's name)."""
    by_call = {c.id: c.name for m in messages if m.role == "assistant" for c in m.tool_calls}
    return {i: m.name or by_call.get(m.tool_call_id or "", "") for i, m in enumerate(messages) if m.role == "tool"}


def estimate_chars(message: Message, chars_per_token: float = 4.0, tool_chars_per_token: float = 2.0) -> int:
    """OpenClaw's per-message char estimate: tool results weighted by 4/2, others as they are."""
    if message.role == "tool":
        chars = len(message.content)
        return max(chars, math.ceil(chars * chars_per_token / tool_chars_per_token))
    return message_chars(message)


class CompactOldToolResults(Layer):
    name = "compact_old_tool_results"

    def __init__(
        self,
        context_input_headroom_ratio: float = 0.75,
        chars_per_token: float = 4.0,
        tool_result_chars_per_token: float = 2.0,
        whitelist: Sequence[str] = DEFAULT_WHITELIST,
        keep_tools: Sequence[str] = DEFAULT_KEEP,
        protect_trailing_results: bool = True,
        protect_recent_results: int = 0,
        min_compaction_savings_ratio: float = 0.0,
        context_window: int | None = None,
    ) -> None:
        self.headroom = context_input_headroom_ratio
        self.chars_per_token = chars_per_token
        self.tool_chars_per_token = tool_result_chars_per_token
        self.whitelist = tuple(whitelist)
        self.keep_tools = tuple(keep_tools)
        self.protect_trailing = protect_trailing_results
        self.protect_recent = max(0, int(protect_recent_results))
        self.min_savings_ratio = min_compaction_savings_ratio
        self.context_window = context_window
        self._chars_key = f"openclaw_chars:{chars_per_token}:{tool_result_chars_per_token}"
        self._eligible: dict[str, bool] = {}  # per tool name: matching words is the hot spot on long histories
        self._total = RunningSum(self.chars)  # the context's estimated chars, walked only where it changed

    def budget(self, ctx: StrategyContext) -> int:
        return char_budget(window_tokens(ctx, self.context_window), self.chars_per_token, self.headroom)

    def chars(self, message: Message) -> int:
        # Cached on the (immutable) message: the total is taken over the whole context every call.
        cached = message.token_cache.get(self._chars_key)
        if cached is None:
            cached = estimate_chars(message, self.chars_per_token, self.tool_chars_per_token)
            message.token_cache[self._chars_key] = cached
        return cached

    def eligible(self, tool: str) -> bool:
        known = self._eligible.get(tool)
        if known is None:
            keep = any(tool_matches(tool, k) for k in self.keep_tools)
            known = self._eligible[tool] = not keep and any(tool_matches(tool, e) for e in self.whitelist)
        return known

    def _protected(self, messages: Sequence[Message], results: list[int]) -> set[int]:
        protected = set(results[len(results) - self.protect_recent :]) if self.protect_recent else set()
        if self.protect_trailing:  # results after the last assistant message: not yet seen by the model
            i = len(messages)
            while i > 0 and messages[i - 1].role == "tool":
                i -= 1
                protected.add(i)
        return protected

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        budget = self.budget(ctx)
        total = self._total(messages)
        if total <= budget:
            return messages
        names = tool_names(messages)
        protected = self._protected(messages, sorted(names))
        placeholder = self.chars(Message(role="tool", content=COMPACTION_PLACEHOLDER))
        min_each = 2 * len(COMPACTION_PLACEHOLDER) if self.min_savings_ratio > 0 else 1
        candidates = [
            (i, self.chars(messages[i]) - placeholder)
            for i in sorted(names)  # oldest first
            if i not in protected and self.eligible(names[i]) and messages[i].content != COMPACTION_PLACEHOLDER
        ]
        candidates = [(i, saving) for i, saving in candidates if saving >= min_each]
        needed = total - budget
        if self.min_savings_ratio > 0:
            min_pass = int(budget * self.min_savings_ratio)
            if sum(saving for _, saving in candidates) < min_pass:
                ctx.emit({"type": "five_layer.compact", "skipped": "below_min_savings", "budget_chars": budget})
                return messages
            needed = max(needed, min_pass)
        out = list(messages)
        freed = 0
        done: list[int] = []
        for i, saving in candidates:
            out[i] = compacted(messages[i], COMPACTION_PLACEHOLDER, self.name)
            freed += saving
            done.append(i)
            if freed >= needed:
                break
        if not done:
            return messages
        ctx.emit(
            {
                "type": "five_layer.compact",
                "results": len(done),
                "chars_before": total,
                "chars_freed": freed,
                "budget_chars": budget,
                "under_budget": total - freed <= budget,
            }
        )
        return out
