"""The upstream packages scripts/setup.sh installs (dbgpt, inspect_ai, langchain) are required by their
tests: after setup, one that does not import is a broken install, so the tests fail with the reason
instead of skipping (a skip left the suite green with `strategy=inspect_compaction` unusable)."""

from __future__ import annotations

import pytest


def fail_if_missing(strategy: str, reason: str | None) -> None:
    """Call from an autouse fixture: fails the test when ``reason`` (``ctxbench.upstream.missing``) is set."""
    if reason:
        pytest.fail(f"strategy={strategy} cannot run, although scripts/setup.sh installs it: {reason}", pytrace=False)
