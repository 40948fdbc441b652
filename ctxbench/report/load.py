"""Gather results from any mix of runs, multiruns and result roots into pandas tables.

A path may be a result root (``results/default``), a cell folder, a ``summary.json``, or a
Hydra run/multirun folder whose jobs wrote ``cells.json`` (the cells a job produced or
reused). Cells are deduplicated by folder, so overlapping paths are harmless. Job folders
also give each cell its full resolved config, which the plots use for threshold lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf
from tqdm import tqdm

from ctxbench.errors import InputError
from ctxbench.report.tables import NOT_VARIANT, cells_frame, comparison_frame
from ctxbench.results.reader import read_cells_list, read_records
from ctxbench.results.store import SUMMARY, iter_summaries

CELLS_FILE = "cells.json"


@dataclass
class ResultSet:
    """Every complete cell found under the given paths, with the tables built from them."""

    summaries: list[dict[str, Any]]
    paths: list[Path]  # each summary's cell folder, same order
    configs: dict[Path, dict[str, Any]] = field(default_factory=dict)  # cell folder -> resolved job config

    @property
    def cells(self) -> pd.DataFrame:
        """One row per cell: identity, flat metrics, its folder and its varying overrides."""
        frame = cells_frame(self.summaries)
        if frame.empty:
            return frame
        frame["cell_dir"] = [str(p) for p in self.paths]
        frame["context_window"] = [s["cell"].get("context_window") for s in self.summaries]
        frame["overrides"] = [variant_overrides(s["cell"].get("overrides")) for s in self.summaries]
        return frame

    @property
    def comparison(self) -> pd.DataFrame:
        return comparison_frame(self.summaries)

    def calls(self, progress: bool = False) -> pd.DataFrame:
        """Every per-call record with its cell's identity (reads each cell's calls.jsonl)."""
        cells = self.cells
        frames = []
        rows = cells.to_dict("records") if not cells.empty else []
        for row in tqdm(rows, desc="reading calls", unit="cell", disable=not progress, leave=False):
            records = read_jsonl(Path(row["cell_dir"]) / "calls.jsonl")
            if not records:
                continue
            frame = pd.DataFrame(records)
            for key in ("transcript", "strategy", "model", "variant", "config_hash"):
                frame.insert(0, key, row[key])
            frames.append(frame)
        if not frames:
            return pd.DataFrame()
        calls = pd.concat(frames, ignore_index=True)
        # Lists and dicts do not go into CSV/Parquet cleanly: flatten them to text.
        if "layers" in calls:
            calls["layers"] = calls["layers"].map(lambda v: ";".join(v) if isinstance(v, list) else v)
        for col in calls.columns:
            if calls[col].map(lambda v: isinstance(v, dict | list)).any():
                calls[col] = calls[col].map(lambda v: json.dumps(v) if isinstance(v, dict | list) else v)
        return calls

    def config_of(self, cell_dir: str | Path) -> dict[str, Any] | None:
        return self.configs.get(Path(cell_dir).resolve())


def variant_overrides(overrides: Iterable[str] | None) -> dict[str, str]:
    """The overrides that make a variant of a strategy, as key -> value text."""
    out: dict[str, str] = {}
    for item in overrides or ():
        if item.lstrip("+~").startswith(NOT_VARIANT) or "=" not in item:
            continue
        key, value = item.split("=", 1)
        out[key.lstrip("+~")] = value
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """A cell's ``calls.jsonl`` (schema-checked; the cell's manifest already said it is whole)."""
    return read_records(path, "call") if path.exists() else []


def _job_config(job_dir: Path) -> dict[str, Any] | None:
    """A Hydra job's resolved config (strategy, model ...), or None if absent or unresolvable."""
    path = job_dir / ".hydra" / "config.yaml"
    if not path.exists():
        return None
    try:
        return OmegaConf.to_container(OmegaConf.load(path), resolve=True)  # type: ignore[return-value]
    except Exception:  # an interpolation that only resolves inside Hydra: keep it unresolved
        try:
            return OmegaConf.to_container(OmegaConf.load(path), resolve=False)  # type: ignore[return-value]
        except Exception:
            return None


def gather(paths: Sequence[str | Path]) -> ResultSet:
    """Collect every complete cell under ``paths`` (see the module doc for what a path may be)."""
    summaries: list[dict[str, Any]] = []
    cell_dirs: list[Path] = []
    seen: set[Path] = set()
    configs: dict[Path, dict[str, Any]] = {}

    def add(cell_dir: Path, summary: dict[str, Any]) -> None:
        key = cell_dir.resolve()
        if key not in seen:
            seen.add(key)
            summaries.append(summary)
            cell_dirs.append(cell_dir)

    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(path, None, "no such file or directory")
        for cell_dir, summary in iter_summaries(path):
            add(cell_dir, summary)
        jobs = [path] if path.name == CELLS_FILE else sorted(path.rglob(CELLS_FILE)) if path.is_dir() else []
        for cells_file in jobs:
            listed = read_cells_list(cells_file)
            config = _job_config(cells_file.parent)
            for cell_dir in listed:
                for found_dir, summary in iter_summaries(cell_dir / SUMMARY) if (cell_dir / SUMMARY).exists() else ():
                    add(found_dir, summary)
                if config is not None:
                    configs[cell_dir.resolve()] = config
    return ResultSet(summaries=summaries, paths=cell_dirs, configs=configs)
