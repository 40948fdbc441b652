"""``ctxbench run``: the Hydra app. One job replays every transcript of the dataset through
one strategy on one model, cell by cell; a cell already complete is skipped."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import textwrap
import time
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ctxbench import config_cache
from ctxbench.atomic import write_text_atomic
from ctxbench.cells import CellJob, reuse_cell, run_cell
from ctxbench.cells import compaction_cost as compaction_cost  # where tests and plugins import it from
from ctxbench.errors import ConfigError, InputError
from ctxbench.progress import show_progress

if TYPE_CHECKING:
    from ctxbench.transcripts.model import Transcript

# Only Hydra is imported up front: a sweep's parent process composes configs, launches the jobs and
# prints the comparison, so the replay machinery (strategies, tokenizers, judges) is imported by
# whichever process runs a job: the parent with the basic launcher, each worker with joblib.

log = logging.getLogger("ctxbench")
# One line per cell (transcript) goes to the job's log file only (configs/hydra/job_logging); the
# console gets one line per job, so a sweep's log stays short (issue 18: under 2 KB for the main job).
cell_log = logging.getLogger("ctxbench.cells")
CONFIG_DIR = Path(__file__).resolve().parent / "configs"
NAME_REFUSED = "ctxbench: output.name refused"  # marks the resolver's error through Hydra's wrapping


def _checked_output_name(name: Any) -> str:
    """``output.name`` as Hydra puts it in its job folder (configs/config.yaml): refused before Hydra
    creates that folder when it would leave ``output.root`` (validation.py says the same, later)."""
    from ctxbench.validation import output_name_problem

    problem = output_name_problem(name)
    if problem:
        raise ValueError(f"{NAME_REFUSED}: {problem}")
    return str(name)


# Each job's composition parses the config files once per process, not once per job: installed here
# for joblib's workers (which import this module to run a job; the parent's scan of Hydra's plugins
# wraps them again in hydra_plugins/ctxbench_searchpath).
config_cache.install()
if not OmegaConf.has_resolver("ctxbench_output_name"):
    OmegaConf.register_new_resolver("ctxbench_output_name", _checked_output_name)
CELLS_FILE = "cells.json"
SKIPPED_FILE = "skipped_dataset_files.json"  # one line per bad dataset file a job skipped


def load_dataset(cfg: DictConfig, skipped: list[str] | None = None) -> list[tuple[Transcript, str]]:
    """The dataset's transcripts, each with a hash of the file it came from. A bad dataset file is
    skipped, one line added to ``skipped`` (``dataset.strict=true`` or ``ctxbench run --strict``: the
    first one stops the run)."""
    from ctxbench.data import resolve_data_path
    from ctxbench.transcripts.canonical import read_dataset
    from ctxbench.transcripts.formats._common import dedupe_ids

    paths = [resolve_data_path(p, hydra.utils.get_original_cwd()) for p in cfg.dataset.paths]
    found = read_dataset(paths, strict=bool(cfg.dataset.get("strict", False)))
    for problem in found.problems:
        log.error("skipped dataset file: %s", problem)
    if not found.files:
        where = ", ".join(map(str, paths))
        raise InputError(where, None, f"no usable canonical .jsonl transcripts ({len(found.problems)} file(s) skipped)")
    include = [str(p) for p in cfg.dataset.get("include") or ()]
    matched: set[str] = set()
    out: list[tuple[Transcript, str]] = []
    ids: set[str] = set()  # a repeated id gets a stable suffix and a warning instead of sharing a cell
    for file in found.files:
        for transcript in dedupe_ids(file.transcripts, ids, str(file.path)):
            if include:
                hits = [p for p in include if fnmatchcase(transcript.id, p)]
                if not hits:
                    continue
                matched.update(hits)
            if not transcript.call_indices:
                log.warning("%s: transcript %s has no assistant message; skipped", file.path, transcript.id)
                continue
            out.append((transcript, file.hash))
    _check_include(include, matched, [t.id for f in found.files for t in f.transcripts])
    limit = cfg.dataset.get("limit")
    if skipped is not None:
        skipped.extend(found.problems)
    return out[:limit] if limit else out


def _check_include(include: list[str], matched: set[str], ids: list[str]) -> None:
    """An include entry (a transcript id or a glob pattern) that selects nothing is a typo: warn, and
    stop with the ids' shape when no entry selected anything (a run of 0 cells says nothing)."""
    unmatched = [p for p in include if p not in matched]
    if include and not matched:
        shown = ", ".join(ids[:3]) if ids else "(none)"
        raise ConfigError(
            f"dataset.include {include} matches none of the {len(ids)} transcripts (ids look like: {shown}; "
            "an entry is a transcript id or a glob pattern such as 'output#*')"
        )
    for pattern in unmatched:
        log.warning("dataset.include: %r matches no transcript", pattern)


