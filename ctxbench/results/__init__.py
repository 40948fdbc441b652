"""Results: the versioned schema, the atomic per-cell store, and readers."""

from ctxbench.results.store import SCHEMA_VERSION, Cell, config_hash, iter_summaries

__all__ = ["SCHEMA_VERSION", "Cell", "config_hash", "iter_summaries"]
