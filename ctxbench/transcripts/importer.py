"""``ctxbench import``: any known transcript format -> canonical JSONL, one output file per source.

Python API: :func:`detect_format` and :func:`import_file`. Problems inside a file that lose little
(a bad JSONL line, an image, an orphan tool result, a repaired value) are ``TranscriptWarning``s
naming file and place, counted per file; a file that cannot be used, whatever the cause, is an
``InputError`` (one line, never a traceback) and the batch goes on with the next file.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from ctxbench.cli import describe
from ctxbench.errors import InputError
from ctxbench.transcripts.canonical import transcript_from_data, write_transcripts
from ctxbench.transcripts.dataset_import import ImportTotals, import_dataset
from ctxbench.transcripts.detect import (
    CANONICAL,
    Source,
    detect_format,
    detect_source,
    load_source,
    os_problem,
)
from ctxbench.transcripts.formats import FORMAT_NAMES, PARSERS, ParseContext, TranscriptWarning, install_plugin_parsers
from ctxbench.transcripts.formats._common import dedupe_ids
from ctxbench.transcripts.hf_source import is_dataset_source
from ctxbench.transcripts.model import Transcript

# Extensions tried when a directory is expanded; files named explicitly are always tried.
SOURCE_SUFFIXES = {".json", ".jsonl", ".ndjson", ".traj", ".txt", ".log"}

__all__ = ["FORMAT_NAMES", "TranscriptWarning", "cli", "detect_format", "expand_paths", "import_file"]


def import_file(path: str | Path, fmt: str = "auto") -> list[Transcript]:
    """Read one source file into canonical transcripts (format detected from content by default).

    Any failure is an ``InputError`` naming the file (and the place when known), including a
    file with nothing usable (no message in any transcript).
    """
    path = Path(path)
    if fmt != "auto" and fmt not in PARSERS:
        raise InputError(path, None, f"unknown format {fmt!r} (known: auto, {', '.join(FORMAT_NAMES)})")
    try:
        source = load_source(path)
        chosen = detect_source(source) if fmt == "auto" else fmt
        if chosen == CANONICAL:
            return _canonical(source)
        ctx = ParseContext(path=path, fmt=chosen)
        transcripts = PARSERS[chosen](source, ctx)
        ctx.flush()
    except InputError:
        raise
    except RecursionError:
        raise InputError(path, None, f"cannot read as {fmt}: structure nested too deeply") from None
    except MemoryError:
        raise InputError(path, None, "cannot read: out of memory") from None
    except Exception as exc:  # noqa: BLE001 - a forced --format that does not fit, or a shape no parser expects
        chosen = locals().get("chosen", fmt)
        raise InputError(path, None, f"cannot read as {chosen} ({type(exc).__name__}: {exc})") from None
    if not any(t.messages for t in transcripts):
        raise InputError(path, None, f"nothing usable: read as {chosen}, but no message was found")
    if not _encodable(str(path)):  # a file name that is not UTF-8: ids and paths made from it could not be written
        for t in transcripts:
            t.id = _printable(t.id)
            t.source = {k: _printable(v) if isinstance(v, str) else v for k, v in t.source.items()}
    return transcripts


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(text: str) -> str:
    """A name decoded with surrogate escapes (bytes that are not UTF-8), with U+FFFD for each such byte."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _canonical(source: Source) -> list[Transcript]:
    """An already-canonical file: its lines as they are (probes kept), versions checked."""
    if source.kind == "json":
        one_line = "\n" not in source.text.strip()
        return [transcript_from_data(source.data, source.path, "line 1" if one_line else None)]
    return [transcript_from_data(value, source.path, f"line {n}") for n, value in source.data]


def expand_paths(
    paths: Sequence[str | Path], exclude: Path | None = None
) -> tuple[list[tuple[Path, Path]], list[InputError]]:
    """(file, root) pairs, and one ``InputError`` per path that cannot be used.

    Files are taken as given; directories are walked recursively for known suffixes, following
    symbolic links to directories once (a loop is reported, not followed again). Unreadable
    sub-directories, broken links and special files are reported, never skipped silently.
    """
    found: list[tuple[Path, Path]] = []
    failures: list[InputError] = []
    excluded = os.path.realpath(exclude) if exclude else None
    for p in map(Path, paths):
        try:
            info = os.stat(p)
        except OSError as exc:
            failures.append(InputError(p, None, os_problem(exc, p)))
            continue
        if stat.S_ISDIR(info.st_mode):
            _walk(p, excluded, found, failures)
        else:
            found.append((p, p.parent))  # special files are reported when read
    return found, failures


def _walk(root: Path, excluded: str | None, found: list[tuple[Path, Path]], failures: list[InputError]) -> None:
    visited: set[tuple[int, int]] = set()
    files: list[Path] = []

    def unreadable(exc: OSError) -> None:
        place = Path(exc.filename or root)
        failures.append(InputError(place, None, f"cannot list directory: {os_problem(exc, place)}"))

    for folder, dirs, names in os.walk(root, onerror=unreadable, followlinks=True):
        try:
            here = os.stat(folder)
        except OSError:
            dirs[:] = []
            continue
        if (here.st_dev, here.st_ino) in visited:  # reached again through a link: a loop
            failures.append(InputError(folder, None, "symbolic link loop (leads back to a folder already read)"))
            dirs[:] = []
            continue
        visited.add((here.st_dev, here.st_ino))
        dirs[:] = sorted(d for d in dirs if not (excluded and os.path.realpath(os.path.join(folder, d)) == excluded))
        for name in names:
            if name.startswith(".") or Path(name).suffix.lower() not in SOURCE_SUFFIXES:
                continue
            files.append(Path(folder) / name)
    found.extend((f, root) for f in sorted(files))


