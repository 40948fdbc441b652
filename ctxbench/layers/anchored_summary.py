"""Anchored iterative summarisation (Factory, "Compressing context", 2025).

One persistent summary with fixed sections lives on the layer (one strategy object serves one
transcript). When the layer runs, only the span newly evicted since the last anchor (the
messages between the summary, or the task if there is none yet, and the keep-recent tail) is
summarised, and that delta is merged into the persistent summary section by section; the
summary message replaces the evicted span. Older content is never re-summarised, so the
summary does not drift like a summary rewritten from itself ("telephone game"); each event
still records how many times the summary was built on a previous one, since that drift is what
users measure.

Merge rules: ``Session Intent`` is anchored (set once, never overwritten); ``Current State``
and ``Next Steps`` take the newest non-empty entries; every other section accumulates unique
bullets, the oldest dropped first when the summary outgrows its budget. The summary message is a
pinned user message right after the task, so later layers (forgetting, pruning) keep it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.amortized_forgetting import with_tool_partners
from ctxbench.layers.base import Layer
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import group_rounds

# Factory's published sections (Session Intent, File Modifications, Decisions Made, Next Steps)
# plus the reads, errors and current state its probes ask about (artifact trail, recall).
DEFAULT_SECTIONS: tuple[str, ...] = (
    "Session Intent",
    "Files Modified",
    "Files Read",
    "Decisions Made",
    "Errors Encountered",
    "Current State",
    "Next Steps",
)
ANCHORED_SECTIONS = ("session intent",)
REPLACED_SECTIONS = ("current state", "next steps")
PROMPT_FILE = Path(__file__).resolve().parent.parent / "prompts" / "anchored_summary.txt"
CHARS_PER_TOKEN = 4  # to bound the merged summary without a tokenizer, as the summarisers do
EMPTY_BULLET = "- (none)"
_HEADING = re.compile(r"^\s*#{1,6}\s*(.+?)\s*:?\s*$|^\s*\*\*(.+?)\*\*\s*:?\s*$")


def render_span(messages: Sequence[Message], max_message_chars: int) -> str:
    """``[role]: content`` per message, tool calls as ``-> name(arguments)``, each cut to a limit."""
    parts = []
    for message in messages:
        text = message.content
        for call in message.tool_calls:
            text += f"\n-> {call.name}({call.arguments})"
        if len(text) > max_message_chars:
            text = text[:max_message_chars] + " ..."
        parts.append(f"[{message.role}]: {text}")
    return "\n".join(parts)


def parse_sections(text: str, sections: Sequence[str]) -> dict[str, list[str]]:
    """Bullets of a summary by section; text before any known heading goes to the state section."""
    lowered = {s.lower(): s for s in sections}
    fallback = next((s for s in sections if s.lower() == "current state"), sections[-1])
    parsed: dict[str, list[str]] = {s: [] for s in sections}
    current = fallback
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _HEADING.match(line)
        if match:
            title = (match.group(1) or match.group(2)).strip().lower()
            known = lowered.get(title) or next((s for k, s in lowered.items() if title.startswith(k)), None)
            if known is not None:
                current = known
                continue
        bullet = line if line.startswith(("- ", "* ")) else f"- {line}"
        bullet = "- " + bullet[2:].strip()
        if bullet.lower() in ("- (none)", "- none", "- n/a"):
            continue
        parsed[current].append(bullet)
    return parsed


class AnchoredSummary(Layer):
    def __init__(
        self,
        keep_recent_rounds: Annotated[int, Param("the newest rounds left out of the summary", ge=0)] = 3,
        keep_recent_ratio: Annotated[float, Param("the kept tail's share of the budget", ge=0, le=1)] = 0.3,
        keep_first_user: Annotated[bool, Param("the first user message (the task) stays")] = True,
        sections: Annotated[Sequence[str], Param("the summary's sections, in order")] = DEFAULT_SECTIONS,
        max_summary_tokens: Annotated[int, Param("at most this many tokens in the summary", ge=1)] = 2000,
        summary_ratio: Annotated[
            float, Param("the summary's share of the budget (capped by max_summary_tokens)", ge=0, le=1)
        ] = 0.15,
        max_message_chars: Annotated[
            int, Param("each message is cut to this many characters in the summary's source", ge=1)
        ] = 3000,
        max_failures: Annotated[int, Param("consecutive summary failures after which the layer stops", ge=0)] = 3,
        prompt_file: Annotated[
            str | None, Param("the summary prompt file (None: prompts/anchored_summary.txt)")
        ] = None,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "anchored_summary",
    ) -> None:
        if keep_recent_rounds < 1:
            raise ValueError(f"keep_recent_rounds must be >= 1, got {keep_recent_rounds}")
        self.keep_recent_rounds = keep_recent_rounds
        self.keep_recent_ratio = keep_recent_ratio
        self.keep_first_user = keep_first_user
        self.sections = tuple(sections)
        self.max_summary_tokens = max_summary_tokens
        self.summary_ratio = summary_ratio
        self.max_message_chars = max_message_chars
        self.max_failures = max_failures
        self.prompt = Path(prompt_file or PROMPT_FILE).read_text(encoding="utf-8")
        self.name = name
        # Per-transcript state: the persistent summary, its message in the context, and counters.
        self.summary: dict[str, list[str]] = {s: [] for s in self.sections}
        self.anchor: Message | None = None
        self.merges = 0
        self.summarised_messages = 0
        self.failures = 0
        self._usage_since: dict[str, Any] = _usage_totals([])

    # --- the persistent summary ------------------------------------------------------------
    def render(self) -> str:
        lines = []
        for section in self.sections:
            lines.append(f"## {section}")
            lines.extend(self.summary[section] or [EMPTY_BULLET])
        return "\n".join(lines)

    def merge(self, delta: dict[str, list[str]], budget_chars: int) -> None:
        for section in self.sections:
            new = delta.get(section, [])
            key = section.lower()
            if key in ANCHORED_SECTIONS:
                if not self.summary[section]:
                    self.summary[section] = list(dict.fromkeys(new))
            elif key in REPLACED_SECTIONS:
                if new:
                    self.summary[section] = list(dict.fromkeys(new))
            else:
                seen = set(self.summary[section])
                self.summary[section].extend(b for b in dict.fromkeys(new) if b not in seen)
        # Over budget: drop the oldest accumulated bullets first, then trim the others from the end.
        growing = [s for s in self.sections if s.lower() not in ANCHORED_SECTIONS + REPLACED_SECTIONS]
        while len(self.render()) > budget_chars:
            longest = max(growing, key=lambda s: len(self.summary[s]), default=None)
            if longest is not None and self.summary[longest]:
                self.summary[longest].pop(0)
                continue
            fallback = max(self.sections, key=lambda s: len(self.summary[s]))
            if not self.summary[fallback]:
                break
            self.summary[fallback].pop()

    # --- the layer -----------------------------------------------------------------------------
    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        if ctx.summariser is None or self.failures >= self.max_failures:
            return messages
        head = self._head(messages)
        anchor_at = next((i for i, m in enumerate(messages) if m is self.anchor), None)
        span_start = max(head[-1] if head else -1, anchor_at if anchor_at is not None else -1) + 1
        tail_start = self._tail_start(messages, ctx)
        if tail_start is None or tail_start <= span_start:
            return messages
        # Pinned (and any stray system) messages stay, with their tool partners.
        protected = (i for i in range(span_start, tail_start) if messages[i].pinned or messages[i].role == "system")
        kept = with_tool_partners(messages, protected)
        evicted = [i for i in range(span_start, tail_start) if i not in kept]
        if not evicted:
            return messages
        budget = ctx.model.prompt_budget
        max_tokens = max(64, min(self.max_summary_tokens, int(self.summary_ratio * budget)))
        delta_text = self._summarise([messages[i] for i in evicted], max_tokens, ctx)
        if delta_text is None:
            return messages

        previous = {s: list(b) for s, b in self.summary.items()}
        self.merge(parse_sections(delta_text, self.sections), max_tokens * CHARS_PER_TOKEN)
        count = self.summarised_messages + len(evicted)
        header = f"[Anchored summary of {count} earlier messages; updated {self.merges + 1} times]"
        # Pinned: the persistent memory must outlive forgetting and pruning layers that run after this one.
        anchor = Message(
            role="user",
            content=f"{header}\n{self.render()}",
            pinned=True,
            metadata={"anchored_summary": True, "compacted_by": [self.name]},
        )
        evicted_set = set(evicted)
        out = [messages[i] for i in range(span_start) if i != anchor_at]
        out.append(anchor)
        out.extend(m for i, m in enumerate(messages) if i >= span_start and i not in evicted_set)
        before, after = ctx.estimator.prompt(messages), ctx.estimator.prompt(out)
        if after >= before:  # a summary bigger than what it replaces is no compaction
            self.summary = previous
            ctx.emit({"type": "anchored_summary.skipped", "reason": "no saving", "before": before, "after": after})
            return messages
        self.anchor = anchor
        self.merges += 1
        self.summarised_messages = count
        ctx.emit(
            {
                "type": "anchored_summary",
                "evicted": len(evicted),
                "summarised_messages": count,
                "merges": self.merges,
                # how many times this summary was built on a previous summary (drift exposure)
                "summary_of_summary": self.merges - 1,
                "summary_tokens": ctx.estimator.message(anchor),
                "before": before,
                "after": after,
                **self._usage_since,
            }
        )
        return out

    def _head(self, messages: list[Message]) -> list[int]:
        """Leading system messages and (optionally) the first user message, wherever it is (an
        agent's greeting may come before the task): never evicted."""
        head = []
        for i, message in enumerate(messages):
            if message.role != "system":
                break
            head.append(i)
        if self.keep_first_user:
            first_user = next((i for i in range(len(head), len(messages)) if messages[i].role == "user"), None)
            if first_user is not None:
                head.append(first_user)
        return head

    def _tail_start(self, messages: list[Message], ctx: StrategyContext) -> int | None:
        """The keep-recent tail: the last round always, up to ``keep_recent_rounds`` rounds within
        ``keep_recent_ratio`` of the prompt budget. Rounds are whole, so no call loses its result."""
        rounds = group_rounds(messages)
        if not rounds:
            return None
        estimate = ctx.estimator.message
        limit = self.keep_recent_ratio * ctx.model.prompt_budget
        start = rounds[-1][0]
        used = sum(estimate(messages[i]) for i in rounds[-1])
        kept = 1
        for round_ in reversed(rounds[:-1]):
            cost = sum(estimate(messages[i]) for i in round_)
            if kept >= self.keep_recent_rounds or used + cost > limit:
                break
            used += cost
            kept += 1
            start = round_[0]
        return start

    def _summarise(self, span: list[Message], max_tokens: int, ctx: StrategyContext) -> str | None:
        """The summariser's text for the span, or None after a failure (counted for the breaker)."""
        from ctxbench.llm.base import SummariserError, SummaryRequest  # lazy: keeps litellm out of layer imports
        from ctxbench.llm.summariser import missing_sections

        summariser = ctx.summariser
        usage = getattr(summariser, "usage", None)
        seen = len(usage) if isinstance(usage, list) else 0
        request = SummaryRequest(
            instructions=self.prompt.format(
                sections="\n".join(f"## {s}" for s in self.sections),
                previous_summary=self.render() if self.merges else "(none yet)",
            ),
            source_text=render_span(span, self.max_message_chars),
            sections=self.sections,
            max_tokens=max_tokens,
            purpose="anchored_summary",
        )
        kind = None
        try:
            text = summariser.summarise(request)
            if not text or not text.strip():
                kind = "empty"
            elif len(missing_sections(text, self.sections)) == len(self.sections):
                kind = "malformed"  # none of the sections: nothing can be merged
        except SummariserError as exc:
            kind = exc.kind
        self._usage_since = _usage_totals(usage[seen:] if isinstance(usage, list) else [])
        if kind is not None:
            self.failures += 1
            ctx.emit({"type": "anchored_summary.failed", "kind": kind, "failures": self.failures})
            return None
        self.failures = 0
        return text


def _usage_totals(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Compaction cost of this layer's summariser calls (from the summariser's usage records)."""
    return {
        "summariser_calls": len(records),
        "summariser_prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in records),
        "summariser_completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in records),
        "summariser_cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in records), 6),
    }
