"""A fact read from a transcript, and how its answer and question spell things: clipped text, a
command named by its first line."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxbench.probes.shell import strip_heredocs


@dataclass(frozen=True)
class Fact:
    label: str
    answer: str
    message_index: int
    question: str


def norm_words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def named(command: str) -> str:
    """How a question names a command: its first line, clipped; a command that writes a script
    through a heredoc and runs it, by its first line and the line that runs it
    (``cat > t.py << 'EOF' ... python t.py``): the heredoc's body is the script, not the command."""
    lines = [ln.strip() for ln in command.strip().splitlines() if ln.strip()]
    first = clip(lines[0], 90) if lines else ""
    shell = [ln.strip() for ln in strip_heredocs(command.strip()).splitlines() if ln.strip()]
    if len(shell) > 1 and "<<" in shell[0]:
        return f"{clip(shell[0], 60)} ... {clip(shell[-1], 60)}"
    return first + " ..." if len(lines) > 1 or len(first) < len(lines[0] if lines else "") else first
