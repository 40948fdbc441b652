"""Where dataset rows come from: ``hf:ORG/NAME[@REVISION][:SPLIT]``, ``.parquet`` files, Arrow directories.

``open_splits`` gives one streaming ``IterableDataset`` (``datasets``) per split to import. Hub
datasets are read from the local Hugging Face cache first (a ``huggingface_hub`` snapshot, then the
``datasets`` cache); only when neither has them is the Hub asked, which fails with one line naming
the dataset when it cannot be reached (``HF_HUB_OFFLINE=1`` makes that immediate). Rows become
transcripts in ``dataset_rows``; ``dataset_import`` writes them (docs/importing.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench.errors import InputError

HF_PREFIX = "hf:"
DATA_SUFFIXES = (".parquet", ".arrow")
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


def _stream_files(files: list[Path]) -> Any:
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
        return [(None, _stream_files([path]), _parquet_rows([path]) if path.suffix == ".parquet" else None)]
    dict_file = path / "dataset_dict.json"
    if dict_file.is_file():  # DatasetDict.save_to_disk: one folder per split
        splits = json.loads(dict_file.read_text()).get("splits") or []
        out = []
        for split in splits:
            files = sorted((path / split).glob("*.arrow"))
            if files:
                out.append((split, _stream_files(files), _saved_rows(path / split)))
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
    return [(None, _stream_files(files), rows)]


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

    assert spec.repo is not None, "only Hub specs get here (open_splits sends them to _open_hub)"
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
        raise InputError(spec.given, None, f"cannot load dataset {spec.repo!r}: {one_line(exc)}") from None
    return _splits_of(loaded, spec.split)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def open_splits(spec: DatasetSpec) -> list[tuple[str | None, Any, int | None]]:
    """(split name, IterableDataset, rows if known) for each split to import."""
    _quiet_datasets()
    return _open_hub(spec) if spec.repo else _open_local(spec)
