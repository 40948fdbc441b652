"""Errors a user sees: one line that names the file and the place, never a traceback."""

from __future__ import annotations

from pathlib import Path


class CtxbenchError(Exception):
    """Base class for every error the CLI reports as a one-line message."""


class InputError(CtxbenchError):
    """Bad input: names the file and the place (line, message index, JSON path)."""

    def __init__(self, path: str | Path | None, where: str | None, problem: str) -> None:
        self.path = str(path) if path is not None else None
        self.where = where
        self.problem = problem
        location = ":".join(p for p in (self.path, where) if p)
        super().__init__(f"{location}: {problem}" if location else problem)


class ConfigError(CtxbenchError):
    """A configuration value that cannot work (unknown tokenizer, bad threshold)."""
