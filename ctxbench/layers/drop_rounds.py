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

from collections.abc import Callable, Sequence
from typing import Annotated

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.llm_full_compression import breaker_open
from ctxbench.layers.tool_pairs import repair_tool_pairs
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import DbgptRoundsCache


def keep_from(rounds: Sequence[Sequence[Message]], min_rounds: int, min_tokens: int, estimator: Estimator) -> int:
    """Index of the first round to keep (DB-GPT's ``SessionMemoryCompact`` walk)."""
    return keep_from_sums(
        lambda index: sum(estimator.message(m) for m in rounds[index]), len(rounds), min_rounds, min_tokens
    )


def keep_from_sums(round_tokens: Callable[[int], int], count: int, min_rounds: int, min_tokens: int) -> int:
    """``keep_from`` with ``round_tokens(index)`` the tokens of round ``index`` of ``count``."""
    start = count - min_rounds
    kept = 0
    for index in range(count - 1, -1, -1):
        kept += round_tokens(index)
        if index < start and kept >= min_tokens:
            break
        start = min(start, index)
    return start


class SessionMemoryCompact(Layer):
    def __init__(
        self,
        min_keep_recent_rounds: Annotated[int, Param("the newest rounds always kept", ge=0)] = 3,
        min_keep_tokens: Annotated[
            int, Param("older rounds are kept while the kept tokens stay below this", ge=0)
        ] = 10_000,
        stop_when_breaker_open: Annotated[
            bool, Param("stop once Layer 3's circuit breaker is open (DB-GPT then stops compacting)")
        ] = True,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "layer2",
    ) -> None:
        self.min_rounds = int(min_keep_recent_rounds)
        self.min_tokens = int(min_keep_tokens)
        self.stop_when_breaker_open = stop_when_breaker_open
        self.name = name
        self.ran = True  # whether the last apply ran (the pipeline reports only layers that ran)
        self._rounds = DbgptRoundsCache()  # a view strategy's history: only its end is walked again
        # Tokens of the rounds summed so far (None: not yet), for the estimator they were summed with:
        # a round the cache kept from the last call has the same messages, so the same sum.
        self._sums: list[int | None] = []
        self._estimator: Estimator | None = None

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        # DB-GPT's manage_context returns before its layers once the breaker tripped.
        self.ran = not (self.stop_when_breaker_open and breaker_open(ctx))
        if not self.ran:
            return messages
        positions = self._rounds(messages)
        estimator, sums = ctx.estimator, self._sums
        if estimator is not self._estimator:
            self._estimator, sums[:] = estimator, ()
        del sums[self._rounds.kept :]  # every call of the cache: its kept rounds are relative to the last
        if len(positions) <= self.min_rounds:
            return messages
        sums.extend([None] * (len(positions) - len(sums)))

        def round_tokens(index: int) -> int:
            total = sums[index]
            if total is None:
                total = sums[index] = sum(estimator.message(messages[i]) for i in positions[index])
            return total

        start = keep_from_sums(round_tokens, len(positions), self.min_rounds, self.min_tokens)
        if start <= 0:
            return messages
        system = [messages[i] for i in self._rounds.systems]
        kept = [messages[i] for r in positions[start:] for i in r]
        ctx.emit(
            {
                "type": "compaction.drop",
                "layer": self.name,
                "dropped_rounds": start,
                "kept_rounds": len(positions) - start,
            }
        )
        # Whole rounds keep tool pairs together; the repair only guards odd transcripts.
        return repair_tool_pairs(system + kept)
