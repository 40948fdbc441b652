"""The one reader of what ctxbench wrote: summaries, calls, events, retention, cells.json, baselines.

Every file is read bounded (a size cap per file, a length cap per line, a nesting cap), strictly
(UTF-8, no NaN or Infinity, the schema's types) and any problem is one ``InputError`` naming the file
and the place (``FILE:line N: ...`` or ``FILE:$.metrics.savings: ...``). A cell is complete only when
its ``manifest.json`` (written last at publish: every file of the cell with its size and sha256)
matches the folder: a file deleted, cut or altered after publishing makes the cell incomplete.
``report``, ``baseline``, ``check``, the pytest plugin, ``ctxbench.results`` and resume all read here.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ctxbench.errors import InputError

SCHEMA_VERSION = "ctxbench.results/1"
SUMMARY = "summary.json"
MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "ctxbench.manifest/1"
MAX_JSON_BYTES = 64 << 20  # a summary, manifest, cells.json or baseline larger than this is not ours
MAX_LINE_BYTES = 64 << 20  # one line of calls/events/retention
MAX_DEPTH = 64


class _NotFinite(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotFinite(f"{name} is not a number ctxbench writes")


def _depth_ok(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


# One decoder for every line (``json.loads`` with an argument builds a new one per call).
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _shallow(decoded: str) -> bool:
    """True when ``decoded`` cannot nest deeper than ``MAX_DEPTH``: a value inside k containers is
    at depth k + 1, and a text with fewer opening brackets than ``MAX_DEPTH`` (counted in C, those
    inside strings too) has fewer containers. Most lines are; only the others are walked."""
    return decoded.count("[") + decoded.count("{") < MAX_DEPTH


def parse_json(text: bytes, path: Path, where: str | None = None) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, at most ``MAX_DEPTH`` levels."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, where, f"not UTF-8 (byte {exc.start}); ctxbench writes UTF-8") from None
    try:
        if decoded.startswith("\ufeff"):  # json.loads names a BOM; the decoder alone does not
            data = json.loads(decoded, parse_constant=_no_constant)
        else:
            data = _DECODER.decode(decoded)
    except _NotFinite as exc:
        raise InputError(path, where, str(exc)) from None
    except json.JSONDecodeError as exc:
        place = where or f"line {exc.lineno}"
        raise InputError(path, place, f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(path, where, f"JSON nested deeper than {MAX_DEPTH} levels") from None
    if not _shallow(decoded) and not _depth_ok(data):
        raise InputError(path, where, f"JSON nested deeper than {MAX_DEPTH} levels")
    return data


def read_json(path: str | Path, what: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """One JSON file written by ctxbench, read whole (bounded)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(path, None, f"{size:,} bytes: larger than any {what} ctxbench writes ({max_bytes:,})")
        if size == 0:
            raise InputError(path, None, f"empty file (not a {what})")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read {what}: {exc.strerror or exc}") from None
    return parse_json(data, path)


