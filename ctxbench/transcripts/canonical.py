"""The canonical on-disk form: JSONL, one transcript per line.

Each line is ``Transcript.to_dict()``; the file loads with
``datasets.load_dataset("json", data_files=path)`` as well as with :func:`read_transcripts`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ctxbench.atomic import write_jsonl_atomic
from ctxbench.errors import InputError
from ctxbench.memory import trim_heap
from ctxbench.transcripts.model import Message, Transcript

CANONICAL_SUFFIX = ".jsonl"
SCHEMA_VERSION = "ctxbench.transcript/1"  # what ``Transcript.to_dict`` writes
READ_VERSIONS: tuple[str, ...] = (SCHEMA_VERSION,)  # what this reader understands
_INEXACT = float(2**63)  # orjson turns integers outside [-2**63, 2**64) into floats at least this large
# After a line this long is parsed, free heap pages go back to the system (a few ms): else the
# parse's buffers (about twice the line) stay in the RSS under the replay that follows.
TRIM_LINE_BYTES = 64 * 1024


def read_transcripts(path: str | Path) -> Iterator[Transcript]:
    """Yield the transcripts of one canonical file; a bad line is an ``InputError``.

    Memory: a line is parsed from its bytes and dropped before the ``Transcript`` is built. An
    ASCII line goes through ``json`` (decoded, the bytes dropped, then parsed: its text costs 1
    byte/char); any other line through ``orjson``, which parses the UTF-8 bytes without a ``str``
    of the whole line (2 bytes/char as soon as one CJK character appears, 4 with one emoji).
    What orjson rejects (bad JSON, bad UTF-8, but also NaN, lone surrogate escapes, ``1e400``) or
    reads inexactly (integers beyond 64 bits) is parsed again by ``json``: the result, and every
    error message, is the standard library's, exactly as before. After a long line the heap is
    trimmed (``TRIM_LINE_BYTES``), so what the parse freed leaves the RSS.
    """
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(path, None, f"cannot open: {exc.strerror}") from None
    with handle:
        line_no = 0
        # No enumerate(): its reused result tuple would keep each line's bytes alive through the parse.
        for raw in handle:
            line_no += 1
            if raw.isspace():
                continue
            large = len(raw) >= TRIM_LINE_BYTES
            data = None if raw.isascii() else _orjson_loads(raw)
            if data is None:
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        path, f"line {line_no}", f"invalid UTF-8 at byte {exc.start} ({exc.reason})"
                    ) from None
                del raw
                if line.isspace():  # e.g. a no-break space only: blank, as str.strip() sees it
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(
                        path, f"line {line_no}", f"not valid JSON ({exc.msg}, column {exc.colno})"
                    ) from None
                except RecursionError:
                    raise InputError(path, f"line {line_no}", "not valid here: JSON nested too deeply") from None
                except ValueError as exc:  # an integer beyond Python's digit limit
                    raise InputError(path, f"line {line_no}", f"not valid here: {str(exc).split(';')[0]}") from None
                del line
            else:
                del raw
            transcript = transcript_from_data(data, path, f"line {line_no}")
            del data  # the parsed dicts; the transcript shares their strings
            if large:  # the line's bytes, parse buffers and dicts are free: give their pages back
                trim_heap()
            yield transcript
            del transcript


def check_version(data: Any, path: str | Path, where: str | None) -> None:
    """``InputError`` unless ``data`` is a transcript object of a schema version this reader knows."""
    if not isinstance(data, dict):
        raise InputError(path, where, f"not a ctxbench transcript (a JSON {type(data).__name__}, not an object)")
    version = data.get("format")
    known = ", ".join(READ_VERSIONS)
    if version is not None and version not in READ_VERSIONS:  # no key: a hand-written line, read as version 1
        raise InputError(path, where, f"unsupported schema version {version!r} (this ctxbench reads {known})")


def transcript_from_data(data: Any, path: str | Path, where: str | None) -> Transcript:
    """One parsed canonical line as a ``Transcript``: schema version checked, problems as ``InputError``."""
    check_version(data, path, where)
    try:
        return Transcript.from_dict(data)
    except KeyError as exc:
        raise InputError(path, where, f"not a ctxbench transcript (missing key {exc})") from None
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError(path, where, f"not a ctxbench transcript ({exc})") from None


def _orjson_loads(raw: bytes) -> Any:
    """``raw`` parsed by orjson, or None when the standard library must decide (see read_transcripts)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float) and abs(value) >= _INEXACT:
            return None  # maybe an integer orjson could not hold; json keeps it exact
    return data


def write_transcripts(path: str | Path, transcripts: Iterable[Transcript]) -> Path:
    """Write transcripts to one canonical JSONL file, atomically."""
    return write_jsonl_atomic(path, (t.to_dict() for t in transcripts))


