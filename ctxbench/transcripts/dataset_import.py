"""``ctxbench import`` of datasets: each split streamed row by row into one canonical JSONL file.

Rows come from ``hf_source.open_splits`` and become transcripts in ``dataset_rows``; each transcript is
written as soon as it is built, to a temporary file renamed when the split is complete, so memory
stays flat however large the dataset is and a failed split publishes nothing (docs/importing.md).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ctxbench.atomic import WriteError, write_error
from ctxbench.errors import InputError
from ctxbench.transcripts.dataset_rows import choose_column, row_transcripts
from ctxbench.transcripts.formats import TranscriptWarning
from ctxbench.transcripts.hf_source import one_line, open_splits, parse_spec
from ctxbench.transcripts.model import Transcript

FIDELITY_SAMPLE = 32  # runs with usage kept to print the median replayed/reported ratio (bounded memory)
SHOWN_PROBLEMS = 20  # per dataset; the rest are only counted (a million rows must not print a million lines)


@dataclass
class ImportTotals:
    ok: int = 0
    failed: int = 0
    transcripts: int = 0
    messages: int = 0
    calls_with_usage: int = 0
    warnings: int = 0
    targets: set[Path] = field(default_factory=set)  # output files of this run: two sources never share one


class _Problems:
    """Warnings and skipped rows of one dataset: the first few printed, all counted."""

    def __init__(self) -> None:
        self.count = 0

    def report(self, text: str) -> None:
        self.count += 1
        if self.count <= SHOWN_PROBLEMS:
            print(f"warning: {text}", file=sys.stderr)
        elif self.count == SHOWN_PROBLEMS + 1:
            print("warning: further warnings of this dataset are only counted", file=sys.stderr)


def _progress(total: int | None, desc: str) -> Any:
    from tqdm import tqdm

    # Only on a terminal: CI logs stay free of carriage-return noise.
    return tqdm(total=total, desc=desc, unit="row", file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)


def _json_line(data: dict[str, Any]) -> bytes:
    """One canonical line; orjson is several times faster than json on long transcripts."""
    try:
        return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    except (orjson.JSONEncodeError, TypeError):  # e.g. an integer beyond 64 bits in a metadata column
        return (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")


def _write_split(
    ds: Any,
    total: int | None,
    target: Path,
    column: str,
    fmt: str,
    label: str,
    place: str,
    problems: _Problems,
    strict: bool = False,
) -> tuple[int, int, int, int, Counter[str], list[Transcript]]:
    """Stream one split into ``target`` (published atomically); returns counts and a sample of runs
    with usage (the first ``FIDELITY_SAMPLE``).

    A row that cannot be read is skipped with a warning, or, with ``strict``, fails the whole split.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    n_transcripts = n_messages = n_usage = skipped = 0
    formats: Counter[str] = Counter()
    sample: list[Transcript] = []

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        problems.report(str(message))

    try:
        with os.fdopen(fd, "wb") as handle, warnings.catch_warnings():
            warnings.simplefilter("always", TranscriptWarning)
            warnings.showwarning = show
            with _progress(total, Path(place).name) as bar:
                for index, row in enumerate(ds):
                    bar.update(1)
                    try:
                        transcripts = row_transcripts(row, index, column, fmt, label, place)
                    except Exception as exc:  # noqa: BLE001 - one bad row (or an importer defect) skips only that row
                        if not isinstance(exc, InputError):
                            exc = InputError(f"{place}:row {index}", None, f"internal error ({one_line(exc)})")
                        if strict:
                            raise exc from None
                        skipped += 1
                        problems.report(f"skipped: {exc}")
                        continue
                    for t in transcripts:
                        handle.write(_json_line(t.to_dict()))
                        n_transcripts += 1
                        n_messages += len(t.messages)
                        with_usage = sum(1 for m in t.messages if m.role == "assistant" and "usage" in m.metadata)
                        n_usage += with_usage
                        if with_usage and len(sample) < FIDELITY_SAMPLE:
                            sample.append(t)
                        formats[str(t.source.get("format"))] += 1
            handle.flush()
            os.fsync(handle.fileno())
        if n_transcripts == 0:
            raise InputError(place, None, f"no row could be imported ({skipped} skipped)")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:  # a full disk or a read-only --out: the write's error, not the dataset's
        Path(tmp).unlink(missing_ok=True)
        raise write_error(exc, target) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n_transcripts, n_messages, n_usage, skipped, formats, sample