def cell_config(cfg: DictConfig, data_hash: str) -> dict[str, Any]:
    """Everything that changes a cell's numbers; its hash names the cell."""
    from ctxbench.build import estimator_config, to_plain

    return {
        "strategy": to_plain(cfg.strategy),
        "estimator": estimator_config(cfg),
        "model": to_plain(cfg.model),
        "llm": to_plain(cfg.get("llm")),
        "judge": to_plain(cfg.get("judge")),
        "data": data_hash,
    }


def resolved_config(cfg: DictConfig) -> dict[str, Any]:
    """The job's config with interpolations resolved (as stored in each summary)."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
    except Exception:  # an interpolation only Hydra resolves: keep it as written
        return OmegaConf.to_container(cfg, resolve=False)  # type: ignore[return-value]


def cell_line(cell_name: str, metrics: dict[str, Any], seconds: float | None) -> str:
    """One line for a cell in the job's log."""
    took = "reused" if seconds is None else f"{seconds:.1f}s"
    retention = metrics.get("retention")
    kept = "-" if retention is None else f"{retention:.0%}"
    return (
        f"{cell_name}: {metrics.get('calls', 0):,} calls, {metrics.get('tokens_sent_total', 0):,} tokens sent, "
        f"{metrics.get('overflow_errors', 0)} overflow errors, retention {kept}, {took}"
    )


