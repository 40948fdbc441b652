"""The agent's own condensations, replayed as it made them.

An OpenHands run with a condenser records ``CondensationAction`` events: from that point on the
agent sends its history without the forgotten messages and, where the event has one, with a
summary inserted at ``summary_offset`` (only the latest summary is kept: OpenHands'
``View.from_events``). The importer keeps them in ``metadata["condensations"]`` (``at``: the
message index from which they apply; ``forgotten``: message indices; ``summary``;
``summary_offset``). The replay applies them to the history the strategy starts from and to the
full-history baseline, so ``none`` sends what the agent sent rather than a history it never
held. A strategy compacts on top of that history. A rewrite strategy may already have replaced
a forgotten message with a compacted copy; the copy is the strategy's own and stays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.transcripts.model import Message, Transcript


@dataclass(frozen=True)
class Condensation:
    at: int
    forgotten: tuple[int, ...]
    summary: str | None
    summary_offset: int | None


def recorded_condensations(transcript: Transcript) -> list[Condensation]:
    """The transcript's recorded condensations in order; malformed entries are left out (the
    importer wrote them; a hand-edited file may not)."""
    raw = transcript.metadata.get("condensations")
    out = []
    n = len(transcript.messages)
    for event in raw if isinstance(raw, list) else ():
        if not isinstance(event, dict) or not isinstance(event.get("at"), int):
            continue
        at: int = event["at"]
        listed = event.get("forgotten")
        forgotten = tuple(
            i
            for i in (listed if isinstance(listed, list) else ())
            if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < min(at, n)
        )
        summary = event.get("summary") if isinstance(event.get("summary"), str) and event["summary"] else None
        offset = event.get("summary_offset")
        out.append(Condensation(at, forgotten, summary, offset if isinstance(offset, int) and offset >= 0 else None))
    return sorted(out, key=lambda c: c.at)


class CondensationReplay:
    """Applies a transcript's recorded condensations to histories as the replay reaches them."""

    def __init__(self, transcript: Transcript) -> None:
        self.messages = transcript.messages
        self.pending = recorded_condensations(transcript)
        self.gone: set[int] = set()  # id() of what left: forgotten originals, replaced summaries
        self.retired: list[Message] = []  # replaced summaries, kept alive so their ids stay unique
        self.summary: Message | None = None  # the summary the agent sends now (the latest)
        self.summary_offset = 0

    def __bool__(self) -> bool:
        return bool(self.pending)

    def advance(self, upto: int) -> list[Condensation]:
        """Take in the condensations that apply before the call at message index ``upto``."""
        due = [c for c in self.pending if c.at <= upto]
        self.pending = self.pending[len(due) :]
        for event in due:
            self.gone.update(id(self.messages[i]) for i in event.forgotten)
            if event.summary is not None and event.summary_offset is not None:
                if self.summary is not None:
                    self.retired.append(self.summary)
                    self.gone.add(id(self.summary))
                self.summary = Message("user", event.summary, metadata={"condensation_summary": True})
                self.summary_offset = event.summary_offset
        return due

    def view(self, history: Sequence[Message]) -> tuple[list[Message], list[Message], Message | None]:
        """``history`` as the agent holds it now: a new list, the messages that left it, and the
        summary if it entered."""
        gone = self.gone
        kept = [m for m in history if id(m) not in gone]
        removed = [m for m in history if id(m) in gone] if len(kept) < len(history) else []
        summary = self.summary
        if summary is not None and not any(m is summary for m in kept):
            kept.insert(min(self.summary_offset, len(kept)), summary)
            return kept, removed, summary
        return kept, removed, None

    def view_counted(
        self, history: Sequence[Message], sizes: Callable[[Iterable[Message]], list[int]]
    ) -> tuple[list[Message], int]:
        """``view(history)`` and how many tokens it changed the history by, counted with ``sizes``."""
        kept, removed, summary = self.view(history)
        return kept, sum(sizes([summary] if summary is not None else [])) - sum(sizes(removed))


def condensation_event(events: Sequence[Condensation]) -> dict[str, Any]:
    """The event the replay emits for recorded condensations."""
    return {
        "type": "recorded_condensation",
        "forgotten": sum(len(e.forgotten) for e in events),
        "summary": any(e.summary is not None for e in events),
    }
