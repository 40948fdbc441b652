"""The deterministic judge: is the gold value (normalised) in the working context, or
recoverable through a snapshot pointer that the context still holds? Snapshots are read
through the ``SnapshotSource`` the strategy provides (``Strategy.snapshots(cell)``)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ctxbench.core import SnapshotSource
from ctxbench.judges.base import Verdict
from ctxbench.transcripts.model import Message, Probe, json_strings

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used for matching gold values."""
    return _SPACE.sub(" ", text).casefold().strip()


class DeterministicJudge:
    name = "deterministic"

    def __init__(self, snapshots: SnapshotSource | None = None) -> None:
        # The strategy's snapshots (None: it keeps none, so nothing is "recoverable").
        self.snapshots = snapshots
        # Normalised text per message object; the message is kept as value so its id stays unique.
        self._texts: dict[int, tuple[Message, str]] = {}
        self._snapshots: dict[str, str] = {}

    def _text(self, message: Message) -> str:
        hit = self._texts.get(id(message))
        if hit is None or hit[0] is not message:
            calls = " ".join(f"{c.name} {c.arguments} {_decoded(c.arguments)}" for c in message.tool_calls)
            hit = (message, normalise(f"{message.content} {calls}"))
            self._texts[id(message)] = hit
        return hit[1]

    def forget_except(self, working: Sequence[Message]) -> None:
        """Drop cached texts of messages no longer in the working context."""
        alive = {id(m) for m in working}
        self._texts = {k: v for k, v in self._texts.items() if k in alive}

    def _snapshot_text(self, path: str) -> str:
        if path not in self._snapshots:
            record = self.snapshots.read(path) if self.snapshots is not None else None
            if record is None:
                return ""  # not cached: the snapshot may still be written later in the replay
            self._snapshots[path] = normalise(" ".join(json_strings(record)))
        return self._snapshots[path]

    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict:
        golds = [normalise(g) for g in (probe.answer, *probe.aliases) if g.strip()]
        texts = [self._text(m) for m in working]
        for gold in golds:
            for i, text in enumerate(texts):
                if gold in text:
                    return Verdict("kept", self.name, evidence=f"message {i}")
        if self.snapshots is None:
            return Verdict("lost", self.name)
        for message in working:
            for path in self.snapshots.pointers(message.content):
                snapshot = self._snapshot_text(path)
                if any(g in snapshot for g in golds):
                    return Verdict("recoverable", self.name, evidence=path)
        return Verdict("lost", self.name)


def _decoded(arguments: str) -> str:
    """Tool-call arguments as the agent meant them: JSON string values without escapes."""
    try:
        return " ".join(json_strings(json.loads(arguments)))
    except ValueError:
        return ""
