"""Typed records of a results folder: what each file of a cell holds, as dataclasses.

Each ``from_dict`` keeps keys it does not declare in ``extra``, so a newer ctxbench (or another
helper's new column) never breaks an older reader. docs/results.md describes every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

R = TypeVar("R")


def _split(cls: type, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    names = {f.name for f in fields(cls)} - {"extra"}
    return {k: v for k, v in data.items() if k in names}, {k: v for k, v in data.items() if k not in names}


@dataclass(frozen=True)
class CallRecord:
    """One line of ``calls.jsonl``: one recorded assistant call as the strategy replayed it."""

    call: int
    message_index: int
    tokens_sent: int  # the prompt the provider counted (the last attempt)
    tokens_uncompacted: int  # what the full history would have been
    accepted: bool  # False: the provider rejected every attempt (a failed call)
    overflow_errors: int = 0
    retries: int = 0
    layers: list[str] = field(default_factory=list)  # layers that fired before this call
    state: str | None = None
    tokens_estimated: int | None = None  # the strategy's own estimate
    messages_sent: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallRecord:
        known, extra = _split(cls, data)
        return cls(**known, extra=extra)


@dataclass(frozen=True)
class EventRecord:
    """One line of ``events.jsonl``: something a strategy reported (``context.status``, a layer's note)."""

    call: int
    type: str
    extra: dict[str, Any] = field(default_factory=dict)  # the event's own fields (used, budget, state...)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EventRecord:
        known, extra = _split(cls, data)
        return cls(**known, extra=extra)


@dataclass(frozen=True)
class Judgment:
    """One line of ``retention.jsonl``: a probe judged at a checkpoint."""

    checkpoint: str  # periodic, compaction, needed, end (joined with + when several)
    call: int
    probe: str
    status: str  # kept, recoverable, lost (or unjudged)
    kind: str | None = None
    judge: str | None = None
    age_calls: int | None = None
    compactions: int | None = None
    layers: list[str] = field(default_factory=list)
    evidence: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Judgment:
        known, extra = _split(cls, data)
        return cls(**known, extra=extra)


@dataclass(frozen=True)
class Summary:
    """``summary.json``: a complete cell: who (``cell``), what came out (``metrics``), with what
    config (``config``, resolved) and which code (``code``, the fingerprint; see store.py)."""

    path: Path  # the cell folder
    schema_version: str
    cell: dict[str, Any]
    metrics: dict[str, Any]
    config: dict[str, Any] | None = None
    code: str | None = None
    ctxbench_version: str | None = None
    git_revision: str | None = None
    created: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], path: Path) -> Summary:
        known, _ = _split(cls, {k: v for k, v in data.items() if k != "path"})
        return cls(path=path, **known)

    @property
    def transcript(self) -> str:
        return str(self.cell.get("transcript"))

    @property
    def strategy(self) -> str:
        return str(self.cell.get("strategy"))

    @property
    def model(self) -> str:
        return str(self.cell.get("model"))

    def row(self) -> dict[str, Any]:
        """Identity and every scalar metric, flat: one row of ``ctxbench.results.load``."""
        row: dict[str, Any] = {k: v for k, v in self.cell.items() if not isinstance(v, dict | list)}
        row["overrides"] = " ".join(self.cell.get("overrides") or ())
        row.update({k: v for k, v in self.metrics.items() if isinstance(v, int | float | str | bool) or v is None})
        row["code"] = self.code
        row["cell_dir"] = str(self.path)
        return row
