"""The strategy interface, kept at its old import path: it lives in ctxbench.core."""

from ctxbench.core import ContextOverflowError, ModelSpec, SnapshotSource, Strategy, StrategyContext

__all__ = ["ContextOverflowError", "ModelSpec", "SnapshotSource", "Strategy", "StrategyContext"]
