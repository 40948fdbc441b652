"""Cells of a sweep that make the same decisions share one replay (issue 24).

A job's float ``strategy.params`` (a threshold sweep's warning and error shares) reach its
strategy as ``ctxbench.thresholds.Tracked`` values when the strategy's class declares it only
compares them (``compares_params_only``: the layered strategies) and nothing else in the cell's
config interpolates them: each comparison's outcome is recorded, any other use marks the cell tainted.
After an untainted cell is published, a record beside the results (``.reuse/<key>/<hash>.json``,
the key naming everything else the cell depends on: config but for those values, data, code,
whether contexts are recorded) says which values of each parameter give every comparison the same
outcome, and where its rows hold level names (``context.status`` states, labels the levels give
a ratio). Another setting whose values meet every condition copies the cell instead of replaying
it: the files byte for byte, its own level names written into those rows, its own token levels in
the contexts' first line, and its own config, hash and overrides in the summary. A cell with no
matching record is replayed (and records itself).

Safe under concurrent workers: records are written atomically after their cell is published; a
copy is checked against the source's manifest before it is published, so a source being replaced
meanwhile means a replay, never a mixed cell. ``CTXBENCH_CELL_REUSE=off`` turns it off.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import shutil
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ctxbench.atomic import write_json_atomic, write_text_atomic
from ctxbench.thresholds import Recording, Tracked, meets, rename

REUSE_ENV = "CTXBENCH_CELL_REUSE"
FOLDER = ".reuse"  # hidden: the results readers skip it
_MARK = "\x00ctxbench-tracked:"  # no config value holds a NUL
_BUSY = ".computing"

log = logging.getLogger(__name__)


def enabled() -> bool:
    return os.environ.get(REUSE_ENV, "").strip().lower() not in ("off", "0", "false", "no")


def _marker(name: str) -> str:
    return f"{_MARK}{name}\x00"


def _walk(value: Any, found: Callable[[str], Any]) -> Any:
    """``value`` with every string passed through ``found``."""
    if isinstance(value, dict):
        return {k: _walk(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, found) for v in value]
    return found(value) if isinstance(value, str) else value


def _declares(target: Any) -> bool:
    """Does the strategy class say it only compares its parameters (``compares_params_only``)?"""
    from hydra.utils import get_class

    try:
        return bool(getattr(get_class(str(target)), "compares_params_only", False))
    except Exception:  # not importable here: the cell's build says why
        return False


def _marker_uses(names: list[str], outside: Any, strategy: Any) -> dict[str, list[int]]:
    """Per parameter: its markers outside the strategy, as whole values in it, inside other text."""
    used = {n: [0, 0, 0] for n in names}

    def look(text: str, where: int) -> str:
        for n in names:
            if _marker(n) in text:
                used[n][where if where == 0 or text == _marker(n) else 2] += 1
        return text

    _walk(outside, lambda t: look(t, 0))
    _walk(strategy, lambda t: look(t, 1))
    return used


@dataclass
class JobSharing:
    """What the cells of one job need to share their replays with other settings'."""

    root: Path  # the results folder holding cells/
    key: str  # everything a cell depends on but the tracked values and its data
    values: dict[str, float]  # the tracked parameters' values in this job
    strategy_config: dict[str, Any]  # the strategy's config with a marker where each tracked value goes

    def for_cell(self, transcript_id: str, data_hash: str) -> CellSharing:
        digest = hashlib.sha256(f"{self.key}\0{data_hash}:{transcript_id}".encode()).hexdigest()[:16]
        return CellSharing(self, self.root / FOLDER / digest)


