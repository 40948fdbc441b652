"""The results store: one directory per cell (transcript x strategy x model). A cell is computed
in a private workspace (``.tmp-<cell>-<pid>-*`` beside it) under a per-cell lock and published
with one rename, ``manifest.json`` (every file's size and sha256) written last: a cell is complete
or absent, never half-written nor shared by two runs, and a re-run of the same config skips it (an
interrupted sweep resumes); a cell altered after publishing is recomputed (``results/reader.py``)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import math
import re
import subprocess
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxbench import __version__
from ctxbench.atomic import (
    FolderLock,
    fsync_together,
    json_text,
    new_workspace,
    publish_dir,
    write_bytes_atomic,
    write_json_atomic,
    write_new_file,
)
from ctxbench.errors import InputError
from ctxbench.json_text import compact
from ctxbench.results.reader import MANIFEST, SCHEMA_VERSION, SUMMARY, manifest_of, verify_cell

__all__ = ["MANIFEST", "SCHEMA_VERSION", "SUMMARY", "Cell", "config_hash", "iter_summaries", "seal"]


# One encoder for every row of a cell's JSONL files (``ctxbench.json_text``: a C encoder kept, not
# built per row). The same text as ``json.dumps(row, ensure_ascii=False)``; rows are trees.
_ROW = compact
# The summary's text, as ``write_json_atomic`` writes it; refusing NaN and infinities, so a
# summary without them is written as it is, without walking its metrics first.
_SUMMARY = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False).encode


def jsonl_text(rows: Iterable[Any]) -> str:
    """Rows as JSON lines: the text ``write_jsonl_atomic`` writes."""
    return "".join([_ROW(row) + "\n" for row in rows])


def _zlib_member(data: bytes | memoryview) -> bytes:
    return gzip.compress(data, compresslevel=1, mtime=0)


try:  # ISA-L's deflate (python-isal): on the bundled contexts 4x faster than zlib's level 1, and smaller
    from isal import isal_zlib

    def _isal_member(data: bytes | memoryview) -> bytes:
        # Level 2 of ISA-L's 0-3: 13 ms and 3.60x for the 8 bundled contexts (zlib level 1: 49 ms, 3.45x).
        return isal_zlib.compress(data, 2, wbits=31)  # a gzip header, mtime 0

    _member = _isal_member
except ImportError:  # the same format from zlib: every reader reads either
    _member = _zlib_member


def gzip_member(data: bytes | memoryview) -> bytes:
    """``data`` as one gzip member, mtime 0: the same bytes make the same member (on one machine:
    ISA-L and zlib write different bytes of the same data, so compare contexts decompressed)."""
    return _member(data)


def gzip_lines(text: str | bytes) -> bytes:
    """A ``.gz`` file of lines (a text, or its UTF-8): its first line (a contexts file's header,
    which names the setting's token levels) a gzip member of its own, the rest a second. gzip
    readers (``gzip.decompress``, ``gzip.open``) read the members as one text; a copied cell
    rewrites only the first member (``with_first_line``)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    cut = data.find(b"\n") + 1 or len(data)
    view = memoryview(data)  # the members compressed from it, not from copies of its parts
    return gzip_member(view[:cut]) + gzip_member(view[cut:])


def with_first_line(data: bytes, line: str) -> bytes:
    """``gzip_lines`` of the text ``data`` holds with its first line replaced by ``line`` (no line
    break): only the first member is decompressed and written anew, the rest kept byte for byte.
    A file in one member (written by older code) is decompressed and written anew whole."""
    unpack = zlib.decompressobj(wbits=31)  # one gzip member; what follows it is left in unused_data
    head = unpack.decompress(data)
    rest = unpack.unused_data
    if unpack.eof and head.endswith(b"\n") and head.count(b"\n") == 1 and rest[:2] == b"\x1f\x8b":
        return gzip_member((line + "\n").encode("utf-8")) + rest
    text = gzip.decompress(data).decode("utf-8")
    return gzip_lines(line + "\n" + text.partition("\n")[2])


def summary_text(summary: dict[str, Any]) -> str:
    """``summary`` as ``summary.json``'s text, its metrics' NaN and infinities as null (``_finite``)."""
    try:
        return _SUMMARY(summary) + "\n"
    except ValueError:  # a NaN or an infinity somewhere: the metrics' become null, as the reader needs
        fixed = {**summary, "metrics": _finite(summary.get("metrics"))}
        return json.dumps(fixed, indent=2, ensure_ascii=False) + "\n"


def _finite(value: Any) -> Any:
    """NaN and infinities as null: the reader refuses them (a NaN is how a broken metric looks)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def seal(folder: Path) -> Path:
    """Write the cell's manifest (every file's size and sha256): the last write of a cell."""
    return write_json_atomic(folder / MANIFEST, manifest_of(folder))


def config_hash(data: Any) -> str:
    """A stable short hash of JSON-able data (key order does not matter)."""
    text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# What a cell's numbers depend on besides its config and data: ctxbench's replay code. Reports,
# benches, the data generator and the command line do not change a cell, so they are left out.
_NOT_REPLAY = ("report", "bench", "datagen", "results", "configs", "data", "view")
_NOT_REPLAY_FILES = ("cli.py", "ls.py", "pytest_plugin.py")


@functools.cache
def code_fingerprint() -> str:
    """A short hash of ctxbench's replay code (its .py files and prompts): stored in each
    summary, so a cell replayed by different code is recomputed (``reuse_stale`` keeps it)."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package)
        if path.suffix not in (".py", ".txt") or not path.is_file() or "__pycache__" in rel.parts:
            continue
        if rel.parts[0] in _NOT_REPLAY or str(rel) in _NOT_REPLAY_FILES:
            continue
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _slug(text: str) -> str:
    """A folder name from an id: no path separator, never hidden (a leading dot), never ``..``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_.")[:80] or "x"


@functools.cache
def git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@dataclass(frozen=True)
class Cell:
    """Where one transcript x strategy x model result lives."""

    root: Path
    transcript: str
    strategy: str
    model: str
    config_hash: str

    @property
    def path(self) -> Path:
        return (
            self.root
            / "cells"
            / _slug(self.strategy)
            / _slug(self.model)
            / f"{_slug(self.transcript)}-{self.config_hash}"
        )

    def is_complete(self) -> bool:
        return self.stored() is not None

    def stored(self) -> dict[str, Any] | None:
        """The cell's summary if the cell is complete (for this config), else None."""
        return self.check()[0]

    def check(self) -> tuple[dict[str, Any] | None, str | None]:
        """(summary, None) for a complete cell of this config; (None, why) for a folder that is not
        one (files missing or altered, an old schema); (None, None) when there is no folder."""
        if not self.path.exists():
            return None, None
        try:
            data = verify_cell(self.path)
        except InputError as exc:
            return None, str(exc)
        if data["cell"].get("config_hash") != self.config_hash:
            return None, f"{self.path / SUMMARY}: written for another config"
        return data, None

    def lock(self) -> FolderLock:
        """The cell's lock: hold it from checking ``is_complete`` until the cell is published."""
        return FolderLock(self.path)

    def workspace(self) -> Path:
        """A fresh private folder to compute the cell in (call with the lock held)."""
        return new_workspace(self.path)

    def write(
        self,
        *,
        calls: list[dict[str, Any]],
        events: list[dict[str, Any]],
        metrics: dict[str, Any],
        info: dict[str, Any],
        extra_files: dict[str, list[dict[str, Any]] | str | bytes] | None = None,
        workspace: Path | None = None,
        config: dict[str, Any] | None = None,
    ) -> Path:
        """Write per-call records and events first, then the summary (the completion mark).

        With ``workspace`` (from :meth:`workspace`, lock held), the files go there, beside what the
        replay wrote into it, and the folder then becomes the cell in one rename."""
        files = {"calls.jsonl": jsonl_text(calls).encode("utf-8"), "events.jsonl": jsonl_text(events).encode("utf-8")}
        for name, rows in (extra_files or {}).items():
            # A text or its UTF-8: the rows already encoded.
            text = rows if isinstance(rows, str | bytes) else jsonl_text(rows)
            if name.endswith(".gz"):  # mtime 0: the same rows make the same bytes
                files[name] = gzip_lines(text)
            else:
                files[name] = text if isinstance(text, bytes) else text.encode("utf-8")
        if workspace is None:  # in place: each file replaced atomically
            for name, data in files.items():
                write_bytes_atomic(self.path / name, data)
            return self.finish(self.path, metrics=metrics, info=info, config=config, publish=False)
        return self.finish(workspace, metrics=metrics, info=info, config=config, publish=True, written=files)

    def finish(
        self,
        folder: Path,
        *,
        metrics: dict[str, Any],
        info: dict[str, Any],
        config: Any,
        publish: bool,
        written: dict[str, bytes] | None = None,
    ) -> Path:
        """Write the summary and the manifest into ``folder``, whose other files are written (by
        :meth:`write`, or copied from a cell of the same results: ``ctxbench.cell_reuse``), and
        with ``publish`` make the workspace ``folder`` the cell in one rename. ``written`` (with
        ``publish``): files by name still to be written into the workspace."""
        summary = {
            "schema_version": SCHEMA_VERSION,
            "ctxbench_version": __version__,
            "git_revision": git_revision(),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "cell": {
                "transcript": self.transcript,
                "strategy": self.strategy,
                "model": self.model,
                "config_hash": self.config_hash,
                **info,
            },
            "metrics": metrics,  # NaN and infinities as null (summary_text)
            "config": config,  # the job's resolved config (strategy, model, estimator, llm, judge, dataset...)
            "code": code_fingerprint(),
        }
        text = summary_text(summary).encode("utf-8")
        if not publish:  # in place: each file replaced atomically, the manifest last
            write_bytes_atomic(folder / SUMMARY, text)
            seal(folder)
            return self.path
        _publish(folder, self.path, {**(written or {}), SUMMARY: text})
        return self.path