def run_job(cfg: DictConfig) -> list[dict[str, Any]]:
    """Replay the dataset through the configured strategy; return the cells' summaries."""
    from tqdm import tqdm

    from ctxbench import cell_reuse
    from ctxbench.build import build_model, strategy_config, strategy_name, to_plain
    from ctxbench.llm.preflight import check_local_servers
    from ctxbench.probes.boilerplate import find_boilerplate
    from ctxbench.results.store import Cell, code_fingerprint, config_hash
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer
    from ctxbench.validation import validate_run_config, window_warnings

    validate_run_config(cfg, hydra.utils.get_original_cwd())  # before any work: impossible values, typos
    check_local_servers({"llm": to_plain(cfg.get("llm")) or {}, "judge": to_plain(cfg.get("judge")) or {}})
    output_dir = Path(HydraConfig.get().runtime.output_dir)
    root = Path(cfg.output.root)
    if not root.is_absolute():
        root = Path(hydra.utils.get_original_cwd()) / root
    root = root / cfg.output.name
    model = build_model(cfg)
    counter = TokenCounter(get_tokenizer(model.tokenizer))
    name = strategy_name(cfg)
    overrides = list(HydraConfig.get().overrides.task)
    skipped: list[str] = []
    dataset = load_dataset(cfg, skipped)
    # Atomic: two identical sweeps started in the same second share Hydra's job folder.
    write_text_atomic(output_dir / SKIPPED_FILE, json.dumps(skipped, indent=1))
    for warning in window_warnings(
        [t for t, _ in dataset], counter, model.context_window, model.reserved_output_tokens
    ):
        log.warning("%s", warning)
    # Text recurring across runs of one framework is its boilerplate, not what a user wrote.
    boilerplate = find_boilerplate(t for t, _ in dataset if not t.probes)
    progress = show_progress(cfg.get("progress", "auto"))
    started, reused, stale, recomputed, shared = time.perf_counter(), 0, 0, 0, 0
    resolved = resolved_config(cfg)
    record_contexts = bool(cfg.output.get("contexts", True))  # not in a cell's hash: it changes no number
    job = CellJob(cfg, model, counter, boilerplate, overrides, resolved, record_contexts, progress)
    # Cells of other settings that made the same decisions are copied, not replayed (cell_reuse.py).
    sharing = cell_reuse.plan_job(
        cfg, root, lambda c: cell_config(c, ""), strategy_config, code_fingerprint(), record_contexts
    )
    by_index: dict[int, dict[str, Any]] = {}

    def do_cell(index: int, cell: Cell, transcript: Transcript, data_hash: str, blocking: bool) -> bool:
        """Reuse or compute one cell under its lock; False when another run holds it (not blocking)."""
        nonlocal reused, stale, recomputed
        lock = cell.lock()
        if not lock.acquire(blocking=False):
            if not blocking:
                return False
            log.info("waiting for %s (being computed by %s)", cell.path.relative_to(root), lock.holder())
            lock.acquire(blocking=True)
        try:
            summary, problem = cell.check()
            if problem is not None:  # a file deleted, cut or altered since it was published, an old schema
                cell_log.warning("recompute %s: not a complete cell (%s)", cell.path.name, problem)
                recomputed += 1
            if summary is not None and summary.get("code") != code_fingerprint() and not cfg.get("reuse_stale"):
                cell_log.info("recompute %s: ctxbench's replay code changed since it was written", cell.path.name)
                stale += 1
                summary = None
            if summary is not None:
                cell_log.info("skip %s", cell_line(str(cell.path.relative_to(root)), summary["metrics"], None))
                by_index[index] = summary
                reused += 1
                return True
            share = sharing.for_cell(transcript.id, data_hash) if sharing is not None else None
            if share is not None and blocking:  # left for later: another setting's replay may make it a copy
                share.wait_for_others(cell.path.name)
            if share is not None and not share.claim(cell.path.name, first=not blocking):
                return False  # another worker replays this transcript: its cell may be copied later
            work = cell.workspace()  # computed privately, published with one rename
            try:
                by_index[index] = compute_cell(cell, work, transcript, data_hash, share)
            finally:
                shutil.rmtree(work, ignore_errors=True)  # gone already when published
                if share is not None:
                    share.release(cell.path.name)
        finally:
            lock.release()
        return True

    def compute_cell(
        cell: Cell, work: Path, transcript: Transcript, data_hash: str, share: cell_reuse.CellSharing | None
    ) -> dict[str, Any]:
        nonlocal shared
        warn_uncalibrated_cache(model)  # said when a cost is computed (a reused cell said it already)
        cell_started = time.perf_counter()
        copied = reuse_cell(job, cell, work, transcript, share) if share is not None else None
        if copied is not None:
            shared += 1
            cell_log.info("copy %s", cell_line(str(cell.path.relative_to(root)), copied["metrics"], None))
            return copied
        summary = None
        if share is not None:
            try:
                summary = run_cell(job, cell, work, transcript, data_hash, share)
            except Exception as exc:  # e.g. a layer that writes its tracked parameter into a row: no JSON
                cell_log.debug("replaying %s unshared: %s", cell.path.name, exc)
                cell_reuse.clear(work)
        if summary is None:
            summary = run_cell(job, cell, work, transcript, data_hash)
        took = time.perf_counter() - cell_started
        cell_log.info("%s", cell_line(str(cell.path.relative_to(root)), summary["metrics"], took))
        return summary

    # Cells another run is computing are left for the end, then waited for (and reused).
    items: list[tuple[Cell, Transcript, str]] = []
    job_config = cell_config(cfg, "")  # the same for every cell but its data
    for transcript, data_hash in dataset:
        cell_hash = config_hash({**job_config, "data": f"{data_hash}:{transcript.id}"})
        items.append((Cell(root, transcript.id, name, model.name, cell_hash), transcript, data_hash))
    # Relative to the job folder: a results folder copied or moved elsewhere lists its own cells.
    cells = [os.path.relpath(cell.path, output_dir) for cell, _, _ in items]
    bar = tqdm(items, desc=f"{name} on {model.name}", unit="transcript", disable=not progress, leave=False)
    deferred = [(i, c, t, h) for i, (c, t, h) in enumerate(bar) if not do_cell(i, c, t, h, blocking=False)]
    for i, c, t, h in deferred:
        do_cell(i, c, t, h, blocking=True)  # now wait for the run that holds it
    summaries = [by_index[i] for i in sorted(by_index)]
    write_text_atomic(output_dir / CELLS_FILE, json.dumps(cells, indent=1))
    calls = sum(s["metrics"].get("calls", 0) for s in summaries)
    # The job's one console line; Hydra's own launch lines are off (configs/hydra/hydra_logging).
    extra = " ".join(o for o in overrides if not o.startswith(("strategy=", "model=")))
    log.info(
        "%s on %s%s: %d cell%s%s, %s calls, %.1fs",
        name,
        model.name,
        f" [{extra}]" if extra else "",
        len(summaries),
        "" if len(summaries) == 1 else "s",
        (f" ({reused} reused)" if reused else "")
        + (f" ({stale} recomputed: code changed)" if stale else "")
        + (f" ({recomputed} recomputed: incomplete or altered)" if recomputed else "")
        + (f" ({shared} copied from settings making the same decisions)" if shared else ""),
        f"{calls:,}",
        time.perf_counter() - started,
    )
    return summaries


