"""DB-GPT Layer 1, observation micro-compaction: cut old tool observations short.

Rounds are DB-GPT's (``dbgpt_rounds``). A round is old when its index is below
``current_round - max_observation_age_rounds``, where ``current_round`` is the number of
rounds in the context, so the last ``max_observation_age_rounds`` rounds stay whole (the
seed: "Recent rounds are preserved in full"). In an old round, an observation (an
``Observation:`` user message or a tool result) longer than ``max_chars + 30`` becomes its
first ``max_chars`` characters (the ``Observation:`` prefix included, as DB-GPT counts
it) plus ``... [truncated, full detail at: <snapshot>]``, or ``... [truncated]`` when the
message has no snapshot. Deterministic, no LLM.
"""

from __future__ import annotations

from ctxbench.core import StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.layers.llm_full_compression import breaker_open
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import dbgpt_rounds, is_observation

SLACK_CHARS = 30  # DB-GPT only cuts observations longer than max_chars + 30


def is_observation_like(message: Message) -> bool:
    """DB-GPT's observation, extended to function-calling transcripts: tool results count too."""
    return message.role == "tool" or is_observation(message)


def truncated(content: str, max_chars: int, snapshot: str | None) -> str:
    suffix = f"... [truncated, full detail at: {snapshot}]" if snapshot else "... [truncated]"
    return content[:max_chars] + suffix


class ObservationMicroCompact(Layer):
    def __init__(
        self,
        max_observation_age_rounds: int = 5,
        truncated_observation_max_chars: int = 200,
        slack_chars: int = SLACK_CHARS,
        stop_when_breaker_open: bool = True,
        name: str = "layer1",
    ) -> None:
        self.max_age = int(max_observation_age_rounds)
        self.max_chars = int(truncated_observation_max_chars)
        self.slack = int(slack_chars)
        self.stop_when_breaker_open = stop_when_breaker_open
        self.name = name

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        if self.stop_when_breaker_open and breaker_open(ctx):
            return messages
        rounds = dbgpt_rounds(messages)
        cutoff = len(rounds) - self.max_age
        out: list[Message] | None = None
        for round_index, indices in enumerate(rounds):
            if round_index >= cutoff:
                break
            for i in indices:
                message = messages[i]
                if not is_observation_like(message) or len(message.content) <= self.max_chars + self.slack:
                    continue
                content = truncated(message.content, self.max_chars, message.metadata.get("snapshot"))
                if content == message.content:  # already cut on an earlier call
                    continue
                if out is None:
                    out = list(messages)
                out[i] = compacted(message, content, self.name)
        return messages if out is None else out
