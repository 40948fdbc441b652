"""The canonical on-disk form: JSONL, one transcript per line.

Each line is ``Transcript.to_dict()``; the file loads with
``datasets.load_dataset("json", data_files=path)`` as well as with :func:`read_transcripts`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from ctxbench.atomic import write_jsonl_atomic
from ctxbench.errors import InputError
from ctxbench.transcripts.model import Transcript

CANONICAL_SUFFIX = ".jsonl"


def read_transcripts(path: str | Path) -> Iterator[Transcript]:
    """Yield the transcripts of one canonical file; a bad line is an ``InputError``."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(path, None, f"cannot open: {exc.strerror}") from None
    with handle:
        for line_no, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(path, f"line {line_no}", f"invalid UTF-8 at byte {exc.start} ({exc.reason})") from None
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"line {line_no}", f"not valid JSON ({exc.msg}, column {exc.colno})") from None
            try:
                yield Transcript.from_dict(data)
            except (KeyError, ValueError, TypeError) as exc:
                raise InputError(path, f"line {line_no}", f"not a ctxbench transcript ({exc})") from None


def write_transcripts(path: str | Path, transcripts: Iterable[Transcript]) -> Path:
    """Write transcripts to one canonical JSONL file, atomically."""
    return write_jsonl_atomic(path, (t.to_dict() for t in transcripts))


def find_canonical_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand files and directories into a sorted list of canonical ``.jsonl`` files."""
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found.extend(sorted(p.rglob(f"*{CANONICAL_SUFFIX}")))
        elif p.exists():
            found.append(p)
        else:
            raise InputError(p, None, "no such file or directory")
    return found


def load_transcripts(paths: Iterable[str | Path]) -> list[Transcript]:
    return [t for f in find_canonical_files(paths) for t in read_transcripts(f)]