_WARNED_CACHE: set[str] = set()  # a sweep says it once per model, not once per job


def warn_uncalibrated_cache(model: Any) -> None:
    """One warning line when the model's prompt cache was never calibrated against provider usage
    (``model.cache.calibrated`` unset): its cost figures assume the provider serves every hit."""
    rules = getattr(model, "cache", None)
    if rules is None or rules.calibrated or model.name in _WARNED_CACHE:
        return
    _WARNED_CACHE.add(model.name)
    log.warning(
        "model %s: prompt cache never calibrated against provider usage; costs assume every cacheable prefix hits "
        "(docs/cost.md)",
        model.name,
    )


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="config")
def hydra_main(cfg: DictConfig) -> None:
    run_job(cfg)  # errors reach ctxbench.cli, which owns the exit codes (see cli())


def comparison_table(summaries: Sequence[dict[str, Any]], report: Any = None) -> str:
    """Per strategy (and model): tokens sent, peak, savings against `none`, errors, retries,
    retention; with intervals unless ``report.ci`` is false."""
    from ctxbench.report.tables import COST_NOTE, comparison_frame, resampled, table_and_notes, terminal_width

    report = report or {}
    frame = comparison_frame(
        summaries,
        ci=bool(report.get("ci", True)),
        resamples=int(report.get("resamples", 2000)),
        seed=int(report.get("seed", 0)),
    )
    narrow, same = hoist_constant_columns(frame)
    notes = table_and_notes(frame)[1]
    width = terminal_width(bool(report.get("wide", False)), report.get("width"))
    table = table_and_notes(narrow, width, resampled(frame))[0].splitlines()
    lines = [f"in every row: {same}"] if same else []
    if notes:  # format_table's notes, in a line or two: a CI log stays short (docs/results.md says more)
        intervals = any(n.startswith("[low, high]") for n in notes)
        lines += legend([p for p in LEGEND if intervals or not p.startswith("[low, high]")], width or 120)
    lines += [n for n in notes if n.startswith(COST_NOTE)]  # what the cost columns can be compared by
    if width:  # the lines under the table fit the terminal too
        lines = [wrapped for line in lines for wrapped in textwrap.wrap(line, width, subsequent_indent="  ")]
    return "\n".join(table + lines)


