"""What a judge says about one probe at one checkpoint."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ctxbench.transcripts.model import Message, Probe

# "unjudged": the judge could not give a verdict (an LLM call failed or its grade never parsed).
Status = Literal["kept", "recoverable", "lost", "unjudged"]


@dataclass(frozen=True)
class Verdict:
    """``kept``: the fact is in the working context; ``recoverable``: only behind a kept
    snapshot pointer (costs a tool call); ``lost``: gone. ``score`` is a 0-5 grade where a
    judge gives one (LLM judge), else None."""

    status: Status
    judge: str
    score: float | None = None
    answer: str | None = None
    evidence: str | None = None
    others: dict[str, str] | None = None  # statuses from judges run beside this one (agreement)


class Judge(Protocol):
    name: str

    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict: ...