def iter_jsonl(path: str | Path, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line; a line over ``MAX_LINE_BYTES`` or not an object is an error."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    with handle:
        line_no = 0
        while True:
            line = handle.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            line_no += 1
            if len(line) > MAX_LINE_BYTES:
                raise InputError(path, f"line {line_no}", f"longer than {MAX_LINE_BYTES:,} bytes")
            if not line.strip():
                continue
            record = parse_json(line, path, f"line {line_no}")
            if not isinstance(record, dict):
                raise InputError(path, f"line {line_no}", f"not a {kind} record (a JSON {type(record).__name__})")
            yield line_no, record


# --- what each file must hold ---------------------------------------------------------------------------

_INT, _NUM, _STR, _BOOL = "an integer", "a number", "a string", "true or false"


def _is(value: Any, kind: str) -> bool:
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _NUM:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if kind == _STR:
        return isinstance(value, str)
    return isinstance(value, bool)


# kind -> required keys and their types (other keys are free: a newer ctxbench may add columns)
RECORD_FIELDS: dict[str, dict[str, str]] = {
    "call": {"call": _INT, "tokens_sent": _INT, "tokens_uncompacted": _INT, "accepted": _BOOL},
    "event": {"call": _INT, "type": _STR},
    "judgment": {"checkpoint": _STR, "call": _INT, "probe": _STR, "status": _STR},
}
CELL_FILES = {"calls.jsonl": "call", "events.jsonl": "event", "retention.jsonl": "judgment"}


def check_record(record: dict[str, Any], kind: str, path: Path, where: str) -> dict[str, Any]:
    for key, want in RECORD_FIELDS[kind].items():
        if key not in record:
            raise InputError(path, f"{where}: $.{key}", f"missing (a {kind} record needs it)")
        if not _is(record[key], want):
            raise InputError(path, f"{where}: $.{key}", f"{record[key]!r} is not {want}")
    return record


def read_records(path: str | Path, kind: str) -> list[dict[str, Any]]:
    """Every record of a cell's ``calls.jsonl`` / ``events.jsonl`` / ``retention.jsonl`` (schema-checked)."""
    path = Path(path)
    return [check_record(r, kind, path, f"line {n}") for n, r in iter_jsonl(path, kind)]


COUNT_ENDS = ("_calls", "_errors", "_usd", "_total", "_retries")


def _metric_problem(key: str, value: Any) -> str | None:
    """Why a top-level metric cannot be right, or None."""
    if value is None or isinstance(value, bool | dict | list):
        return None
    if not _is(value, _NUM):
        return f"{value!r} is not a number"
    if key.startswith("retention") or key.endswith("_share"):
        return None if 0 <= value <= 1 else f"{value!r} is outside [0, 1]"
    if key.startswith("savings"):
        return None if value <= 1 else f"{value!r} is above 1 (more than everything saved)"
    if key in ("retries", "peak", "probes") or key.startswith(("tokens_", "calls")) or key.endswith(COUNT_ENDS):
        return None if value >= 0 else f"{value!r} is negative"
    return None


def check_summary(data: Any, path: Path) -> dict[str, Any]:
    """A ``summary.json`` of this ctxbench's schema, with identity strings and plausible metrics."""
    if not isinstance(data, dict):
        raise InputError(path, "$", f"a JSON {type(data).__name__}, not a cell summary")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(path, "$.schema_version", f"{version!r}; this ctxbench reads {SCHEMA_VERSION!r}")
    cell = data.get("cell")
    if not isinstance(cell, dict):
        raise InputError(path, "$.cell", "missing or not an object")
    for key in ("transcript", "strategy", "model", "config_hash"):
        if not isinstance(cell.get(key), str) or not cell[key]:
            raise InputError(path, f"$.cell.{key}", f"{cell.get(key)!r} is not a non-empty string")
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        raise InputError(path, "$.metrics", "missing or not an object")
    for key, value in metrics.items():
        problem = _metric_problem(str(key), value)
        if problem:
            raise InputError(path, f"$.metrics.{key}", problem)
    return data


def read_summary(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    return check_summary(read_json(path, "cell summary"), path)


# --- the manifest: a cell is complete when every file it lists is there, whole -----------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cell_files(folder: Path) -> list[Path]:
    """Every file of a cell folder, sorted, relative (the manifest itself left out)."""
    out = []
    for dirpath, _, names in os.walk(folder):
        for name in names:
            rel = (Path(dirpath) / name).relative_to(folder)
            if rel != Path(MANIFEST):
                out.append(rel)
    return sorted(out)


def manifest_of(folder: Path, written: Mapping[str, bytes] | None = None) -> dict[str, Any]:
    """Every file of ``folder`` with its size and sha256; those in ``written`` (by name, as the
    manifest names them: the bytes just written there) hashed from memory, not read back."""
    files = {}
    for rel in cell_files(folder):
        data = written.get(str(rel)) if written is not None else None
        if data is not None:
            files[str(rel)] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        else:
            files[str(rel)] = {"bytes": (folder / rel).stat().st_size, "sha256": _sha256(folder / rel)}
    return {"schema": MANIFEST_SCHEMA, "files": files}


def verify_cell(folder: str | Path, records: bool = True) -> dict[str, Any]:
    """The cell's summary if the cell is complete and unaltered; else an ``InputError`` saying what is wrong.

    ``records=False``: the manifest, every file's size and sha256 and the summary are checked, but the
    record files are not parsed (a caller that reads only the summary; whoever reads the records later
    schema-checks them through ``read_records``)."""
    folder = Path(folder)
    manifest_path = folder / MANIFEST
    if not manifest_path.exists():
        raise InputError(folder, None, f"incomplete cell: no {MANIFEST} (written last when a cell is published)")
    manifest = read_json(manifest_path, "cell manifest")
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA or not isinstance(files, dict):
        raise InputError(manifest_path, "$", f"not a ctxbench manifest ({MANIFEST_SCHEMA})")
    for name, entry in files.items():
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts or not isinstance(entry, dict):
            raise InputError(manifest_path, f"$.files.{name}", "not a file of this cell")
        path = folder / rel
        if not path.is_file():
            raise InputError(path, None, f"missing (listed in {MANIFEST})")
        if path.stat().st_size != entry.get("bytes") or _sha256(path) != entry.get("sha256"):
            raise InputError(
                path, None, f"changed since the cell was published (size or sha256 differs from {MANIFEST})"
            )
    if SUMMARY not in files:
        raise InputError(manifest_path, "$.files", f"{SUMMARY} not listed")
    summary = read_summary(folder / SUMMARY)
    for name, kind in CELL_FILES.items():
        if records and name in files:
            read_records(folder / name, kind)
    return summary


# --- cells.json: the cells a job produced, relative to the job folder --------------------------------


def read_cells_list(path: str | Path) -> list[Path]:
    """The cell folders a job's ``cells.json`` lists, resolved against its folder (so a copied or moved
    results folder points at its own cells; absolute entries from older ctxbench are kept as they are)."""
    path = Path(path)
    data = read_json(path, "list of cell folders")
    if not isinstance(data, list) or not all(isinstance(c, str) for c in data):
        raise InputError(path, "$", "not a list of cell folders")
    return [Path(c) if Path(c).is_absolute() else path.parent / c for c in data]


# --- baselines -----------------------------------------------------------------------------------------


def check_baseline(data: Any, path: Path, schema: str) -> dict[str, Any]:
    """A baseline ``ctxbench baseline`` could have written: entries with finite metrics in range."""
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise InputError(path, "$.schema", f"not a ctxbench baseline (expected schema {schema!r})")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise InputError(path, "$.entries", "missing or not a list")
    for i, entry in enumerate(entries):
        where = f"$.entries[{i}]"
        if not isinstance(entry, dict) or not {"strategy", "model", "metrics"} <= entry.keys():
            raise InputError(path, where, "needs strategy, model and metrics")
        for key in ("strategy", "model"):
            if not isinstance(entry[key], str):
                raise InputError(path, f"{where}.{key}", f"{entry[key]!r} is not a string")
        if not isinstance(entry.get("variant", ""), str):
            raise InputError(path, f"{where}.variant", f"{entry['variant']!r} is not a string")
        metrics = entry["metrics"]
        if not isinstance(metrics, dict):
            raise InputError(path, f"{where}.metrics", f"a JSON {type(metrics).__name__}, not an object")
        for key, value in metrics.items():
            problem = "null" if value is None else _metric_problem(str(key), value)
            if problem or isinstance(value, bool | dict | list):
                raise InputError(path, f"{where}.metrics.{key}", problem or f"{value!r} is not a number")
        per = entry.get("per_transcript", {})
        if not isinstance(per, dict):
            raise InputError(path, f"{where}.per_transcript", "not an object")
        for transcript, values in per.items():
            if not isinstance(values, dict):
                raise InputError(path, f"{where}.per_transcript.{transcript}", "not an object")
            for key, value in values.items():
                if not _is(value, _NUM):
                    raise InputError(path, f"{where}.per_transcript.{transcript}.{key}", f"{value!r} is not a number")
    return data


def read_baseline(path: str | Path, schema: str) -> dict[str, Any]:
    path = Path(path)
    return check_baseline(read_json(path, "baseline"), path, schema)


def first_error(check: Callable[[], Any]) -> str | None:
    """The one-line problem ``check`` raises, or None."""
    try:
        check()
    except InputError as exc:
        return str(exc)
    return None
