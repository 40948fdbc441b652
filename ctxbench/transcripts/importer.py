"""``ctxbench import``: any known transcript format -> canonical JSONL, one output file per source.

Python API: :func:`detect_format` and :func:`import_file`. Problems inside a file that lose little
(a bad JSONL line, an image, an orphan tool result) are ``TranscriptWarning``s naming file and place;
a file that cannot be read raises ``InputError`` (one line, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from ctxbench.errors import InputError
from ctxbench.transcripts.canonical import write_transcripts
from ctxbench.transcripts.detect import detect_format, detect_source, load_source
from ctxbench.transcripts.formats import FORMAT_NAMES, PARSERS, ParseContext, TranscriptWarning
from ctxbench.transcripts.hf_source import ImportTotals, import_dataset, is_dataset_source
from ctxbench.transcripts.model import Transcript

# Extensions tried when a directory is expanded; files named explicitly are always tried.
SOURCE_SUFFIXES = {".json", ".jsonl", ".ndjson", ".traj", ".txt", ".log"}

__all__ = ["FORMAT_NAMES", "TranscriptWarning", "cli", "detect_format", "expand_paths", "import_file"]


def import_file(path: str | Path, fmt: str = "auto") -> list[Transcript]:
    """Read one source file into canonical transcripts (format detected from content by default)."""
    path = Path(path)
    if fmt != "auto" and fmt not in PARSERS:
        raise InputError(path, None, f"unknown format {fmt!r} (known: auto, {', '.join(FORMAT_NAMES)})")
    source = load_source(path)
    chosen = detect_source(source) if fmt == "auto" else fmt
    ctx = ParseContext(path=path, fmt=chosen)
    try:
        transcripts = PARSERS[chosen](source, ctx)
    except (AttributeError, KeyError, TypeError, IndexError) as exc:
        # A forced --format that does not fit, or a structure the importer does not expect.
        raise InputError(path, None, f"cannot read as {chosen} ({type(exc).__name__}: {exc})") from None
    ctx.flush()
    return transcripts


def expand_paths(paths: Sequence[str | Path], exclude: Path | None = None) -> list[tuple[Path, Path]]:
    """(file, root) pairs: files as given, directories walked recursively for known suffixes."""
    found: list[tuple[Path, Path]] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if exclude and exclude in f.resolve().parents:
                    continue
                if f.is_file() and f.suffix.lower() in SOURCE_SUFFIXES and not f.name.startswith("."):
                    found.append((f, p))
        elif p.exists():
            found.append((p, p.parent))
        else:
            raise InputError(p, None, "no such file or directory")
    return found


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


def _fidelity_note(path: Path, transcripts: list[Transcript]) -> str:
    """`` median_ratio=R (tokenizer)`` for a file with usage; a warning when R is far from 1."""
    from ctxbench.tokens.provider_fidelity import IMPORT_WARN_RANGE, file_median_ratio

    measured = file_median_ratio(transcripts)
    if measured is None:
        return ""
    ratio, tokenizer = measured
    low, high = IMPORT_WARN_RANGE
    if not low <= ratio <= high:
        print(
            f"warning: {path}: the replayed prompt is {ratio:.2f}x what the provider reported (median over "
            f"calls, {tokenizer}); what the transcript does not hold (system prompt, tool schemas) or "
            "drops is missing: see `ctxbench calibrate --against provider`",
            file=sys.stderr,
        )
    return f" median_ratio={ratio:.3f} ({tokenizer})"


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ctxbench import", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="source files or directories (walked recursively)")
    parser.add_argument("--out", required=True, type=Path, help="directory for the canonical JSONL files")
    parser.add_argument("--format", default="auto", choices=("auto", *FORMAT_NAMES), help="source format")
    parser.add_argument(
        "--column",
        default=None,
        help="datasets only (hf:ORG/NAME[@REV][:SPLIT], .parquet, Arrow dirs; docs/importing.md): the column "
        "holding each row's message list (default: messages, trajectory or history)",
    )
    args = parser.parse_args(argv)
    out_dir: Path = args.out
    started = time.perf_counter()
    files: list[tuple[Path, Path]] = []
    failed = 0
    # Datasets are streamed row by row by hf_source; everything else is a transcript file.
    dataset_sources = [given for given in args.paths if is_dataset_source(given)]
    ds_totals = ImportTotals()
    for given in dataset_sources:
        import_dataset(given, out_dir, args.format, args.column, ds_totals)
    for given in [p for p in args.paths if p not in dataset_sources]:  # a missing path is one failed line
        try:
            files += expand_paths([given], exclude=out_dir.resolve())
        except InputError as exc:
            failed += 1
            print(f"FAILED  {exc}")
    if not files and not dataset_sources:
        print("ctxbench import: no source files found", file=sys.stderr)
        return 1
    taken: set[Path] = set()
    ok, failed = ds_totals.ok, failed + ds_totals.failed
    n_transcripts, n_messages, n_usage = ds_totals.transcripts, ds_totals.messages, ds_totals.calls_with_usage
    for path, root in files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TranscriptWarning)
            try:
                transcripts = import_file(path, args.format)
                fmt = transcripts[0].source.get("format", args.format) if transcripts else args.format
                target = write_transcripts(output_path(path, root, out_dir, taken), transcripts)
            except InputError as exc:
                failed += 1
                print(f"FAILED  {exc}")
                continue
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        messages, with_usage = _summary(transcripts)
        fidelity = _fidelity_note(path, transcripts) if with_usage else ""
        ok += 1
        n_transcripts += len(transcripts)
        n_messages += messages
        n_usage += with_usage
        print(
            f"ok      {path} -> {target}  format={fmt} transcripts={len(transcripts)} messages={messages} "
            f"calls_with_usage={with_usage} warnings={len(caught)}{fidelity}"
        )
    elapsed = time.perf_counter() - started
    print(
        f"total   files={ok} failed={failed} transcripts={n_transcripts} messages={n_messages} "
        f"calls_with_usage={n_usage} seconds={elapsed:.2f}"
    )
    return 0 if ok and not failed else 1
