"""Trajectory datasets (``hf:ORG/NAME[@REVISION][:SPLIT]``, ``.parquet`` files, Arrow directories) -> canonical JSONL.

Each dataset row holds one run: a column with its message list (``messages``, ``trajectory``,
``history``, or the one named with ``--column``) and scalar columns (instance id, model, exit
status). The row becomes one document of a shape the file importers know (a chat ``messages`` list,
an OpenHands ``history`` event stream, SWE-agent ``trajectory`` steps) and goes through the same
format detection and parsers as a file. Rows are streamed through ``datasets`` (an ``IterableDataset``)
and written one line at a time, so memory stays flat however large the dataset is.

Hub datasets are read from the local Hugging Face cache first (a ``huggingface_hub`` snapshot, then
the ``datasets`` cache); only when neither has them is the Hub asked, which fails with one line
naming the dataset when it cannot be reached (``HF_HUB_OFFLINE=1`` makes that immediate).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ctxbench.errors import InputError
from ctxbench.transcripts.detect import detect_source
from ctxbench.transcripts.formats import PARSERS, ParseContext, TranscriptWarning
from ctxbench.transcripts.formats._common import Source
from ctxbench.transcripts.model import Transcript

HF_PREFIX = "hf:"
DATA_SUFFIXES = (".parquet", ".arrow")
MESSAGE_COLUMNS = ("messages", "trajectory", "history")
FIDELITY_SAMPLE = 32  # runs with usage kept to print the median replayed/reported ratio (bounded memory)
SHOWN_PROBLEMS = 20  # per dataset; the rest are only counted (a million rows must not print a million lines)
_ROLE_ALIASES = {"ai": "assistant", "gpt": "assistant", "bot": "assistant", "model": "assistant", "human": "user"}
_METADATA_MAX_CHARS = 256  # scalar columns kept as transcript metadata; patches and logs are left out
_TRANSCRIPT_SUFFIXES = {".json", ".jsonl", ".ndjson", ".traj", ".txt", ".log"}
_LAYOUT_FILES = {"dataset_info.json", "state.json", "dataset_dict.json"}


@dataclass
class DatasetSpec:
    """What the user named: a Hub dataset (``repo`` set) or a local file/directory (``path`` set)."""

    given: str
    repo: str | None = None
    revision: str | None = None
    split: str | None = None
    path: Path | None = None

    @property
    def label(self) -> str:
        """Short name used for output files and transcript ids."""
        if self.repo:
            base = self.repo.replace("/", "__") + (f"@{self.revision}" if self.revision else "")
        else:
            assert self.path is not None
            base = self.path.stem if self.path.is_file() else self.path.resolve().name
        return base

    @property
    def short_name(self) -> str:
        """Prefix of transcript ids: the dataset's name without its organisation."""
        return self.repo.split("/")[1] if self.repo else self.label


@dataclass
class ImportTotals:
    ok: int = 0
    failed: int = 0
    transcripts: int = 0
    messages: int = 0
    calls_with_usage: int = 0
    warnings: int = 0
    targets: set[Path] = field(default_factory=set)  # output files of this run: two sources never share one


def is_dataset_source(given: str | Path) -> bool:
    """True for ``hf:...``, a ``.parquet``/``.arrow`` file, or a directory holding a dataset (cheap: no import)."""
    text = str(given)
    if text.startswith(HF_PREFIX):
        return True
    path = Path(text)
    if path.is_file():
        return path.suffix.lower() in DATA_SUFFIXES
    if not path.is_dir():
        return False
    if any((path / name).is_file() for name in ("state.json", "dataset_dict.json")):
        return True  # Dataset.save_to_disk / DatasetDict.save_to_disk
    names = [f for f in path.rglob("*") if f.is_file() and not f.name.startswith(".")]
    has_data = any(f.suffix.lower() in DATA_SUFFIXES for f in names)
    has_transcripts = any(f.suffix.lower() in _TRANSCRIPT_SUFFIXES and f.name not in _LAYOUT_FILES for f in names)
    return has_data and not has_transcripts


def parse_spec(given: str) -> DatasetSpec:
    """``hf:ORG/NAME[@REVISION][:SPLIT]`` or a local path."""
    if not given.startswith(HF_PREFIX):
        return DatasetSpec(given, path=Path(given))
    rest = given[len(HF_PREFIX) :]
    repo_part, _, split = rest.partition(":")
    repo, _, revision = repo_part.partition("@")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise InputError(given, None, "expected hf:ORG/NAME[@REVISION][:SPLIT]")
    return DatasetSpec(given, repo=repo, revision=revision or None, split=split or None)


# --- opening: (split name, IterableDataset, row count or None) ------------------------------------------


