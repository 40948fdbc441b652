"""Strategy 4 of the 5-layer strategy: a full LLM summary of the history in Claude Code's nine
sections, chunked as OpenClaw chunks it, partial summaries merged by a second call.

What is summarised: everything but the system messages, pinned messages and a recent tail; with
``head="system"`` (default, as OpenClaw: Pi's prepareCompaction summarises everything before the kept
tail, and the system prompt is sent beside the messages) the first user message too, with
``head="task"`` it is kept (``tail_by="messages"`` always keeps it, as the prune does).
``tail_by="tokens"`` (default) sizes the tail in tokens as OpenClaw's
compaction does (Pi's ``findCutPoint``, under OpenClaw's compaction safeguard): walking back from the
newest message, messages are kept while they add up to at most ``keep_recent_tokens`` (Pi's
``keepRecentTokens``, 20,000), and never more than the room the prompt budget leaves after the kept
head (sized as a request: with tool schemas) and the summary (``max_summary_tokens``), divided by
SAFETY_MARGIN 1.2 (OpenClaw's buffer for the estimate's error): Pi assumes a window far above 20,000 tokens, and on a
12k window a 20,000-token tail would keep everything. The tail never starts on a tool result.
``tail_by="messages"`` keeps the recent N = min(6, floor(total/3)) messages (the same split as
pruning; after a prune, the messages the prune kept): the reading before issue 26, with which the
summary replaced the prune's short notice by a longer text and the retry was rejected again. Prune
notices are expanded back to the messages they replaced, so a summary after a prune still sees
the pruned history. Output: kept head + one summary message + recent messages, tool pairs
repaired. The summary message is pinned so a later prune keeps it; a later summary takes the
earlier one as part of its source and replaces it (OpenClaw's previousSummary).

Chunking (reference.md 1b; OpenClaw's compaction planning): a history over 50,000 chars with at
least ``min_messages_for_split`` (4) messages is split into ``parts`` chunks by token share,
``parts = max(DEFAULT_PARTS 2, ceil(tokens / effective_chunk_tokens))`` capped at 4, where
``effective_chunk_tokens = (window x adaptive_ratio - SUMMARIZATION_OVERHEAD_TOKENS 4096) /
SAFETY_MARGIN 1.2`` and the adaptive ratio starts at BASE_CHUNK_RATIO 0.4 and falls toward
MIN_CHUNK_RATIO 0.15 when the average message is over 10% of the window. A chunk boundary never
falls between an assistant's tool calls and their results. Tokens come from the strategy's
estimator (the EMA estimator in ctxbench/configs/strategy/five_layer.yaml).

Each summariser call is tried up to ``attempts`` (3) times; the backoff a real system would
sleep (500-5000 ms doubling, jitter 0.2) is computed deterministically and recorded in the
event, never slept in a replay.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.prune_history import PRUNED_KEY, head_indices, split_history
from ctxbench.layers.tool_pairs import repair_as_openclaw
from ctxbench.llm.base import SummariserError, SummaryRequest
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Message

SECTIONS: tuple[str, ...] = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)
PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"
SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:"
SUMMARY_KEY = "five_layer_summary"
MIN_SUMMARY_TOKENS = 256  # a summary is asked for at least this much, room or not
SUMMARY_OVERHEAD_TOKENS = 50  # the summary message's prefix and tags
# OpenClaw retries every summariser failure but an abort (summarizeChunks), an overflow too.
NO_RETRY_KINDS: tuple[str, ...] = ()


def load_prompt(name: str) -> tuple[str, str]:
    """(prompt text, short sha256) of a versioned prompt file under ctxbench/prompts/."""
    text = (PROMPT_DIR / name).read_text(encoding="utf-8")
    return text, hashlib.sha256(text.encode()).hexdigest()[:12]


def summary_split(messages: Sequence[Message], max_recent: int = 6) -> tuple[list[int], list[int], list[int]]:
    """``split_history``, but a context that was just pruned keeps the recent messages the prune
    kept (those after its notice): splitting the pruned context again would keep min(6, total/3)
    of far fewer messages."""
    notice = next((i for i in range(len(messages) - 1, -1, -1) if PRUNED_KEY in messages[i].metadata), None)
    if notice is None or notice == len(messages) - 1:
        return split_history(messages, max_recent)
    kept_head = sorted(i for i in head_indices(messages[:notice]))
    kept = set(kept_head)
    middle = [i for i in range(notice + 1) if i not in kept]
    return kept_head, middle, list(range(notice + 1, len(messages)))


def expand_pruned(messages: Sequence[Message]) -> list[Message]:
    """Replace prune notices by the messages they stand for (recursively)."""
    out: list[Message] = []
    for message in messages:
        pruned = message.metadata.get(PRUNED_KEY)
        if pruned:
            out.extend(expand_pruned([Message.from_dict(d) for d in pruned]))
        else:
            out.append(message)
    return out


def render(messages: Sequence[Message]) -> str:
    """``[role]: content`` lines, tool calls and tool names spelled out."""
    parts = []
    for m in messages:
        label = f"tool {m.name}" if m.role == "tool" and m.name else m.role
        text = f"[{label}]: {m.content}" if m.content else f"[{label}]:"
        calls = "".join(f"\n[tool call {c.name}]: {c.arguments}" for c in m.tool_calls)
        parts.append(text + calls)
    return "\n\n".join(parts)


def tool_groups(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """[start, end) spans that may not be split: an assistant with tool calls runs until all its
    calls have results (anything in between stays with it); other messages stand alone."""
    spans: list[tuple[int, int]] = []
    start, pending = 0, set()
    for i, m in enumerate(messages):
        if m.role == "assistant":
            pending = {c.id for c in m.tool_calls}
        elif m.role == "tool":
            pending.discard(m.tool_call_id)
        if not pending:
            spans.append((start, i + 1))
            start = i + 1
    if start < len(messages):
        spans.append((start, len(messages)))
    return spans


@dataclass(frozen=True)
class ChunkPlan:
    base_chunk_ratio: float = 0.4
    min_chunk_ratio: float = 0.15
    safety_margin: float = 1.2
    default_parts: int = 2
    min_messages_for_split: int = 4
    summarization_overhead_tokens: int = 4096
    chunk_threshold_chars: int = 50_000
    max_chunks: int = 4

    def adaptive_ratio(self, tokens: Sequence[int], window: int) -> float:
        if not tokens:
            return self.base_chunk_ratio
        avg_ratio = sum(tokens) / len(tokens) * self.safety_margin / window
        if avg_ratio > 0.1:
            reduction = min(avg_ratio * 2, self.base_chunk_ratio - self.min_chunk_ratio)
            return max(self.min_chunk_ratio, self.base_chunk_ratio - reduction)
        return self.base_chunk_ratio

    def chunk_tokens(self, tokens: Sequence[int], window: int) -> int:
        """The effective token budget of one chunk (after overhead and safety margin)."""
        ratio = self.adaptive_ratio(tokens, window)
        max_chunk = max(1, math.floor(window * ratio) - self.summarization_overhead_tokens)
        return max(1, math.floor(max_chunk / self.safety_margin))

    def split(self, messages: Sequence[Message], estimator: Estimator, window: int) -> list[list[Message]]:
        messages = list(messages)
        chars = sum(m.char_count for m in messages)
        if chars <= self.chunk_threshold_chars or len(messages) < max(2, self.min_messages_for_split):
            return [messages] if messages else []
        tokens = [estimator.message(m) for m in messages]
        total = sum(tokens)
        parts = max(self.default_parts, math.ceil(total / self.chunk_tokens(tokens, window)))
        parts = min(parts, self.max_chunks, len(messages))
        if parts <= 1:
            return [messages]
        target = total / parts
        chunks: list[list[Message]] = []
        chunk_start, current = 0, 0
        for start, end in tool_groups(messages):
            size = sum(tokens[start:end])
            if start > chunk_start and len(chunks) < parts - 1 and current + size > target:
                chunks.append(messages[chunk_start:start])
                chunk_start, current = start, 0
            current += size
        chunks.append(messages[chunk_start:])
        return chunks


@dataclass
class SummaryRun:
    """What one summarisation did: calls, failures, backoff a real system would have slept."""

    calls: int = 0
    attempts: int = 0
    failures: list[str] = field(default_factory=list)
    backoff_ms: list[int] = field(default_factory=list)
    chunks: int = 0
    merged: bool = False


class ChunkedSummary(Layer):
    name = "chunked_summary"

    def __init__(
        self,
        max_recent: Annotated[
            int, Param("the newest messages left out of the summary (at most a third of the history)", ge=0)
        ] = 6,
        attempts: Annotated[int, Param("tries per summary call", ge=1)] = 3,
        backoff_min_ms: Annotated[int, Param("backoff before the first retry, recorded, not slept", ge=0)] = 500,
        backoff_max_ms: Annotated[int, Param("the longest backoff", ge=0)] = 5000,
        backoff_jitter: Annotated[float, Param("random share added to each backoff", ge=0)] = 0.2,
        max_summary_tokens: Annotated[int, Param("at most this many tokens in a summary", ge=1)] = 2000,
        summary_prompt: Annotated[
            str, Param("prompt file for the summary of a chunk (under ctxbench/prompts)")
        ] = "five_layer_summary.txt",
        merge_prompt: Annotated[str, Param("prompt file that merges the chunks' summaries")] = "five_layer_merge.txt",
        chunking: Annotated[dict[str, Any] | None, Param("fields of the chunk plan to change (ChunkPlan)")] = None,
        context_window: Annotated[
            int | None, Param("the window the budget is computed on (None: the model's)", gt=0)
        ] = None,
        seed: Annotated[int, Param("seed of the backoff jitter", ge=0)] = 0,
        tail_by: Annotated[
            Literal["tokens", "messages"],
            Param("the kept tail: newest messages up to keep_recent_tokens (OpenClaw), or the prune's recent ones"),
        ] = "tokens",
        keep_recent_tokens: Annotated[
            int, Param("the kept tail's tokens (Pi's keepRecentTokens), at most what the budget leaves", ge=0)
        ] = 20_000,
        head: Annotated[
            Literal["system", "task"],
            Param(
                "kept beside the summary (tail_by=tokens): the system prompt, as OpenClaw (the task is "
                "summarised), or the system prompt and the task"
            ),
        ] = "system",
    ) -> None:
        if tail_by not in ("tokens", "messages"):
            raise ValueError(f"tail_by must be tokens or messages, got {tail_by!r}")
        if head not in ("system", "task"):
            raise ValueError(f"head must be system or task, got {head!r}")
        self.tail_by = tail_by
        self.head = head
        self.keep_recent_tokens = int(keep_recent_tokens)
        self.max_recent = max_recent
        self.attempts = max(1, int(attempts))
        self.backoff = (backoff_min_ms, backoff_max_ms, backoff_jitter)
        self.max_summary_tokens = max_summary_tokens
        self._summary_tokens = max_summary_tokens  # this summary's: at most what the budget leaves (tail_by=tokens)
        self.summary_prompt, self.summary_sha = load_prompt(summary_prompt)
        self.merge_prompt, self.merge_sha = load_prompt(merge_prompt)
        self.plan = ChunkPlan(**(chunking or {}))
        self.context_window = context_window
        self.seed = seed

    # --- calls -------------------------------------------------------------------
    def backoff_ms(self, attempt: int, rng: random.Random) -> int:
        """The delay before retry ``attempt`` (1-based): doubling from min, capped, +-jitter."""
        low, high, jitter = self.backoff
        base = min(high, low * 2 ** (attempt - 1))
        return int(min(high, max(low, base * (1 + jitter * (2 * rng.random() - 1)))))

    def call(self, ctx: StrategyContext, request: SummaryRequest, run: SummaryRun) -> str:
        """One summariser call with retries; raises the last SummariserError."""
        summariser = ctx.summariser
        if summariser is None:
            raise SummariserError("error", "no summariser configured")
        rng = random.Random(f"{self.seed}:{ctx.call_index}:{run.calls}")
        run.calls += 1
        for attempt in range(1, self.attempts + 1):
            run.attempts += 1
            try:
                text = summariser.summarise(request)
                if not text.strip():
                    raise SummariserError("empty", "summariser returned no text")
                if _missing(text, request.sections):
                    raise SummariserError("malformed", "summary lacks required sections")
                return text
            except SummariserError as error:
                run.failures.append(error.kind)
                if attempt == self.attempts or error.kind in NO_RETRY_KINDS:
                    raise
                run.backoff_ms.append(self.backoff_ms(attempt, rng))
        raise AssertionError("unreachable")

    def summarise(self, ctx: StrategyContext, messages: Sequence[Message], run: SummaryRun) -> str:
        """Chunked summary of ``messages`` (merge call when there is more than one chunk)."""
        window = self.window(ctx)
        chunks = self.plan.split(messages, ctx.estimator, window)
        run.chunks = len(chunks)
        purpose = "five_layer_chunk" if len(chunks) > 1 else "five_layer_summary"
        partials = [self.call(ctx, self.request(render(chunk), purpose), run) for chunk in chunks]
        if len(partials) == 1:
            return partials[0]
        labelled = []
        for i, text in enumerate(partials):
            where = "oldest messages" if i == 0 else "most recent messages" if i == len(partials) - 1 else ""
            label = f"[Chunk {i + 1} — {where}]" if where else f"[Chunk {i + 1}/{len(partials)}]"
            labelled.append(f"{label}\n{text}")
        run.merged = True
        merge = SummaryRequest(
            instructions=self.merge_prompt,
            source_text="\n\n".join(labelled),
            sections=SECTIONS,
            max_tokens=self._summary_tokens,
            purpose="five_layer_merge",
        )
        return self.call(ctx, merge, run)

    def request(self, source: str, purpose: str) -> SummaryRequest:
        return SummaryRequest(
            instructions=self.summary_prompt,
            source_text=source,
            sections=SECTIONS,
            max_tokens=self._summary_tokens,
            purpose=purpose,
        )

    def window(self, ctx: StrategyContext) -> int:
        return max(1, int(self.context_window or ctx.model.context_window))

    # --- the layer -----------------------------------------------------------------
    def token_split(
        self, messages: Sequence[Message], ctx: StrategyContext
    ) -> tuple[list[int], list[int], list[int], int]:
        """(kept head, middle, recent tail, the tail's token budget) with the tail sized in tokens."""
        n = len(messages)
        head = head_indices(messages, first_user=self.head == "task")
        notice = next((i for i in range(n - 1, -1, -1) if PRUNED_KEY in messages[i].metadata), None)
        low = 0 if notice is None else notice + 1  # the tail never takes a prune notice along
        message_tokens = ctx.estimator.message
        # The head as a request (the estimator adds what every request carries: tool schemas, framing);
        # the tail with OpenClaw's SAFETY_MARGIN (1.2) for the estimate's error.
        head_request = [messages[i] for i in sorted(head) if SUMMARY_KEY not in messages[i].metadata]
        room = ctx.model.prompt_budget - ctx.estimator.prompt(head_request) - self.max_summary_tokens
        cap = max(0, min(self.keep_recent_tokens, int(room / self.plan.safety_margin)))
        start, total = n, 0
        for i in range(n - 1, low - 1, -1):
            if i in head:
                break
            total += message_tokens(messages[i])
            if total > cap and i < n - 1:  # the newest message is kept whatever its size
                break
            start = i
        cut = start
        while cut < n and messages[cut].role == "tool":  # results whose call is summarised go with it
            cut += 1
        if cut == n:  # only tool results left: the current message, kept with its call
            cut = min(start, n - 1)  # the newest message stays last, in the head or not (pinned, the task)
            while cut > low and messages[cut].role == "tool":
                cut -= 1
        kept_head = sorted(i for i in head if i < cut)
        middle = [i for i in range(cut) if i not in head]
        return kept_head, middle, list(range(cut, n)), cap

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        tail_budget: int | None = None
        if self.tail_by == "tokens":
            kept_head, middle, recent, tail_budget = self.token_split(messages, ctx)
        else:
            kept_head, middle, recent = summary_split(messages, self.max_recent)
        if not middle:
            return messages
        # An earlier summary is pinned (pruning keeps it); a new summary absorbs and replaces it.
        previous = [i for i in kept_head if SUMMARY_KEY in messages[i].metadata]
        kept_head = [i for i in kept_head if i not in previous]
        source = expand_pruned([messages[i] for i in sorted(previous + middle)])
        self._summary_tokens = self.max_summary_tokens
        if tail_budget is not None:  # what the head and the tail leave, as OpenClaw truncates its summary to fit
            tail_tokens = sum(ctx.estimator.message(messages[i]) for i in recent)
            head_request = [messages[i] for i in kept_head]
            left = ctx.model.prompt_budget - ctx.estimator.prompt(head_request) - tail_tokens
            left = int(left / self.plan.safety_margin) - SUMMARY_OVERHEAD_TOKENS
            self._summary_tokens = max(MIN_SUMMARY_TOKENS, min(self.max_summary_tokens, left))
        usage_before = len(getattr(ctx.summariser, "usage", []) or [])
        run = SummaryRun()
        text, level, extra = self.produce(ctx, source, run)
        event = {
            "type": "five_layer.summary",
            "layer": self.name,
            "level": level,
            "summarised": len(source),
            "chunks": run.chunks,
            "merged": run.merged,
            "calls": run.calls,
            "attempts": run.attempts,
            "failures": run.failures,
            "backoff_ms": run.backoff_ms,
            "backoff_ms_total": sum(run.backoff_ms),
            "prompt_sha": {"summary": self.summary_sha, "merge": self.merge_sha},
            "usage": _usage(ctx.summariser, usage_before),
            **extra,
        }
        if tail_budget is not None:
            event["summary_max_tokens"] = self._summary_tokens
            event["keep_recent_budget"] = tail_budget
            event["kept_recent_tokens"] = sum(ctx.estimator.message(messages[i]) for i in recent)
        if text is None:
            ctx.emit(event)
            return messages
        summary = Message(
            role="user",
            content=f"{SUMMARY_PREFIX}\n<summary>\n{text}\n</summary>",
            pinned=True,
            metadata={"compacted_by": [self.name], SUMMARY_KEY: {"level": level, "messages": len(source)}},
        )
        event["summary_chars"] = len(text)
        ctx.emit(event)
        kept = [messages[i] for i in kept_head] + [summary] + [messages[i] for i in recent]
        return repair_as_openclaw(kept)[0]  # OpenClaw's repair: a call that lost its result gets a synthetic one

    def produce(
        self, ctx: StrategyContext, source: list[Message], run: SummaryRun
    ) -> tuple[str | None, int | None, dict[str, Any]]:
        """(summary text or None when it failed, level reached, extra event fields)."""
        try:
            return self.summarise(ctx, source, run), 1, {}
        except SummariserError as error:
            return None, None, {"failed": error.kind}


def _missing(text: str, sections: tuple[str, ...]) -> bool:
    from ctxbench.llm.summariser import missing_sections  # the one shared definition of a section heading

    return bool(missing_sections(text, sections))


def _usage(summariser: Any, before: int) -> dict[str, Any]:
    records = list(getattr(summariser, "usage", []) or [])[before:]
    return {
        "records": len(records),
        "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in records),
        "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in records),
        "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in records), 6),
        "faults": sum(1 for r in records if r.get("fault")),
    }