def _publish(work: Path, final: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` into the private workspace ``work`` and its manifest, which covers them
    (hashed from memory) and what the replay wrote there; make them all durable together; then
    make ``work`` the cell ``final`` in one rename. Nobody reads a workspace, so its files need
    no rename of their own: a reader (or a run after a kill -9) sees the whole cell or none."""
    for name, data in files.items():
        write_new_file(work / name, data)
    manifest = manifest_of(work, files)
    write_new_file(work / MANIFEST, json_text(manifest).encode("utf-8"))  # as ``seal`` writes it
    folders = {work / up for name in manifest["files"] for up in Path(name).parents}  # their entries
    fsync_together([*(work / name for name in manifest["files"]), work / MANIFEST, *sorted(folders)])
    publish_dir(work, final)


def iter_summaries(*roots: str | Path, records: bool = True) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every published cell under the given result folders (runs, sweeps, roots), verified: a cell
    with a file missing or altered, or of another schema, is an ``InputError`` naming the file
    (``records=False``: the record files are not parsed, see ``verify_cell``)."""
    seen: set[Path] = set()
    for root in roots:
        root = Path(root)
        if root.name in (SUMMARY, MANIFEST):
            folders = [root.parent]
        else:
            marks = [*root.rglob(SUMMARY), *root.rglob(MANIFEST)]
            folders = sorted({m.parent for m in marks if not _hidden(m.parent, root)})
        for folder in folders:
            resolved = folder.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            yield folder, verify_cell(folder, records)


def _hidden(folder: Path, root: Path) -> bool:
    """A workspace not yet published (.tmp-*), or one a killed run left."""
    return any(part.startswith(".") for part in folder.relative_to(root).parts)