def _quiet_datasets() -> None:
    """Our own progress bar is the only one; the libraries' retries and notices go unprinted."""
    import datasets
    import huggingface_hub

    datasets.disable_progress_bars()
    datasets.utils.logging.set_verbosity_error()
    huggingface_hub.utils.logging.set_verbosity_error()
    huggingface_hub.utils.disable_progress_bars()


def _parquet_rows(files: Iterable[Path]) -> int | None:
    import pyarrow.parquet as pq

    try:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    except (OSError, ValueError):
        return None


def _stream_files(files: list[Path], given: str) -> Any:
    import datasets

    builder = "parquet" if files[0].suffix.lower() == ".parquet" else "arrow"
    kwargs = parquet_options() if builder == "parquet" else {}
    return datasets.load_dataset(builder, data_files=[str(f) for f in files], split="train", streaming=True, **kwargs)


def parquet_options() -> dict[str, Any]:
    """Options of the ``parquet`` builder that keep streaming memory flat.

    Measured with scripts/bench_hf_import.py (docs/importing.md): with pyarrow's default
    ``pre_buffer=True`` the import's peak RSS grew with the file (0.93 GB at 0.3 GB, 1.56 GB at 1 GB of
    parquet) while Arrow's own pool stayed near 50 MB; without pre-buffering it is flat (0.52 GB at
    1 GB, 0.70 GB at 2 GB). Batches of 64 rows bound the Python objects made from one batch.
    """
    import pyarrow.dataset as pds

    scan = pds.ParquetFragmentScanOptions(pre_buffer=False, use_buffered_stream=True, buffer_size=1 << 20)
    return {"batch_size": 64, "fragment_scan_options": scan}


def _open_local(spec: DatasetSpec) -> list[tuple[str | None, Any, int | None]]:
    path = spec.path
    assert path is not None
    if not path.exists():
        raise InputError(path, None, "no such file or directory")
    if path.is_file():
        return [(None, _stream_files([path], spec.given), _parquet_rows([path]) if path.suffix == ".parquet" else None)]
    dict_file = path / "dataset_dict.json"
    if dict_file.is_file():  # DatasetDict.save_to_disk: one folder per split
        splits = json.loads(dict_file.read_text()).get("splits") or []
        out = []
        for split in splits:
            files = sorted((path / split).glob("*.arrow"))
            if files:
                out.append((split, _stream_files(files, spec.given), _saved_rows(path / split)))
        if not out:
            raise InputError(path, None, "dataset_dict.json lists no split with .arrow files")
        return out
    files = sorted(f for f in path.rglob("*") if f.suffix.lower() in DATA_SUFFIXES and not f.name.startswith("."))
    kinds = {f.suffix.lower() for f in files}
    if not files:
        raise InputError(path, None, "no .parquet or .arrow files in this directory")
    if len(kinds) > 1:
        raise InputError(path, None, "mixes .parquet and .arrow files; import them separately")
    rows = _parquet_rows(files) if ".parquet" in kinds else _saved_rows(path)
    return [(None, _stream_files(files, spec.given), rows)]