def find_canonical_files(paths: Iterable[str | Path], problems: list[str] | None = None) -> list[Path]:
    """Expand files and directories into a sorted list of canonical ``.jsonl`` files.

    A folder that cannot be listed is never skipped silently: an ``InputError``, or one line added
    to ``problems`` when given (the rest is still listed). Links to folders are not followed (no
    loops). A given path that does not exist says so; a broken or looping link is named when read.
    """
    found: list[Path] = []

    def unlistable(exc: OSError) -> None:
        reason = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
        error = InputError(exc.filename, None, f"cannot list directory: {reason}")
        if problems is None:
            raise error
        problems.append(str(error))

    for p in paths:
        p = Path(p)
        if p.is_dir():
            files: list[Path] = []
            for folder, _, names in os.walk(p, onerror=unlistable):
                files.extend(Path(folder) / n for n in names if n.endswith(CANONICAL_SUFFIX))
            found.extend(sorted(files))
        elif p.exists() or p.is_symlink():
            found.append(p)
        else:
            raise InputError(p, None, "no such file or directory")
    return found


@dataclass
class DatasetFile:
    """One canonical file read whole: its path, a hash of its bytes, its transcripts."""

    path: Path
    hash: str
    transcripts: list[Transcript]


@dataclass
class DatasetRead:
    """What ``read_dataset`` found: the files read whole, and one line per file skipped."""

    files: list[DatasetFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_dataset(paths: Iterable[str | Path], strict: bool = False) -> DatasetRead:
    """Every canonical file under ``paths``; a bad file (or a missing path) is skipped and named in
    ``problems`` (its good lines are not used: a file is replayed whole or not at all), unless
    ``strict``, where the first problem is raised as an ``InputError``."""
    from ctxbench.transcripts.detect import check_regular_file  # not at import time: detect loads the importers

    found = DatasetRead()
    for given in paths:
        try:
            files = find_canonical_files([given], found.problems if not strict else None)
        except InputError as exc:
            if strict:
                raise
            found.problems.append(str(exc))
            continue
        for file in files:
            try:
                check_regular_file(file)
                digest = hashlib.sha256(file.read_bytes())
                file_hash = digest.hexdigest()[:16]
                transcripts = _read_cached(file, digest.digest())
            except OSError as exc:
                error = InputError(file, None, f"cannot read: {exc.strerror or exc}")
            except InputError as exc:
                error = exc
            else:
                found.files.append(DatasetFile(file, file_hash, transcripts))
                continue
            if strict:
                raise error
            found.problems.append(str(error))
    return found


# The transcripts of files read whole in this process, as read, by path and the sha256 of the bytes
# they were read from: the jobs of a sweep that one process runs (the basic launcher's, each joblib
# worker's) read the same dataset again each. Never handed out: each read gets fresh copies, as a
# parse makes them (``dedupe_ids`` renames a transcript, a layer writes into a message's metadata).
# Kept from a file's second read of the same bytes on: a process that reads its dataset once (one
# job) holds no second copy of it. Bounded by the files' bytes: a larger dataset is parsed per job.
_READ: dict[Path, tuple[bytes, int, list[Transcript]]] = {}
_SEEN: dict[Path, bytes] = {}  # a file read once: the digest of its bytes
READ_CACHE_BYTES = 64 * 1024 * 1024


def _read_cached(file: Path, digest: bytes) -> list[Transcript]:
    """``list(read_transcripts(file))``, from this process's earlier read of the same bytes if any."""
    key = file.resolve()
    held = _READ.get(key)
    if held is not None and held[0] == digest:
        return [fresh_copy(t) for t in held[2]]
    _READ.pop(key, None)
    transcripts = list(read_transcripts(file))
    size = file.stat().st_size
    again, _SEEN[key] = _SEEN.get(key) == digest, digest
    if again and size <= READ_CACHE_BYTES:
        while _READ and sum(n for _, n, _ in _READ.values()) + size > READ_CACHE_BYTES:
            _READ.pop(next(iter(_READ)))  # the oldest first
        _READ[key] = (digest, size, [fresh_copy(t) for t in transcripts])
    return transcripts


def fresh_copy(transcript: Transcript) -> Transcript:
    """A copy of ``transcript`` as parsing its line again makes it: new messages (empty token
    caches, no origin), their metadata and the transcript's dicts copied deep; what is immutable
    (text, tool calls, probes) shared."""
    return Transcript(
        id=transcript.id,
        messages=[
            Message(
                role=m.role,
                content=m.content,
                tool_calls=m.tool_calls,
                tool_call_id=m.tool_call_id,
                name=m.name,
                pinned=m.pinned,
                metadata=copy.deepcopy(m.metadata) if m.metadata else {},
            )
            for m in transcript.messages
        ],
        probes=list(transcript.probes),
        source=copy.deepcopy(transcript.source),
        metadata=copy.deepcopy(transcript.metadata),
    )


def load_transcripts(paths: Iterable[str | Path]) -> list[Transcript]:
    return [t for f in find_canonical_files(paths) for t in read_transcripts(f)]
