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
import re
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


Opened = tuple[str | None, Any, int | None]  # (split, IterableDataset or the InputError of that split, rows)
_SHARD = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})$")


def _read_json(path: Path) -> Any:
    """A layout file (``dataset_dict.json``, ``state.json``): an ``InputError`` naming it when unreadable."""
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, None, f"cannot read the dataset's layout file ({one_line(exc)})") from None


def _check_readable(files: list[Path]) -> None:
    """Each parquet footer / Arrow stream header is read before streaming, so a corrupt file is one
    line naming it (not a pyarrow traceback from inside ``datasets``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for f in files:
        try:
            if f.suffix.lower() == ".parquet":
                pq.ParquetFile(f).schema_arrow  # noqa: B018 - reads and checks the footer
            else:
                with pa.memory_map(str(f)) as source:
                    try:
                        pa.ipc.open_stream(source).schema  # noqa: B018 - save_to_disk writes the stream format
                    except pa.ArrowInvalid:
                        source.seek(0)
                        pa.ipc.open_file(source).schema  # noqa: B018
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise InputError(f, None, f"not a readable {f.suffix.lstrip('.')} file ({one_line(exc)})") from None


def _missing_shards(files: list[Path]) -> list[str]:
    """``NAME-00001-of-00004.ext`` shards (the Hub's and save_to_disk's naming) whose siblings are absent."""
    groups: dict[tuple[Path, str, str, int], set[int]] = {}
    for f in files:
        m = _SHARD.match(f.stem)
        if m:
            groups.setdefault((f.parent, m["stem"], f.suffix, int(m["count"])), set()).add(int(m["index"]))
    missing = []
    for (parent, stem, suffix, count), seen in groups.items():
        missing += [str(parent / f"{stem}-{i:05d}-of-{count:05d}{suffix}") for i in range(count) if i not in seen]
    return missing


def _saved_files(folder: Path) -> list[Path]:
    """The .arrow files of one ``save_to_disk`` folder; those ``state.json`` lists must all be there."""
    state_file = folder / "state.json"
    found = sorted(f for f in folder.glob("*.arrow") if not f.name.startswith("."))
    if not state_file.is_file():
        missing = _missing_shards(found)
    else:
        state = _read_json(state_file)
        listed = state.get("_data_files") if isinstance(state, dict) else None
        if not isinstance(listed, list) or not all(
            isinstance(x, dict) and isinstance(x.get("filename"), str) for x in listed
        ):
            raise InputError(state_file, "$._data_files", "not a list of {filename: ...}")
        names = [x["filename"] for x in listed]
        if any(Path(n).name != n or n.startswith(".") for n in names):
            raise InputError(state_file, "$._data_files", "a file name with a folder in it")
        missing = [str(folder / n) for n in names if not (folder / n).is_file()]
        found = [folder / n for n in names if (folder / n).is_file()]
    if missing:
        raise InputError(
            folder, None, f"shard(s) missing: {', '.join(missing[:3])}" + (" ..." if len(missing) > 3 else "")
        )
    if not found:
        raise InputError(folder, None, "no .arrow files")
    return found


def _open_saved_split(folder: Path) -> Any:
    files = _saved_files(folder)
    _check_readable(files)
    return _stream_files(files)


def _split_folder(path: Path, split: Any) -> Path:
    """A split's folder inside the dataset: a split name is one plain path part (no ``/``, ``..``)."""
    if (
        not isinstance(split, str)
        or not split
        or split in (".", "..")
        or "/" in split
        or "\\" in split
        or "\0" in split
    ):
        raise InputError(path / "dataset_dict.json", "$.splits", f"split name {split!r} is not a plain folder name")
    return path / split


def _open_dict(path: Path, dict_file: Path) -> list[Opened]:
    """DatasetDict.save_to_disk: one folder per split; a split that cannot be opened is its own error."""
    data = _read_json(dict_file)
    splits = data.get("splits") if isinstance(data, dict) else None
    if not isinstance(splits, list) or not splits:
        raise InputError(dict_file, "$.splits", "not a non-empty list of split names")
    out: list[Opened] = []
    for split in splits:
        try:
            folder = _split_folder(path, split)
            if not folder.is_dir():
                raise InputError(folder, None, f"split {split!r} listed in dataset_dict.json is missing")
            out.append((split, _open_saved_split(folder), _saved_rows(folder)))
        except InputError as exc:
            out.append((str(split), exc, None))
    return out


def _open_local(spec: DatasetSpec) -> list[Opened]:
    path = spec.path
    assert path is not None
    if not path.exists():
        raise InputError(path, None, "no such file or directory")
    if path.is_file():
        _check_readable([path])
        return [(None, _stream_files([path]), _parquet_rows([path]) if path.suffix == ".parquet" else None)]
    dict_file = path / "dataset_dict.json"
    if dict_file.is_file():
        return _open_dict(path, dict_file)
    if (path / "state.json").is_file():  # Dataset.save_to_disk
        return [(None, _open_saved_split(path), _saved_rows(path))]
    files = sorted(f for f in path.rglob("*") if f.suffix.lower() in DATA_SUFFIXES and not f.name.startswith("."))
    kinds = {f.suffix.lower() for f in files}
    if not files:
        raise InputError(path, None, "no .parquet or .arrow files in this directory")
    if len(kinds) > 1:
        raise InputError(path, None, "mixes .parquet and .arrow files; import them separately")
    missing = _missing_shards(files)
    if missing:
        raise InputError(
            path, None, f"shard(s) missing: {', '.join(missing[:3])}" + (" ..." if len(missing) > 3 else "")
        )
    _check_readable(files)
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


def _splits_of(loaded: Any, split: str | None) -> list[Opened]:
    """``load_dataset`` returns one IterableDataset (split given) or a dict of them."""
    if split is not None:
        return [(split, loaded, _info_rows(loaded, split))]
    return [(name, ds, _info_rows(ds, name)) for name, ds in loaded.items()]


def _info_rows(ds: Any, split: str) -> int | None:
    splits = getattr(getattr(ds, "info", None), "splits", None) or {}
    info = splits.get(split) if hasattr(splits, "get") else None
    n = getattr(info, "num_examples", None)
    return n if isinstance(n, int) and n > 0 else None


def _open_hub(spec: DatasetSpec) -> list[Opened]:
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


def open_splits(spec: DatasetSpec) -> list[Opened]:
    """(split name, IterableDataset, rows if known) for each split to import; in place of the dataset,
    the ``InputError`` of a split that cannot be opened (the other splits are still imported)."""
    _quiet_datasets()
    return _open_hub(spec) if spec.repo else _open_local(spec)