def _arrow_error(exc: BaseException, place: str) -> InputError:
    return InputError(place, None, f"cannot read the dataset ({one_line(exc)})")


def safe_file_name(name: str) -> str:
    """A dataset's own split or folder name as one file name inside ``--out``: no folder part, no
    leading dot (names come from the dataset's metadata, which may be hostile)."""
    return re.sub(r"[^A-Za-z0-9._@+=-]+", "_", name).lstrip(".")[:200] or "dataset"


def _free_target(out_dir: Path, name: str, prefix: str, totals: ImportTotals) -> tuple[Path, str]:
    """``out_dir/name.jsonl``, or ``name-2.jsonl``... when another source of this run took it (ids follow)."""
    target, k = out_dir / f"{name}.jsonl", 1
    while target in totals.targets:
        k += 1
        target = out_dir / f"{name}-{k}.jsonl"
    totals.targets.add(target)
    return target, prefix if k == 1 else f"{prefix}-{k}"


def import_dataset(
    given: str,
    out_dir: Path,
    fmt: str,
    column: str | None,
    totals: ImportTotals,
    strict: bool = False,
    ratio_note: Callable[[object, Sequence[Transcript], str], str] | None = None,
) -> None:
    """Import one dataset source; prints one ``ok``/``FAILED`` line per split, like the file importer
    (``ratio_note``: the replay's median ratio against the usage of a sample, as ``importer.cli``).

    ``strict``: the first unreadable row fails its split, and the first failed split ends this source.
    """
    try:
        spec = parse_spec(given)
        splits = open_splits(spec)
    except Exception as exc:  # noqa: BLE001 - a corrupt file inside datasets/pyarrow: one line, go on
        totals.failed += 1
        print(f"FAILED  {exc if isinstance(exc, InputError) else _arrow_error(exc, given)}")
        return
    for split, ds, total in splits:
        place = given if split is None or spec.split else f"{given}:{split}"
        if isinstance(ds, InputError):  # a split the metadata lists that cannot be opened
            totals.failed += 1
            print(f"FAILED  {ds}")
            if strict:
                return
            continue
        name = safe_file_name(f"{spec.label}.{split}" if split else spec.label)
        target, id_prefix = _free_target(
            out_dir, name, f"{spec.short_name}:{split}" if split else spec.short_name, totals
        )
        problems = _Problems()
        try:
            features = getattr(ds, "features", None)
            if features is None:  # streaming without declared features: look at the first row
                features = next(iter(ds), {})
            chosen_column = choose_column(features, column, place)
            counts = _write_split(ds, total, target, chosen_column, fmt, id_prefix, place, problems, strict)
        except Exception as exc:  # noqa: BLE001 - pyarrow's and datasets' errors, or a defect: one line, go on
            totals.failed += 1
            totals.warnings += problems.count
            print(f"FAILED  {exc if isinstance(exc, InputError | WriteError) else _arrow_error(exc, place)}")
            if strict:
                return
            continue
        n_transcripts, n_messages, n_usage, skipped, formats, sample = counts
        fidelity = ratio_note(place, sample, f"first {len(sample)} runs with usage") if ratio_note else ""
        totals.ok += 1
        totals.transcripts += n_transcripts
        totals.messages += n_messages
        totals.calls_with_usage += n_usage
        totals.warnings += problems.count
        fmt_text = ",".join(name for name, _ in formats.most_common())
        print(
            f"ok      {place} -> {target}  format={fmt_text} column={chosen_column} transcripts={n_transcripts} "
            f"messages={n_messages} calls_with_usage={n_usage} skipped_rows={skipped} warnings={problems.count}"
            + fidelity
        )
