"""Data that ships with ctxbench: the bundled synthetic transcripts (``bundled/``).

Config paths may name package data as ``pkg://ctxbench/<path>`` (the bundled dataset's
default); any other relative path is the user's, relative to the directory ctxbench runs in.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
BUNDLED = PACKAGE_ROOT / "data" / "bundled"
PKG_PREFIX = "pkg://ctxbench/"


def resolve_data_path(path: str | Path, cwd: str | Path) -> Path:
    """``pkg://ctxbench/...`` inside the installed package; absolute as is; else under ``cwd``."""
    text = str(path)
    if text.startswith(PKG_PREFIX):
        return PACKAGE_ROOT / text.removeprefix(PKG_PREFIX)
    return Path(text) if Path(text).is_absolute() else Path(cwd) / text