def output_path(source: Path, root: Path, out_dir: Path, taken: set[Path]) -> Path:
    """Mirror the source's place under its root, with a ``.jsonl`` suffix; never reuse a name."""
    rel = source.relative_to(root) if source.is_relative_to(root) else Path(source.name)
    target = out_dir / rel.with_suffix(".jsonl")
    if target in taken:
        target = out_dir / rel.parent / f"{rel.name}.jsonl"
    taken.add(target)
    return target


def _summary(transcripts: list[Transcript]) -> tuple[int, int]:
    messages = sum(len(t.messages) for t in transcripts)
    with_usage = sum(1 for t in transcripts for m in t.messages if m.role == "assistant" and "usage" in m.metadata)
    return messages, with_usage


def _import_one(
    path: Path, root: Path, fmt: str, out_dir: Path, taken: set[Path], ids: set[str]
) -> tuple[list[Transcript], Path]:
    """Import and write one file (an id already in ``ids`` gets a stable suffix and a warning);
    every failure is an ``InputError``."""
    transcripts = dedupe_ids(import_file(path, fmt), ids, str(path))
    target = output_path(path, root, out_dir, taken)
    try:
        return transcripts, write_transcripts(target, transcripts)
    except OSError as exc:
        raise InputError(target, None, f"cannot write: {os_problem(exc, target)}") from None


BAD_INPUT = 2  # the CLI's exit-code convention (ctxbench --help): bad usage, config or input

EPILOG = """exit status: 0 every file imported; 2 some file failed (the others are still imported, each
failure is one line "FAILED  FILE:PLACE: what"), or no source file was found: bad input, as for `ctxbench run`.
--strict stops at the first failure. See docs/robustness.md."""


RatioNote = Callable[[object, Sequence[Transcript], str], str]


def cli(argv: list[str], ratio_note: RatioNote | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="ctxbench import",
        description=describe(__doc__),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="+",
        help="source files or directories (walked recursively), or datasets streamed row by row: "
        "hf:ORG/NAME[@REV][:SPLIT], .parquet/.arrow files, save_to_disk or parquet/arrow folders",
    )
    parser.add_argument("--out", required=True, type=Path, help="directory for the canonical JSONL files")
    install_plugin_parsers()  # importers of installed plugins (entry point group ctxbench.importers)
    parser.add_argument("--format", default="auto", choices=("auto", *PARSERS), help="source format")
    parser.add_argument(
        "--column",
        default=None,
        help="datasets only (hf:ORG/NAME[@REV][:SPLIT], .parquet, Arrow dirs; docs/importing.md): the column "
        "holding each row's message list (default: messages, trajectory or history)",
    )
    parser.add_argument("--strict", action="store_true", help="stop at the first file that fails (exit 2)")
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a hostile file name must not end the batch when printed
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    out_dir: Path = args.out
    started = time.perf_counter()
    # Datasets are streamed row by row by hf_source; everything else is a transcript file.
    dataset_sources = [given for given in args.paths if is_dataset_source(given)]
    ds_totals = ImportTotals()
    for given in dataset_sources:
        import_dataset(given, out_dir, args.format, args.column, ds_totals, strict=args.strict, ratio_note=ratio_note)
        if ds_totals.failed and args.strict:
            return BAD_INPUT
    files, failures = expand_paths([p for p in args.paths if p not in dataset_sources], exclude=out_dir)
    for exc in failures:
        print(f"FAILED  {exc}")
    if failures and args.strict:
        return BAD_INPUT
    if not files and not dataset_sources:
        print("ctxbench import: no source files found", file=sys.stderr)
        return BAD_INPUT
    taken: set[Path] = set()
    ids: set[str] = set()  # across files: two runs sharing an id would be merged downstream
    ok, failed = ds_totals.ok, len(failures) + ds_totals.failed
    n_transcripts, n_messages, n_usage = ds_totals.transcripts, ds_totals.messages, ds_totals.calls_with_usage
    n_warnings = ds_totals.warnings
    for path, root in files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TranscriptWarning)
            try:
                transcripts, target = _import_one(path, root, args.format, out_dir, taken, ids)
            except InputError as exc:
                error: InputError | None = exc
            except Exception as exc:  # noqa: BLE001 - a defect in ctxbench must not end the batch either
                error = InputError(path, None, f"internal error ({type(exc).__name__}: {exc})")
            else:
                error = None
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        if error is not None:
            failed += 1
            print(f"FAILED  {error}" + (f"  (warnings={len(caught)})" if caught else ""))
            if args.strict:
                return BAD_INPUT
            continue
        fmt = transcripts[0].source.get("format", args.format) if transcripts else args.format
        messages, with_usage = _summary(transcripts)
        # The replay's median ratio against the usage (``ctxbench import`` passes the calibration's note).
        fidelity = ratio_note(path, transcripts, "") if with_usage and ratio_note else ""
        ok += 1
        n_transcripts += len(transcripts)
        n_messages += messages
        n_usage += with_usage
        n_warnings += len(caught)
        print(
            f"ok      {path} -> {target}  format={fmt} transcripts={len(transcripts)} messages={messages} "
            f"calls_with_usage={with_usage} warnings={len(caught)}{fidelity}"
        )
    elapsed = time.perf_counter() - started
    print(
        f"total   files={ok} failed={failed} transcripts={n_transcripts} messages={n_messages} "
        f"calls_with_usage={n_usage} warnings={n_warnings} seconds={elapsed:.2f}"
    )
    return 0 if ok and not failed else BAD_INPUT
