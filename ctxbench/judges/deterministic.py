"""The deterministic judge: is the gold value (normalised) in the working context, or
recoverable through a snapshot pointer that the context still holds?"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxbench.judges.base import Verdict
from ctxbench.layers.snapshot_store import SnapshotReader, store_path
from ctxbench.transcripts.model import Message, Probe

_SPACE = re.compile(r"\s+")
# DB-GPT's pointers: "[Full detail available at: PATH]" and Layer 1's "full detail at: PATH]".
_POINTER = re.compile(r"full detail (?:available )?at: ([^\]\n]+)\]", re.IGNORECASE)


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used for matching gold values."""
    return _SPACE.sub(" ", text).casefold().strip()


class DeterministicJudge:
    name = "deterministic"

    def __init__(self, snapshot_root: Path | None = None) -> None:
        # Pointers may be relative to the run's cell folder (DB-GPT's snapshots are written there).
        self.snapshot_root = snapshot_root
        # Normalised text per message object; the message is kept as value so its id stays unique.
        self._texts: dict[int, tuple[Message, str]] = {}
        self._snapshots: dict[str, str] = {}
        self._stores: dict[Path, SnapshotReader] = {}

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
            record = self._stored(path)
            if record is not None:  # a DB-GPT snapshot from the cell's store: its string values
                self._snapshots[path] = normalise(" ".join(_strings(record)))
                return self._snapshots[path]
            file = Path(path)
            if not file.is_absolute() and self.snapshot_root is not None:
                file = self.snapshot_root / file
            try:
                raw = file.read_text("utf-8")
            except OSError:
                return ""  # not cached: the snapshot may still be written later in the replay
            with contextlib.suppress(ValueError):  # JSON snapshot: match string values, not escapes
                raw = " ".join(_strings(json.loads(raw)))
            self._snapshots[path] = normalise(raw)
        return self._snapshots[path]

    def _stored(self, path: str) -> Any | None:
        """The snapshot under ``path`` in the cell's snapshot store, if it is there."""
        store = store_path(self.snapshot_root, path) if self.snapshot_root is not None else None
        if store is None or not store.is_file():
            return None
        if store not in self._stores:
            self._stores[store] = SnapshotReader(store)
        return self._stores[store].get(path)

    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict:
        golds = [normalise(g) for g in (probe.answer, *probe.aliases) if g.strip()]
        texts = [self._text(m) for m in working]
        for gold in golds:
            for i, text in enumerate(texts):
                if gold in text:
                    return Verdict("kept", self.name, evidence=f"message {i}")
        for message in working:
            for path in _POINTER.findall(message.content):
                snapshot = self._snapshot_text(path.strip())
                if any(g in snapshot for g in golds):
                    return Verdict("recoverable", self.name, evidence=path.strip())
        return Verdict("lost", self.name)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [str(value)] if value is not None else []


def _decoded(arguments: str) -> str:
    """Tool-call arguments as the agent meant them: JSON string values without escapes."""
    try:
        return " ".join(_strings(json.loads(arguments)))
    except ValueError:
        return ""
