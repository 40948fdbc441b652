"""DB-GPT Layer 2, session memory compaction: drop old whole rounds.

Keeps at least ``min_keep_recent_rounds`` rounds, then walks back keeping whole rounds
while the kept tokens stay below ``min_keep_tokens``. DB-GPT's loop adds a round's tokens
before testing, so the round whose tokens reach ``min_keep_tokens`` is the first one
dropped (kept tokens beyond the minimum rounds stay under ``min_keep_tokens``); this
reproduces that. Output: every system message, then the kept rounds. The task survives
through the task-progress block that ``ToolResultSnapshots`` writes into the system
message (DB-GPT keeps the question in its system prompt). Deterministic, no LLM.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxbench.core import StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.llm_full_compression import breaker_open
from ctxbench.layers.tool_pairs import repair_tool_pairs
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import DbgptRoundsCache


def keep_from(rounds: Sequence[Sequence[Message]], min_rounds: int, min_tokens: int, estimator: Estimator) -> int:
    """Index of the first round to keep (DB-GPT's ``SessionMemoryCompact`` walk)."""
    start = len(rounds) - min_rounds
    kept = 0
    for index in range(len(rounds) - 1, -1, -1):
        kept += sum(estimator.message(m) for m in rounds[index])
        if index < start and kept >= min_tokens:
            break
        start = min(start, index)
    return start


class _Rounds(Sequence[Sequence[Message]]):
    """Rounds as message lists, built only for the rounds ``keep_from`` looks at (the recent ones)."""

    def __init__(self, messages: Sequence[Message], positions: list[list[int]]) -> None:
        self.messages, self.positions = messages, positions

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, index):  # type: ignore[override]
        return [self.messages[i] for i in self.positions[index]]


class SessionMemoryCompact(Layer):
    def __init__(
        self,
        min_keep_recent_rounds: int = 3,
        min_keep_tokens: int = 10_000,
        stop_when_breaker_open: bool = True,
        name: str = "layer2",
    ) -> None:
        self.min_rounds = int(min_keep_recent_rounds)
        self.min_tokens = int(min_keep_tokens)
        self.stop_when_breaker_open = stop_when_breaker_open
        self.name = name
        self.ran = True  # whether the last apply ran (the pipeline reports only layers that ran)
        self._rounds = DbgptRoundsCache()  # a view strategy's history: only its end is walked again

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        # DB-GPT's manage_context returns before its layers once the breaker tripped.
        self.ran = not (self.stop_when_breaker_open and breaker_open(ctx))
        if not self.ran:
            return messages
        positions = self._rounds(messages)
        if len(positions) <= self.min_rounds:
            return messages
        rounds = _Rounds(messages, positions)
        start = keep_from(rounds, self.min_rounds, self.min_tokens, ctx.estimator)
        if start <= 0:
            return messages
        system = [messages[i] for i in self._rounds.systems]
        kept = [messages[i] for r in positions[start:] for i in r]
        ctx.emit(
            {"type": "compaction.drop", "layer": self.name, "dropped_rounds": start, "kept_rounds": len(rounds) - start}
        )
        # Whole rounds keep tool pairs together; the repair only guards odd transcripts.
        return repair_tool_pairs(system + kept)