LEGEND = (
    "% in points",
    "[low, high]: 95% bootstrap interval over transcripts",
    "(ref): full history",
    "peak includes rejected prompts",
    "see docs/results.md",
)


def legend(parts: Sequence[str], width: int = 120) -> list[str]:
    """The legend's parts joined by "; " into as few lines as fit ``width``."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += "; " + part
        else:
            lines.append(part)
    return lines


def hoist_constant_columns(frame: Any) -> tuple[Any, str]:
    """``ctxbench.report.tables.hoist_constant_columns`` (imported when used: pandas is slow to load)."""
    from ctxbench.report.tables import hoist_constant_columns as hoist

    return hoist(frame)


class PrintComparison(Callback):
    """Print the comparison table after a run or a whole sweep, then where the results are
    and the command that reports on them."""

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        # HydraConfig is already cleared here; the config passed in still has the run's dir.
        self._print(config, [Path(config.hydra.runtime.output_dir)])

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._print(config, sorted(Path(config.hydra.sweep.dir).glob(f"*/{CELLS_FILE}")), glob=False)

    def _print(self, config: DictConfig, places: list[Path], glob: bool = True) -> None:
        from ctxbench.results.reader import read_cells_list
        from ctxbench.results.store import iter_summaries

        report = config.get("report")
        files = [p / CELLS_FILE for p in places] if glob else places
        cells = [c for f in files if f.exists() for c in read_cells_list(f)]
        # The table reads only summaries: each cell's manifest and digests are checked, its records are
        # not parsed here (a sweep's 160 cells hold 300k of them; the report and viewer check them).
        summaries = [
            s
            for c in cells
            for _, s in iter_summaries(c / "summary.json", records=False)
            if (c / "summary.json").exists()
        ]
        skipped = sorted({line for f in files for line in _read_list(f.parent / SKIPPED_FILE)})
        if skipped:
            RUN_STATE["skipped"] = len(skipped)
            print(f"\n{len(skipped)} dataset file(s) skipped (dataset.strict=true stops at the first):", flush=True)
            for line in skipped:
                print(f"  {line}", flush=True)
        if not summaries:
            return
        print("\n" + comparison_table(summaries, report), flush=True)  # below any progress bar left on the line
        warning = unjudged_warning(summaries)
        if warning:
            print(warning, flush=True)
        results = results_folder(config)
        shown = _shown(results)
        n = len(cells)
        print(
            f"\nResults: {shown}/cells ({n} cell{'' if n == 1 else 's'}; a log line per cell in {shown}/jobs)",
            flush=True,
        )
        print(f"Next: ctxbench report {shown} --out {_shown(results / 'report')}", flush=True)


def unjudged_warning(summaries: Sequence[dict[str, Any]], share: float = 0.5) -> str:
    """One loud line when an LLM judge left most probes of some cells unjudged (its server down, its
    key wrong): their retention is not measured, however the table looks."""
    bad = [
        s for s in summaries if (s["metrics"].get("unjudged_share") or 0) >= share and s["metrics"].get("judge_calls")
    ]
    if not bad:
        return ""
    kinds: dict[str, int] = {}
    for s in bad:
        for role, counts in (s["metrics"].get("llm_failures") or {}).items():
            for kind, n in counts.items():
                kinds[f"{role} {kind}"] = kinds.get(f"{role} {kind}", 0) + int(n)
    worst = max(s["metrics"]["unjudged_share"] for s in bad)
    why = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:3]) or "see events.jsonl"
    strategies = ", ".join(sorted({s["cell"]["strategy"] for s in bad}))
    return (
        f"WARNING: the LLM judge left up to {worst:.0%} of probes unjudged in {len(bad)} cell(s) ({strategies}): "
        f"retention there is not measured (failures: {why})"
    )


def _read_list(path: Path) -> list[str]:
    try:
        return [str(line) for line in json.loads(path.read_text("utf-8"))]
    except (OSError, ValueError, TypeError):
        return []


RUN_STATE: dict[str, int] = {"skipped": 0}  # set by PrintComparison in the process that runs `cli`


def results_folder(config: DictConfig) -> Path:
    """``output.root/output.name``, absolute (relative roots are under the directory ctxbench ran in)."""
    root = Path(config.output.root)
    return (root if root.is_absolute() else Path.cwd() / root) / config.output.name


def _shown(path: Path) -> str:
    """A path as short as it can be said: relative to the current directory when under it."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


