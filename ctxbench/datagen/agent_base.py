"""What every synthetic agent provides: its prompts, filler steps, fact-stating and fact-using steps."""

from __future__ import annotations

import json
import random
from abc import ABC, abstractmethod

from ctxbench.datagen import content as C
from ctxbench.datagen.builder import Builder
from ctxbench.datagen.facts import Fact
from ctxbench.tokens import get_tokenizer
from ctxbench.transcripts.model import Message, ToolCall


def args_json(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False)


class Agent(ABC):
    """One agent kind. ``step`` adds one assistant call and its tool result(s) to the builder."""

    kind: str

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.size_cap: int | None = None  # set for one big step: its output is cut to this many tokens

    def fit(self, text: str) -> str:
        """Cut a big output at a line boundary so it lands near the planned size (generators overshoot)."""
        if self.size_cap is None:
            return text
        n = get_tokenizer("o200k_base").count(text)
        if n <= self.size_cap:
            return text
        cut = text.rfind("\n", 0, int(len(text) * self.size_cap / n))
        return text[: max(cut, 1)]

    @abstractmethod
    def system_prompt(self) -> str: ...

    @abstractmethod
    def task(self) -> str: ...

    def system_prompt_message(self) -> Message:
        return Message(role="system", content=self.system_prompt())

    def task_message(self) -> Message:
        return Message(role="user", content=self.task())

    @abstractmethod
    def step(self, b: Builder, size: int, hint: str | None = None, fact: Fact | None = None) -> None:
        """One call whose tool output is about ``size`` tokens; ``fact`` (if any) is buried in it."""

    @abstractmethod
    def use(self, b: Builder, fact: Fact) -> None:
        """One call whose assistant message uses the fact's value."""

    @abstractmethod
    def final(self, b: Builder) -> None: ...

    def follow_up(self) -> str:
        rng = self.rng
        return rng.choice(
            (
                "Looks good so far. Can you also double-check the edge cases before moving on?",
                "Quick note: keep the output concise, I only need the key numbers.",
                f"Also, {C.person(rng)} asked whether this affects the "
                f"{rng.choice(C.W.NOUNS)} {rng.choice(C.W.NOUNS)}.",
                "Thanks. Please continue, and tell me if anything looks off.",
                "Can you explain briefly why that last result looks different from before?",
                "请继续，顺便把关键结论用中文总结一句。",
                "ありがとうございます。続けてください。",
            )
        )

    def user(self, b: Builder, text: str, fact: Fact | None = None, pinned: bool = False) -> None:
        b.add(Message(role="user", content=text, pinned=pinned), states=fact)

    # -- helpers for OpenAI-style tool-calling agents ---------------------------------------
    def call(self, b: Builder, text: str, calls: list[tuple[str, dict]], needs: Fact | None = None) -> list[str]:
        """Add an assistant message with tool calls; returns their ids."""
        ids = [b.next_call_id(C.alnum(self.rng, 8)) for _ in calls]
        tool_calls = tuple(ToolCall(i, name, args_json(a)) for i, (name, a) in zip(ids, calls))
        b.add(Message(role="assistant", content=text, tool_calls=tool_calls), needs=needs)
        return ids

    def result(self, b: Builder, call_id: str, name: str, output: str, fact: Fact | None = None) -> None:
        b.add(Message(role="tool", content=self.fit(output), tool_call_id=call_id, name=name), states=fact)
