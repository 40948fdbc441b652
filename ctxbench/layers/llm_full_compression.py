"""DB-GPT Layer 3, full context compression: an LLM summary replaces the old rounds.

Keeps the last ``min_keep_recent_rounds`` rounds; every older non-system message, cut to
3000 characters and rendered ``[role]: content`` with DB-GPT's role names, goes to ``ctx.summariser`` with DB-GPT's
prompt (``ctxbench/prompts/dbgpt_summary.txt``, six headings) and at most 2000 new tokens.
The reply goes in as one user message ``[Context Summary of N earlier messages]\\n\\n...``
after the system messages. An empty reply skips the layer.

Circuit breaker (DB-GPT's ``ContextBudgetTracker``): each ``SummariserError`` is a
failure, a success resets the count, and at ``max_compact_failures`` consecutive failures
the breaker opens for the rest of the conversation. DB-GPT's manager then stops compacting
altogether, so the open breaker is published in ``ctx.shared`` and Layers 1 and 2 stop too
(``stop_when_breaker_open``); the reactive Layer 4 still runs, as in DB-GPT.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.tool_pairs import repair_tool_pairs
from ctxbench.tokens.dbgpt import message_text
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import dbgpt_rounds

PROMPT_FILE = Path(__file__).resolve().parent.parent / "prompts" / "dbgpt_summary.txt"
SECTIONS: tuple[str, ...] = (
    "Original Task",
    "Completed Steps",
    "Current State",
    "Key Data",
    "Errors Encountered",
    "Next Steps",
)
BREAKER_KEY = "dbgpt.circuit_breaker_open"
MAX_MESSAGE_CHARS = 3000


def breaker_open(ctx: StrategyContext) -> bool:
    """True once Layer 3's circuit breaker has opened in this conversation."""
    return bool(ctx.shared.get(BREAKER_KEY))


# DB-GPT's role names (ModelMessageRoleType), as its Layer 3 writes them into the summary request.
DBGPT_ROLES = {"system": "system", "user": "human", "assistant": "ai", "tool": "human"}


def render(message: Message, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """One line of the summary request as DB-GPT's Layer 3 writes it (compact.py): ``[role]: text``
    with DB-GPT's role name and the message's text as DB-GPT holds it (tool calls inline, as in its
    ReAct prompts: ``ctxbench.tokens.dbgpt.message_text``), cut to ``max_chars``. The same request
    on both sides lets ``dbgpt`` and ``upstream_dbgpt`` agree after a summary too."""
    return f"[{DBGPT_ROLES.get(message.role, message.role)}]: {message_text(message)[:max_chars]}"


class FullContextCompression(Layer):
    def __init__(
        self,
        min_keep_recent_rounds: Annotated[int, Param("the newest rounds left out of the summary", ge=0)] = 3,
        max_compact_failures: Annotated[
            int, Param("consecutive summary failures that open the circuit breaker", ge=0)
        ] = 3,
        max_new_tokens: Annotated[int, Param("at most this many tokens in the summary", ge=1)] = 2000,
        max_message_chars: Annotated[
            int, Param("each message is cut to this many characters in the summary's source", ge=1)
        ] = MAX_MESSAGE_CHARS,
        prompt_file: Annotated[
            str | None, Param("the summary prompt file (None: DB-GPT's, prompts/dbgpt_summary.txt)")
        ] = None,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "layer3",
    ) -> None:
        self.min_rounds = int(min_keep_recent_rounds)
        self.max_failures = int(max_compact_failures)
        self.max_new_tokens = int(max_new_tokens)
        self.max_message_chars = int(max_message_chars)
        path = Path(prompt_file) if prompt_file else PROMPT_FILE
        self.template = path.read_text(encoding="utf-8")
        if "{conversation_text}" not in self.template:
            from ctxbench.errors import ConfigError

            raise ConfigError(f"{path}: summary prompt has no {{conversation_text}} placeholder")
        self.name = name
        self.failures = 0  # consecutive; the strategy (and so this layer) lives for one conversation
        # Whether the last apply ran to its end (DB-GPT then records a success and reports the
        # count, even when there was nothing to summarise or the summary came back empty).
        self.ran = False

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        summariser = ctx.summariser
        self.ran = False
        if summariser is None or breaker_open(ctx):  # DB-GPT skips Layer 3 without an LLM client
            return messages
        system = [m for m in messages if m.role == "system"]
        conversation = [m for m in messages if m.role != "system"]
        rounds = dbgpt_rounds(conversation)
        keep = min(self.min_rounds, len(rounds))
        if keep >= len(rounds):
            self.failures, self.ran = 0, True  # returned normally: DB-GPT records a success
            return messages
        split = rounds[len(rounds) - keep][0] if keep else len(conversation)
        old, recent = conversation[:split], conversation[split:]
        source = "\n".join(render(m, self.max_message_chars) for m in old)
        text = self._summarise(source, len(old), ctx)
        self.ran = text is not None
        if not text or not text.strip():
            if text is not None:
                ctx.emit({"type": "compaction.skipped", "layer": self.name, "reason": "empty summary"})
            return messages
        summary = Message(
            role="user",
            content=f"[Context Summary of {len(old)} earlier messages]\n\n{text}",
            metadata={"compacted_by": [self.name], "summarised_messages": len(old)},
        )
        return repair_tool_pairs([*system, summary, *recent])

    def _summarise(self, source: str, count: int, ctx: StrategyContext) -> str | None:
        from ctxbench.llm.base import SummariserError, SummaryRequest

        # LLMSummariser sends instructions as the system message and the span as the user
        # message, so the conversation moves out of the prompt's middle into that message.
        instructions = self.template.replace("{conversation_text}", "(the conversation is in the next message)")
        request = SummaryRequest(
            instructions=instructions,
            source_text=source,
            sections=SECTIONS,
            max_tokens=self.max_new_tokens,
            purpose="dbgpt_layer3",
        )
        summariser = ctx.summariser
        usage = getattr(summariser, "usage", None)
        before = len(usage) if isinstance(usage, list) else 0
        try:
            text = summariser.summarise(request)
        except SummariserError as error:
            self.failures += 1
            ctx.emit(
                {
                    "type": "compaction.failure",
                    "layer": self.name,
                    "kind": error.kind,
                    "consecutive_failures": self.failures,
                    **_usage(usage, before),
                }
            )
            if self.failures >= self.max_failures:
                ctx.shared[BREAKER_KEY] = True
                ctx.emit({"type": "circuit_breaker.open", "layer": self.name, "consecutive_failures": self.failures})
            return None
        self.failures = 0
        ctx.emit(
            {
                "type": "compaction.summary",
                "layer": self.name,
                "summariser": getattr(summariser, "name", type(summariser).__name__),
                "summarised_messages": count,
                "source_chars": len(source),
                "summary_chars": len(text or ""),
                **_usage(usage, before),
            }
        )
        return text


def _usage(usage: Any, before: int) -> dict[str, Any]:
    """Tokens and cost of the summariser calls made since ``before`` (its ``usage`` records)."""
    records = usage[before:] if isinstance(usage, list) else []
    return {
        "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in records),
        "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in records),
        "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in records), 6),
    }