QUIET_OVERRIDES = ("progress=false", "hydra.job_logging.root.level=WARNING", "hydra.hydra_logging.root.level=WARNING")


def _name_refusal(exc: BaseException) -> str | None:
    """The output.name problem inside whatever Hydra and OmegaConf wrapped it in, or None."""
    current: BaseException | None = exc
    while current is not None:
        text = str(current)
        if NAME_REFUSED in text:
            return text.split(f"{NAME_REFUSED}: ", 1)[1].splitlines()[0].split("\n")[0]
        current = current.__cause__ or current.__context__
    return None


def _output_place(args: Sequence[str]) -> str:
    """``output.root/output.name`` as the overrides give it (for an error that names no file)."""
    given = dict(
        a.lstrip("+").split("=", 1) for a in args if a.lstrip("+").startswith(("output.root=", "output.name="))
    )
    return f"{given.get('output.root', 'results')}/{given.get('output.name', 'default')} (under it)"


def cli(argv: Sequence[str]) -> int:
    """``ctxbench run [-q] [overrides]``. Exit codes are ctxbench's (see ctxbench.cli): a config
    Hydra cannot compose is a ConfigError (2), like every ctxbench input or config error."""
    from hydra.errors import CompactHydraException

    argv = [a if a != "--strict" else "++dataset.strict=true" for a in argv]  # a bad dataset file stops the run
    args = [a for a in argv if a not in ("-q", "--quiet", "--reuse-stale", "--wide")]
    if any(a in ("-q", "--quiet") for a in argv):  # no bars, warnings and errors only, then the table and results
        args += list(QUIET_OVERRIDES)
    if "--wide" in argv:  # the table in one piece, however wide (else columns that do not fit go below)
        args.append("report.wide=true")
    if "--reuse-stale" in argv:  # keep cells written by other ctxbench code (see results/store.code_fingerprint)
        args.append("reuse_stale=true")
    # Let errors reach ctxbench.cli instead of Hydra printing them and exiting 1 for every kind.
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    sys.argv = ["ctxbench run", *args]
    try:
        hydra_main()
    except CompactHydraException as exc:  # a missing config group option, a bad override, ...
        problem = _name_refusal(exc)
        if problem is not None:
            raise ConfigError(f"invalid config:\n  {problem}") from None
        cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
        text = f"{exc}{cause}".split("Config search path:")[0]
        raise ConfigError(" ".join(text.split())) from None
    except OSError as exc:  # Hydra's own writes (job log, .hydra/) on a full disk name no file: say where
        if exc.filename is None:
            exc.filename = _output_place(args)
        raise
    except Exception as exc:  # output.name refused while Hydra resolved its job folder (configs/config.yaml)
        problem = _name_refusal(exc)
        if problem is None:
            raise
        raise ConfigError(f"invalid config:\n  {problem}") from None
    return 2 if RUN_STATE["skipped"] else 0  # bad input (skipped dataset files); the rest ran and is kept