def _saved_rows(folder: Path) -> int | None:
    """Row count recorded by save_to_disk (state.json lists the files, dataset_info.json the splits)."""
    try:
        info = json.loads((folder / "dataset_info.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    splits = info.get("splits") or {}
    counts = [s.get("num_examples") for s in splits.values() if isinstance(s, dict)]
    return counts[0] if len(counts) == 1 and isinstance(counts[0], int) else None


def _hub_snapshot(spec: DatasetSpec) -> Path | None:
    """The dataset's snapshot in the huggingface_hub cache, without touching the network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(spec.repo, repo_type="dataset", revision=spec.revision, local_files_only=True)
    except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
        return None
    return Path(folder)


def _splits_of(loaded: Any, split: str | None) -> list[tuple[str | None, Any, int | None]]:
    """``load_dataset`` returns one IterableDataset (split given) or a dict of them."""
    if split is not None:
        return [(split, loaded, _info_rows(loaded, split))]
    return [(name, ds, _info_rows(ds, name)) for name, ds in loaded.items()]


def _info_rows(ds: Any, split: str) -> int | None:
    splits = getattr(getattr(ds, "info", None), "splits", None) or {}
    info = splits.get(split) if hasattr(splits, "get") else None
    n = getattr(info, "num_examples", None)
    return n if isinstance(n, int) and n > 0 else None


def _open_hub(spec: DatasetSpec) -> list[tuple[str | None, Any, int | None]]:
    import datasets

    snapshot = _hub_snapshot(spec)
    try:
        if snapshot is not None:
            options = parquet_options() if any(snapshot.rglob("*.parquet")) else {}
            loaded = datasets.load_dataset(str(snapshot), split=spec.split, streaming=True, **options)
            return _splits_of(loaded, spec.split)
        try:
            loaded = datasets.load_dataset(
                spec.repo, revision=spec.revision, split=spec.split, streaming=True, **parquet_options()
            )
        except (TypeError, ValueError) as exc:  # not a parquet dataset: its builder takes no parquet options
            if "fragment_scan_options" not in str(exc) and "batch_size" not in str(exc):
                raise
            loaded = datasets.load_dataset(spec.repo, revision=spec.revision, split=spec.split, streaming=True)
    except ConnectionError:
        offline = "HF_HUB_OFFLINE=1" if datasets.config.HF_HUB_OFFLINE else "the Hub is unreachable"
        home = os.environ.get("HF_HOME") or "~/.cache/huggingface"
        raise InputError(
            spec.given,
            None,
            f"dataset {spec.repo!r} is not in the local Hugging Face cache ({home}) "
            f"and {offline}; download it once on a connected machine (datasets.load_dataset or "
            f"`hf download {spec.repo} --repo-type dataset`)",
        ) from None
    except Exception as exc:  # an unknown split, no data files, DatasetNotFoundError: one line naming the dataset
        raise InputError(spec.given, None, f"cannot load dataset {spec.repo!r}: {_one_line(exc)}") from None
    return _splits_of(loaded, spec.split)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def open_splits(spec: DatasetSpec) -> list[tuple[str | None, Any, int | None]]:
    """(split name, IterableDataset, rows if known) for each split to import."""
    _quiet_datasets()
    return _open_hub(spec) if spec.repo else _open_local(spec)


# --- rows -> transcripts -----------------------------------------------------------------------------


def _as_list(value: Any) -> Any:
    """A JSON string column is parsed; a ``Sequence(dict)`` column (dict of lists) is turned into rows."""
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        lengths = {len(v) for v in value.values()}
        if len(lengths) == 1:
            keys = list(value)
            return [dict(zip(keys, items, strict=True)) for items in zip(*value.values(), strict=True)]
    return value


def _is_chat(item: Any) -> bool:
    return isinstance(item, dict) and (isinstance(item.get("role"), str) or isinstance(item.get("from"), str))


def _chat_message(item: dict[str, Any]) -> dict[str, Any]:
    """Chat-message spellings of public datasets in OpenAI form.

    nebius/SWE-agent-trajectories: ``role`` in {system, user, ai}, the text in ``text``, the system
    prompt in ``system_prompt``; ShareGPT: ``from``/``value``. Other keys are kept as they are.
    """
    if "role" in item and item.get("content") is not None and item["role"] not in _ROLE_ALIASES:
        return item  # already OpenAI-shaped: no copy
    msg = dict(item)
    role = msg.get("role") if isinstance(msg.get("role"), str) else msg.pop("from", None)
    role = _ROLE_ALIASES.get(str(role), role)
    msg["role"] = role
    if msg.get("content") is None:
        system_prompt = msg.get("system_prompt") if role == "system" else None
        msg["content"] = system_prompt or msg.get("text") or msg.get("value") or ""
    return msg


def _is_event(item: Any) -> bool:
    return isinstance(item, dict) and ("action" in item or "observation" in item)


def row_document(row: dict[str, Any], column: str) -> dict[str, Any]:
    """One dataset row as a document the file importers understand."""
    items = _as_list(row.get(column))
    if not isinstance(items, list):
        raise ValueError(f"column {column!r} holds {type(items).__name__}, not a list of messages")
    doc = {k: v for k, v in row.items() if k != column and k not in ("messages", "history", "trajectory")}
    model = row.get("model") or row.get("model_name")
    if isinstance(model, str):
        doc["model"] = model
    present = [x for x in items if x is not None]
    if column == "history" or (present and _is_event(present[0])):
        doc["history"] = items  # OpenHands events, or a SWE-agent .traj history
    elif present and all(_is_chat(x) for x in present):
        doc["messages"] = [_chat_message(x) for x in present]
    else:
        doc["trajectory"] = items  # SWE-agent steps (response / observation)
    return doc


def _choose_column(features: Any, wanted: str | None, given: str) -> str:
    names = list(features) if features else []
    if wanted:
        if names and wanted not in names:
            raise InputError(given, None, f"no column {wanted!r} (columns: {', '.join(names)})")
        return wanted
    for name in MESSAGE_COLUMNS:
        if name in names:
            return name
    raise InputError(
        given,
        None,
        f"no message column ({', '.join(MESSAGE_COLUMNS)}); columns: {', '.join(names) or 'none'}; pass --column NAME",
    )


def _scalar_metadata(row: dict[str, Any], column: str) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in row.items():
        if key in (column, *MESSAGE_COLUMNS):
            continue
        if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= _METADATA_MAX_CHARS):
            kept[key] = value
    return kept


def row_transcripts(row: dict[str, Any], index: int, column: str, fmt: str, label: str, place: str) -> list[Transcript]:
    """The transcript(s) of one row; ``InputError`` naming the row when it cannot be read."""
    where = f"{place}:row {index}"
    try:
        doc = row_document(row, column)
    except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
        raise InputError(where, None, f"column {column!r}: {exc}") from None
    source = Source(Path(where), "", "json", doc)
    chosen = detect_source(source) if fmt == "auto" else fmt
    ctx = ParseContext(path=Path(where), fmt=chosen)
    try:
        transcripts = PARSERS[chosen](source, ctx)
    except (AttributeError, KeyError, TypeError, IndexError) as exc:
        raise InputError(where, None, f"cannot read as {chosen} ({type(exc).__name__}: {exc})") from None
    ctx.flush()
    instance = doc.get("instance_id") or doc.get("id") or doc.get("trajectory_id")
    base = f"{label}#{index}" + (f"-{instance}" if isinstance(instance, str | int) and instance != "" else "")
    metadata = _scalar_metadata(row, column)
    for k, t in enumerate(transcripts):
        t.id = base if len(transcripts) == 1 else f"{base}.{k}"
        t.source = {**t.source, "dataset": place, "row": index}
        t.metadata = {**metadata, **t.metadata}
    return transcripts


# --- the CLI branch --------------------------------------------------------------------------------


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
                            exc = InputError(f"{place}:row {index}", None, f"internal error ({_one_line(exc)})")
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
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n_transcripts, n_messages, n_usage, skipped, formats, sample


def _fidelity_note(place: str, sample: list[Transcript]) -> str:
    """`` median_ratio=R (tokenizer, N runs)`` as ``ctxbench import`` prints per file, on the sample."""
    from ctxbench.tokens.provider_fidelity import IMPORT_WARN_RANGE, file_median_ratio

    measured = file_median_ratio(sample) if sample else None
    if measured is None:
        return ""
    ratio, tokenizer = measured
    low, high = IMPORT_WARN_RANGE
    if not low <= ratio <= high:
        print(
            f"warning: {place}: the replayed prompt is {ratio:.2f}x what the provider reported (median over the "
            f"calls of the first {len(sample)} runs with usage, {tokenizer}); what the rows do not hold (system "
            "prompt, tool schemas) is missing: see `ctxbench calibrate --against provider`",
            file=sys.stderr,
        )
    return f" median_ratio={ratio:.3f} ({tokenizer}, first {len(sample)} runs with usage)"


def _arrow_error(exc: BaseException, place: str) -> InputError:
    return InputError(place, None, f"cannot read the dataset ({_one_line(exc)})")


def _free_target(out_dir: Path, name: str, prefix: str, totals: ImportTotals) -> tuple[Path, str]:
    """``out_dir/name.jsonl``, or ``name-2.jsonl``... when another source of this run took it (ids follow)."""
    target, k = out_dir / f"{name}.jsonl", 1
    while target in totals.targets:
        k += 1
        target = out_dir / f"{name}-{k}.jsonl"
    totals.targets.add(target)
    return target, prefix if k == 1 else f"{prefix}-{k}"


def import_dataset(
    given: str, out_dir: Path, fmt: str, column: str | None, totals: ImportTotals, strict: bool = False
) -> None:
    """Import one dataset source; prints one ``ok``/``FAILED`` line per split, like the file importer.

    ``strict``: the first unreadable row fails its split, and the first failed split ends this source.
    """
    try:
        spec = parse_spec(given)
        splits = open_splits(spec)
    except InputError as exc:
        totals.failed += 1
        print(f"FAILED  {exc}")
        return
    for split, ds, total in splits:
        place = given if split is None or spec.split else f"{given}:{split}"
        name = f"{spec.label}.{split}" if split else spec.label
        target, id_prefix = _free_target(
            out_dir, name, f"{spec.short_name}:{split}" if split else spec.short_name, totals
        )
        problems = _Problems()
        try:
            features = getattr(ds, "features", None)
            if features is None:  # streaming without declared features: look at the first row
                features = next(iter(ds), {})
            chosen_column = _choose_column(features, column, place)
            counts = _write_split(ds, total, target, chosen_column, fmt, id_prefix, place, problems, strict)
        except Exception as exc:  # noqa: BLE001 - pyarrow's and datasets' errors, or a defect: one line, go on
            totals.failed += 1
            totals.warnings += problems.count
            print(f"FAILED  {exc if isinstance(exc, InputError) else _arrow_error(exc, place)}")
            if strict:
                return
            continue
        n_transcripts, n_messages, n_usage, skipped, formats, sample = counts
        fidelity = _fidelity_note(place, sample)
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
