"""Framework boilerplate: text a framework puts in user or system messages on every run
(SWE-agent's "We're currently solving the following issue...", OpenHands' injected tips,
Claude Code's compaction caveats). Probes about what the *user* asked skip it.

Two sources: known lead-ins and framework-message openings (for a single transcript), and
sentences that recur across runs of the same framework in a dataset (``find_boilerplate``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ctxbench.transcripts.model import Transcript

LEAD_INS = re.compile(
    r"^(?:we're currently solving the following|here'?s the issue text|here is the issue text|"
    r"i'?ve uploaded a .*(?:repository|directory)|consider the following (?:issue|pr) description|"
    r"issue:?$|instructions:?$|the description is:?$|files included in the challenge)",
    re.IGNORECASE,
)
FRAMEWORK_MESSAGE = re.compile(
    r"^\s*(?:here is a demonstration of how to correctly accomplish this task|today's date is|<extra_info>|"
    r"caveat: the messages below were generated|this session is being continued from a previous conversation|"
    r"<command-name>|<local-command-stdout>|<system-reminder>|warmup\s*$)",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def sentences(text: str) -> list[str]:
    return [s for s in (_norm(p) for p in _SPLIT.split(text)) if s]


@dataclass(frozen=True)
class Boilerplate:
    """Sentences (normalised) known to be framework text, beside the built-in lead-ins."""

    recurring: frozenset[str] = frozenset()

    def is_boilerplate(self, sentence: str) -> bool:
        norm = _norm(sentence)
        return bool(LEAD_INS.match(norm)) or norm in self.recurring


def is_framework_message(content: str, boilerplate: Boilerplate) -> bool:
    """A user-role message the framework wrote (a demonstration, a date, a caveat), or one made
    only of boilerplate sentences."""
    if FRAMEWORK_MESSAGE.match(content):
        return True
    parts = sentences(content)
    return bool(parts) and all(boilerplate.is_boilerplate(p) for p in parts)


def find_boilerplate(transcripts: Iterable[Transcript], share: float = 0.5) -> Boilerplate:
    """Sentences of system and user messages found in at least two tasks and in at least
    ``share`` of the tasks of the same framework (source format). Runs that open with the same
    user message (a rerun, another model, trials of one task) count as one task: their issue text
    recurs because the task does, while a framework's template recurs across different tasks."""
    tasks: dict[tuple[str, str], set[str]] = defaultdict(set)
    for t in transcripts:
        fmt = str(t.source.get("format") or "")
        first = next((m.content for m in t.messages if m.role == "user"), "")
        tasks[(fmt, _norm(first))] |= {
            s for m in t.messages if m.role in ("system", "user") for s in sentences(m.content)
        }
    runs: Counter[str] = Counter()
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for (fmt, _), found in tasks.items():
        runs[fmt] += 1
        seen[fmt].update(found)
    recurring = {
        s for fmt, counts in seen.items() for s, n in counts.items() if n >= 2 and n >= share * runs[fmt] and len(s) > 3
    }
    return Boilerplate(frozenset(recurring))
