"""``ctxbench bench``: how close replay comes to the tokenizer's own speed (see docs/performance.md)."""

from ctxbench.bench.cli import cli

__all__ = ["cli"]
