"""Layers: one module per compaction step, composed by strategy pipelines."""

from ctxbench.layers.base import Layer, compacted
from ctxbench.layers.tool_pairs import repair_tool_pairs

__all__ = ["Layer", "compacted", "repair_tool_pairs"]
