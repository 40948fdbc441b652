"""The Python API to results: ``ctxbench.results.load(paths) -> pandas.DataFrame``.

    import ctxbench.results
    cells = ctxbench.results.load("results/default")          # one row per cell
    cells.groupby("strategy")[["tokens_sent_total", "retention"]].mean()
    for s in ctxbench.results.summaries("results/default"):    # typed: Summary records
        calls = ctxbench.results.calls(s.path)                 # list[CallRecord]

A path may be a result root, any folder under it, a cell folder or a ``summary.json``; cells
are found recursively and deduplicated. Only complete cells (with ``summary.json``) count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ctxbench.errors import InputError
from ctxbench.results.reader import check_record, iter_jsonl
from ctxbench.results.records import CallRecord, EventRecord, Judgment, Summary
from ctxbench.results.store import iter_summaries

if TYPE_CHECKING:
    import pandas as pd

R = TypeVar("R")
PathArg = str | Path | Sequence[str | Path]


def _paths(paths: PathArg) -> list[Path]:
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    out = [Path(p) for p in items]
    for path in out:
        if not path.exists():
            raise InputError(path, None, "no such file or directory")
    return out


def summaries(paths: PathArg) -> list[Summary]:
    """Every complete cell under ``paths``, as typed records."""
    return [Summary.from_dict(data, cell) for cell, data in iter_summaries(*_paths(paths))]


def load(paths: PathArg) -> pd.DataFrame:
    """One row per complete cell under ``paths``: identity (transcript, strategy, model,
    config_hash, tokenizer, estimator, overrides...), every scalar metric, the code
    fingerprint and the cell folder. Empty (no columns) when there is no cell."""
    import pandas as pd  # here, not above: a `ctxbench run` job imports this package (store.py) but not pandas

    return pd.DataFrame([s.row() for s in summaries(paths)])


def _records(path: Path, make: Callable[[dict[str, Any]], R], kind: str) -> list[R]:
    if not path.exists():
        return []
    out = []
    for line_no, record in iter_jsonl(path, kind):
        check_record(record, kind, path, f"line {line_no}")
        try:
            out.append(make(record))
        except TypeError as exc:
            raise InputError(path, f"line {line_no}", f"not a {kind} record ({exc})") from None
    return out


def calls(cell: str | Path) -> list[CallRecord]:
    """The cell's ``calls.jsonl``, one record per replayed call."""
    return _records(Path(cell) / "calls.jsonl", CallRecord.from_dict, "call")


def events(cell: str | Path) -> list[EventRecord]:
    """The cell's ``events.jsonl`` (strategy events: ``context.status`` and the layers' notes)."""
    return _records(Path(cell) / "events.jsonl", EventRecord.from_dict, "event")


def judgments(cell: str | Path) -> list[Judgment]:
    """The cell's ``retention.jsonl``: every probe judged at every checkpoint."""
    return _records(Path(cell) / "retention.jsonl", Judgment.from_dict, "judgment")
