"""Results: the versioned schema, the atomic per-cell store, typed records and the Python API
(``load(paths) -> pandas.DataFrame``; see ctxbench.results.load and docs/results.md)."""

from ctxbench.results.load import calls, events, judgments, load, summaries
from ctxbench.results.records import CallRecord, EventRecord, Judgment, Summary
from ctxbench.results.store import SCHEMA_VERSION, Cell, config_hash, iter_summaries

__all__ = [
    "SCHEMA_VERSION",
    "CallRecord",
    "Cell",
    "EventRecord",
    "Judgment",
    "Summary",
    "calls",
    "config_hash",
    "events",
    "iter_summaries",
    "judgments",
    "load",
    "summaries",
]
