"""A deterministic summariser with no LLM: keeps the lines of the span that carry facts a later
turn may need (paths, identifiers, numbers, errors, decisions, URLs, ports, versions) and files
each under the best-fitting requested heading."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ctxbench.llm.base import SummaryRequest

CHARS_PER_TOKEN = 4  # approximate: no tokenizer here, the usual 4 chars/token rule bounds the output
MAX_LINE_CHARS = 300  # one kept line may not eat the budget

_ROLE = re.compile(r"^\[(\w+)\]:\s*")
_PATTERNS = {
    "error": re.compile(
        r"\b(error|exception|traceback|failed|failure|fatal|panic|errno|denied|refused|not found|undefined)\b|"
        r"\w+(Error|Exception)\b",
        re.I,
    ),
    "decision": re.compile(
        r"\b(decided|decide|decision|because|must|never|always|constraint|require[sd]?|should not|don't|do not|"
        r"instead|chose|agreed)\b",
        re.I,
    ),
    "next": re.compile(r"\b(next|todo|to do|pending|remaining|then i will|will now|plan|still need)\b", re.I),
    "url": re.compile(r"\bhttps?://\S+|\bwww\.\S+", re.I),
    "path": re.compile(
        r"(?:^|[\s'\"`(=])(?:~|\.{1,2})?/[\w.\-/]+|\b[\w\-/]+\.(?:py|js|ts|tsx|jsx|json|ya?ml|toml|"
        r"md|txt|sh|go|rs|java|c|h|cpp|hpp|sql|csv|html|css|cfg|ini|lock|log)\b"
    ),
    "port": re.compile(r"\bport\s*\d{2,5}\b|(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\]|\w):\d{2,5}\b", re.I),
    "version": re.compile(r"\bv?\d+\.\d+(?:\.\d+)+\b|\bv\d+(?:\.\d+)?\b|==\s*\d"),
    "identifier": re.compile(r"`[^`]+`|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\.\w+\(|\b[A-Z]{2,}_[A-Z_]+\b"),
    "number": re.compile(r"\d"),
}
# Which heading words fit each kind of fact; the first heading containing one of the words wins.
_HEADING_WORDS = {
    "task": ("original task", "primary request", "intent", "user message", "task", "request", "goal"),
    "error": ("error", "fix", "problem"),
    "decision": ("decision", "problem solving", "constraint", "key technical", "concept"),
    "next": ("next", "pending", "todo"),
    "path": ("files", "code", "artifact"),
    "data": ("key data", "data", "key technical", "concept", "state"),
    "state": ("current state", "current work", "completed", "state", "progress", "work"),
}
_KIND_TO_GROUP = {"url": "data", "port": "data", "version": "data", "identifier": "data", "number": "data"}


MEMO_LINE_CHARS = 2048  # lines up to this long have their kinds remembered (memory stays bounded)


def line_kinds(line: str) -> tuple[str, ...]:
    """The kinds of fact a line carries. Remembered for short lines: a layer summarising old rounds
    call after call hands the same lines in again (the nine searches per line were 80% of a DB-GPT
    replay of real runs at a 16k window)."""
    return _remembered_kinds(line) if len(line) <= MEMO_LINE_CHARS else _kinds(line)


def _kinds(line: str) -> tuple[str, ...]:
    return tuple(kind for kind, pattern in _PATTERNS.items() if pattern.search(line))


_remembered_kinds = lru_cache(maxsize=1 << 15)(_kinds)


def _group(kinds: tuple[str, ...], role: str | None, is_first_user: bool) -> str:
    if is_first_user:
        return "task"
    for kind in ("error", "decision", "next", "path"):
        if kind in kinds:
            return kind
    return "data" if role in (None, "tool", "observation") or "number" in kinds else "state"


@lru_cache(maxsize=1024)
def _heading_for(group: str, sections: tuple[str, ...]) -> int:
    lowered = [s.lower() for s in sections]
    for order in (group, "data", "state"):  # fall back to a data or state heading, then the first one
        for word in _HEADING_WORDS[order]:
            for index, heading in enumerate(lowered):
                if word in heading:
                    return index
    return 0


class ExtractiveSummariser:
    """Deterministic, free, offline. ``name = "extractive"`` so results show no LLM wrote the summary."""

    name = "extractive"
    model = "extractive"

    def __init__(self, role: str = "summariser") -> None:
        self.role = role
        self.usage: list[dict[str, Any]] = []

    def summarise(self, request: SummaryRequest) -> str:
        sections = tuple(request.sections or ("Summary",))
        kept = self._kept_lines(request.source_text, sections)
        text = self._render(kept, sections, request.max_tokens * CHARS_PER_TOKEN)
        self.usage.append(
            {
                "role": self.role,
                "model": self.model,
                "purpose": request.purpose,
                "prompt_tokens": 0,  # no model: nothing is billed; chars show the work done
                "completion_tokens": 0,
                "cost_usd": 0.0,
                "cached": False,
                "fault": None,
                "chars_in": len(request.source_text),
                "chars_out": len(text),
            }
        )
        return text

    @staticmethod
    def _kept_lines(source: str, sections: tuple[str, ...]) -> list[tuple[tuple[int, int, int], int, int, str]]:
        """(priority, position, heading index, line) for each line worth keeping; duplicates dropped."""
        kept, seen = [], set()
        role: str | None = None
        message, task_message = -1, None  # the first user message of the span is the task: kept whole
        for position, raw in enumerate(source.splitlines()):
            match = _ROLE.match(raw)
            if match:
                role, message = match.group(1).lower(), message + 1
                if task_message is None and role in ("user", "human"):
                    task_message = message
            in_task = message == task_message
            line = " ".join(raw.split())
            kinds = line_kinds(_ROLE.sub("", line))
            if not line or line in seen or not (kinds or in_task):
                continue
            seen.add(line)
            if len(line) > MAX_LINE_CHARS:
                line = line[: MAX_LINE_CHARS - 3] + "..."
            group = _group(kinds, role, in_task)
            # Task, errors and decisions first; then lines with more kinds of facts; later lines break ties.
            priority = (0 if group in ("task", "error", "decision") else 1, -len(kinds), -position)
            kept.append((priority, position, _heading_for(group, sections), line))
        return kept

    @staticmethod
    def _render(kept: list, sections: tuple[str, ...], budget_chars: int) -> str:
        # Headings (and a placeholder under each) are always present, even over budget.
        used = sum(len(f"## {s}\n- (none)\n") for s in sections)
        chosen = []
        for item in sorted(kept, key=lambda k: k[0]):
            cost = len(item[3]) + 3
            if used + cost > budget_chars:
                continue
            used += cost
            chosen.append(item)
        by_heading: dict[int, list[str]] = {i: [] for i in range(len(sections))}
        for _, _, heading, line in sorted(chosen, key=lambda k: k[1]):
            by_heading[heading].append(f"- {line}")
        parts = []
        for index, heading in enumerate(sections):
            parts.append(f"## {heading}")
            parts.extend(by_heading[index] or ["- (none)"])
        return "\n".join(parts)