def plan_job(
    cfg: DictConfig,
    root: Path,
    cell_config: Callable[[DictConfig], dict[str, Any]],
    strategy_config: Callable[[DictConfig], dict[str, Any]],
    code: str,
    record_contexts: bool,
) -> JobSharing | None:
    """None when sharing is off or the strategy has no float parameter only its strategy uses."""
    if not enabled():
        return None
    node = cfg.strategy.get("params")
    if not isinstance(node, DictConfig):
        return None  # no strategy.params: nothing a sweep sets through them
    params = OmegaConf.to_container(node, resolve=True)
    if not isinstance(params, dict):
        return None
    names = sorted(str(k) for k, v in params.items() if isinstance(v, float))
    while names:
        marked = copy.deepcopy(cfg)
        for name in names:
            OmegaConf.update(marked, f"strategy.params.{name}", _marker(name), merge=False)
        try:
            whole = cell_config(marked)
            strategy = strategy_config(marked)
        except Exception:  # a resolver or check that wanted the number: not a parameter to track
            return None
        used = _marker_uses(names, {k: v for k, v in whole.items() if k != "strategy"}, strategy)
        # Tracked only where the value is a whole config value of the strategy, nowhere else.
        keep = [n for n in names if used[n][0] == 0 and used[n][2] == 0 and used[n][1] > 0]
        if keep == names:
            break
        names = keep
    if not names or not _declares(strategy.get("_target_")):
        return None
    depends = {"cell": whole, "dataset": OmegaConf.to_container(cfg.dataset, resolve=True), "code": code}
    key = json.dumps({**depends, "contexts": record_contexts}, sort_keys=True, default=str)
    return JobSharing(
        root=root,
        key=hashlib.sha256(key.encode()).hexdigest(),
        values={n: float(params[n]) for n in names},
        strategy_config=strategy,
    )


@dataclass
class CellSharing:
    job: JobSharing
    folder: Path  # where this transcript's records live

    def recording(self) -> Recording:
        return Recording(values=dict(self.job.values))

    def strategy_config(self, recording: Recording) -> dict[str, Any]:
        """The strategy's config with each tracked value as a ``Tracked`` recording into ``recording``."""
        tracked = {_marker(n): Tracked(n, v, recording) for n, v in self.job.values.items()}
        return _walk(self.job.strategy_config, lambda s: tracked.get(s, s))  # type: ignore[no-any-return]

    def save(self, recording: Recording, names: Mapping[str, Any] | None, cell_path: Path) -> bool:
        """Record a published cell for other settings; False when it cannot be shared."""
        if recording.tainted or names is None:
            if recording.tainted:
                log.debug("not shared: %s", "; ".join(recording.tainted))
            return False
        record = {
            "source": os.path.relpath(cell_path, self.job.root),
            "values": recording.values,
            **recording.conditions(),
            "names": names,
        }
        write_json_atomic(self.folder / f"{cell_path.name}.json", record)
        return True

    def claim(self, cell_name: str, first: bool) -> bool:
        """Mark this process as replaying ``cell_name`` (a record may soon appear here). With
        ``first``, give way (the mark removed, False) to a live process on this host that marked
        another setting's cell of this transcript before it. Only an order: a job leaves such a
        cell for after its other cells, then copies or replays it."""
        host, mark = socket.gethostname(), self.folder / f"{cell_name}{_BUSY}"
        write_text_atomic(mark, f"{host} {os.getpid()}")
        if not first:
            return True
        try:
            mine = (mark.stat().st_mtime_ns, mark.name)
        except OSError:
            return True
        for other in self.folder.glob(f"*{_BUSY}"):
            if other.name == mark.name:
                continue
            try:
                where, pid = other.read_text("utf-8").split()
                if where != host or int(pid) == os.getpid():
                    continue
                os.kill(int(pid), 0)  # alive
                if (other.stat().st_mtime_ns, other.name) < mine:
                    mark.unlink(missing_ok=True)
                    return False
            except (OSError, ValueError):
                continue  # gone, unreadable or dead: no reason to wait
        return True

    def wait_for_others(self, cell_name: str, limit: float = 600.0, poll: float = 0.05) -> float:
        """Before a cell left for later is replayed: while a live process on this host replays
        another setting's cell of this transcript (its mark here), wait (at most ``limit`` seconds),
        since the record it writes may let this cell be copied instead. Returns the seconds waited.
        Nothing to wait for in a process's own marks or a dead one's; a process waiting holds no mark,
        so two never wait for each other."""
        host, started = socket.gethostname(), time.monotonic()
        while time.monotonic() - started < limit:
            busy = False
            for other in self.folder.glob(f"*{_BUSY}"):
                if other.name == f"{cell_name}{_BUSY}":
                    continue
                try:
                    where, pid = other.read_text("utf-8").split()
                    if where == host and int(pid) != os.getpid():
                        os.kill(int(pid), 0)  # alive
                        busy = True
                        break
                except (OSError, ValueError):
                    continue  # gone, unreadable or dead
            if not busy:
                break
            time.sleep(poll)
        return time.monotonic() - started

    def release(self, cell_name: str) -> None:
        (self.folder / f"{cell_name}{_BUSY}").unlink(missing_ok=True)

    def find(self) -> dict[str, Any] | None:
        """A record whose conditions this job's values meet, if any."""
        if not self.folder.is_dir():
            return None
        for path in sorted(self.folder.glob("*.json")):
            try:
                record = json.loads(path.read_text("utf-8"))
            except (OSError, ValueError):
                continue  # unreadable: as if absent
            if isinstance(record, dict) and meets(record, self.job.values):
                return record
        return None


