"""The LLM summariser: instructions as the system message, the span as the user message,
and a check that the reply carries every required section heading."""

from __future__ import annotations

import re
from typing import Any

from ctxbench.llm.base import SummariserError, SummaryRequest
from ctxbench.llm.client import LLMClient

_DECORATION = re.compile(r"^[\s#*_>\-\d.):\[\]]+|[\s*_:\]]+$")


def _norm(text: str) -> str:
    return " ".join(_DECORATION.sub("", text).lower().split())


def missing_sections(text: str, sections: tuple[str, ...]) -> list[str]:
    """Headings absent from ``text``. A heading counts when a line starts with it once markdown
    decoration (#, **, numbering, colon) is stripped; a parenthesised note may be left out."""
    lines = [_norm(line) for line in text.splitlines()]
    missing = []
    for heading in sections:
        full = _norm(heading)
        short = _norm(re.sub(r"\(.*?\)", "", heading))
        if not any(line.startswith(full) or (short and line.startswith(short)) for line in lines):
            missing.append(heading)
    return missing


class LLMSummariser:
    """Implements ctxbench.llm.base.Summariser on an LLMClient."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.model = client.config.model
        self.name = f"llm:{self.model}"
        self.usage: list[dict[str, Any]] = client.usage

    def summarise(self, request: SummaryRequest) -> str:
        messages = [
            {"role": "system", "content": request.instructions},
            {"role": "user", "content": request.source_text},
        ]
        text = self.client.complete(messages, max_tokens=request.max_tokens, purpose=request.purpose)
        missing = missing_sections(text, request.sections)
        if missing:
            self.usage[-1]["fault"] = "malformed"
            raise SummariserError(
                "malformed", f"summary from {self.model} lacks {len(missing)} section(s), first: {missing[0]!r}"
            )
        return text
