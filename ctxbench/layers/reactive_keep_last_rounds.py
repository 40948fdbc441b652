"""DB-GPT Layer 4, reactive compaction: after the model rejected the prompt as too long,
keep the system messages and the last ``min(keep_rounds, rounds)`` rounds (2 in DB-GPT).

The pipeline runs it only on an overflow error matching the strategy's patterns and
retries once (``max_retries: 1``). The task survives through the task-progress block in
the system message. With no more rounds than it keeps, it changes nothing (and the
pipeline gives up, as DB-GPT's retry would fail again).
"""

from __future__ import annotations

from typing import Annotated

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer
from ctxbench.layers.tool_pairs import repair_tool_pairs
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import dbgpt_rounds


class ReactiveKeepLastRounds(Layer):
    def __init__(
        self,
        keep_rounds: Annotated[int, Param("rounds kept after the provider rejected the prompt", ge=0)] = 2,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "layer4",
    ) -> None:
        self.keep_rounds = int(keep_rounds)
        self.name = name

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        system = [m for m in messages if m.role == "system"]
        conversation = [m for m in messages if m.role != "system"]
        rounds = dbgpt_rounds(conversation)
        keep = min(self.keep_rounds, len(rounds))
        if keep >= len(rounds):
            return messages
        start = rounds[len(rounds) - keep][0] if keep else len(conversation)
        return repair_tool_pairs(system + conversation[start:])