def copy_cell(record: Mapping[str, Any], sharing: CellSharing, work: Path, header: dict[str, Any] | None) -> Any:
    """Copy the cell ``record`` names into ``work`` with this setting's level names and contexts
    header; returns the source's summary, or None when the source is gone, changed or not whole
    (then the cell is replayed)."""
    from ctxbench.replay.contexts import FILE as CONTEXTS_FILE
    from ctxbench.results.reader import MANIFEST, MANIFEST_SCHEMA, SUMMARY
    from ctxbench.results.store import code_fingerprint, with_first_line

    source = sharing.job.root / record["source"]
    try:
        manifest = json.loads((source / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if manifest.get("schema") != MANIFEST_SCHEMA or not isinstance(files, dict) or SUMMARY not in files:
        return None
    summary: Any = None
    for name, entry in files.items():
        try:
            data = (source / name).read_bytes()
        except OSError:
            return None
        if not isinstance(entry, dict) or len(data) != entry.get("bytes") or _sha256(data) != entry.get("sha256"):
            return None  # replaced or altered since the manifest was read
        if name == SUMMARY:
            summary = json.loads(data)
            continue
        if name == CONTEXTS_FILE and header is not None:
            # This setting's token levels in the first line: only the header's gzip member is
            # written anew, the rows' member copied as it is (results/store.py: gzip_lines).
            data = with_first_line(data, json.dumps(header, ensure_ascii=False))
        target = work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if not isinstance(summary, dict) or summary.get("code") != code_fingerprint():
        return None
    values = sharing.job.values
    names = record["names"]
    by_file: dict[str, list[list[Any]]] = {}
    for place in names["places"]:
        by_file.setdefault(place[0], []).append(place)
    for file, places in by_file.items():
        lines = (work / file).read_text("utf-8").split("\n")
        changed = False
        for _, row_index, key, ratio, given in places:
            wanted = rename(names["levels"], ratio, values)
            if wanted == given:
                continue  # the source's row as it is
            row = json.loads(lines[row_index])
            if row.get(key) != given or json.dumps(row, ensure_ascii=False) != lines[row_index]:
                return None  # not the row the record describes: do not rewrite it
            row[key] = wanted
            lines[row_index] = json.dumps(row, ensure_ascii=False)
            changed = True
        if changed:
            write_text_atomic(work / file, "\n".join(lines))
    return summary


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def clear(work: Path) -> None:
    """Empty a workspace a failed copy left files in (the cell is then replayed in it)."""
    for path in work.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
