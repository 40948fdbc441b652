"""The summariser interface the compaction layers write against, and its one error type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# Every way a call can fail; layers branch on these (e.g. "overflow" triggers emergency truncation).
FAULT_KINDS: tuple[str, ...] = ("error", "timeout", "rate_limit", "empty", "malformed", "overflow")


@dataclass(frozen=True)
class SummaryRequest:
    instructions: str  # the full prompt text for an LLM (system/instructions incl. section headings)
    source_text: str  # the conversation span to summarise, rendered as text
    sections: tuple[str, ...]  # the section headings the summary must have, in order
    max_tokens: int = 2000
    purpose: str = "summary"  # e.g. "dbgpt_layer3", "five_layer_chunk", "five_layer_merge"


class SummariserError(Exception):
    """Any failure of a summariser or LLM call; ``kind`` is one of FAULT_KINDS."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown SummariserError kind {kind!r}; choose from {FAULT_KINDS}")
        super().__init__(message)
        self.kind = kind
        self.message = message


# The same error for the answerer and judge roles, under a role-neutral name.
LLMError = SummariserError


@runtime_checkable
class Summariser(Protocol):
    name: str
    usage: list[dict]  # one record per call: role, model, prompt_tokens, completion_tokens, cost_usd, cached, fault

    def summarise(self, request: SummaryRequest) -> str: ...  # raises SummariserError
