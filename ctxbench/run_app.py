"""``ctxbench run``: the Hydra app. One job replays every transcript of the dataset through
one strategy on one model, cell by cell; a cell already complete is skipped."""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from ctxbench.errors import CtxbenchError, InputError

if TYPE_CHECKING:
    from ctxbench.transcripts.model import Transcript

# Only Hydra is imported up front: a sweep's parent process composes configs, launches the jobs and
# prints the comparison, so the replay machinery (strategies, tokenizers, judges) is imported by
# whichever process runs a job: the parent with the basic launcher, each worker with joblib.

log = logging.getLogger("ctxbench")
CONFIG_DIR = Path(__file__).resolve().parent / "configs"
CELLS_FILE = "cells.json"


def load_dataset(cfg: DictConfig) -> list[tuple[Transcript, str]]:
    """The dataset's transcripts, each with a hash of the file it came from."""
    from ctxbench.data import resolve_data_path
    from ctxbench.transcripts.canonical import find_canonical_files, read_transcripts
    from ctxbench.transcripts.formats._common import dedupe_ids

    paths = [resolve_data_path(p, hydra.utils.get_original_cwd()) for p in cfg.dataset.paths]
    files = find_canonical_files(paths)
    if not files:
        raise InputError(", ".join(map(str, paths)), None, "no canonical .jsonl transcripts found")
    include = set(cfg.dataset.get("include") or ())
    out: list[tuple[Transcript, str]] = []
    ids: set[str] = set()  # a repeated id gets a stable suffix and a warning instead of sharing a cell
    for file in files:
        file_hash = hashlib.sha256(file.read_bytes()).hexdigest()[:16]
        for transcript in dedupe_ids(list(read_transcripts(file)), ids, str(file)):
            if include and transcript.id not in include:
                continue
            if not transcript.call_indices:
                log.warning("%s: transcript %s has no assistant message; skipped", file, transcript.id)
                continue
            out.append((transcript, file_hash))
    limit = cfg.dataset.get("limit")
    return out[:limit] if limit else out


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


def compaction_cost(summariser: Any, summary: dict[str, Any]) -> dict[str, Any]:
    """Summariser calls and their cost beside the agent's cost (the JetBrains cost split); the
    cell's cost with prompt caching (``cost_usd``), without (``cost_usd_uncached``), and the
    cost saving against the full history under the same caching, on the calls the strategy
    got through (``cost_savings_vs_none``)."""
    usage = list(getattr(summariser, "usage", None) or [])
    cost = round(sum(u.get("cost_usd") or 0.0 for u in usage), 6)
    agent = summary["agent_cost_usd"]
    out = {
        "compaction_calls": len(usage),
        "compaction_cost_usd": cost,
        "cost_usd": round(agent + cost, 6),
        "cost_usd_uncached": round(summary.get("agent_cost_usd_uncached", agent) + cost, 6),
        "total_cost_usd": round(agent + cost, 6),
    }
    full = summary.get("full_history_cost_usd_served")
    if full:
        out["cost_savings_vs_none"] = round(1 - (agent + cost) / full, 6)
    return out


def run_job(cfg: DictConfig) -> list[dict[str, Any]]:
    """Replay the dataset through the configured strategy; return the cells' summaries."""
    from tqdm import tqdm

    from ctxbench.build import (
        build_estimator,
        build_model,
        build_probe_observer,
        build_strategy,
        build_summariser,
        judge_usage,
        strategy_name,
    )
    from ctxbench.judges.agreement import agreement_metrics
    from ctxbench.probes.boilerplate import find_boilerplate
    from ctxbench.probes.metrics import retention_metrics
    from ctxbench.replay.engine import replay
    from ctxbench.results.store import Cell, config_hash
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer

    output_dir = Path(HydraConfig.get().runtime.output_dir)
    root = Path(cfg.output.root)
    if not root.is_absolute():
        root = Path(hydra.utils.get_original_cwd()) / root
    root = root / cfg.output.name
    model = build_model(cfg)
    counter = TokenCounter(get_tokenizer(model.tokenizer))
    name = strategy_name(cfg)
    overrides = list(HydraConfig.get().overrides.task)
    dataset = load_dataset(cfg)
    # Text recurring across runs of one framework is its boilerplate, not what a user wrote.
    boilerplate = find_boilerplate(t for t, _ in dataset if not t.probes)
    summaries: list[dict[str, Any]] = []
    cells: list[str] = []
    bar = tqdm(dataset, desc=f"{name} on {model.name}", unit="transcript", disable=not cfg.progress, leave=False)
    for transcript, data_hash in bar:
        cell_cfg = cell_config(cfg, f"{data_hash}:{transcript.id}")
        cell = Cell(root, transcript.id, name, model.name, config_hash(cell_cfg))
        cells.append(str(cell.path))
        if cell.is_complete():
            log.info("skip %s (complete)", cell.path.relative_to(root))
            summaries.append(json.loads((cell.path / "summary.json").read_text("utf-8")))
            continue
        strategy, estimator = build_strategy(cfg), build_estimator(cfg)
        observer = build_probe_observer(cfg, transcript, cell.path, strategy.snapshots(cell.path), boilerplate)
        summariser = build_summariser(cfg, cell.path)
        calls_bar = tqdm(
            total=len(transcript.call_indices), desc=transcript.id, unit="call", disable=not cfg.progress, leave=False
        )
        with calls_bar:
            result = replay(
                transcript,
                strategy,
                estimator,
                model,
                counter,
                workdir=cell.path,
                summariser=summariser,
                observers=[observer] if observer else [],
                on_progress=calls_bar.update,
            )
        metrics = {**result.summary, **compaction_cost(summariser, result.summary)}
        extra = {}
        if observer is not None:
            answers = {p.id: p.answer for p in observer.probes}
            metrics.update(retention_metrics(observer.rows, answers))
            if any(r.get("others") for r in observer.rows):
                metrics["judge_agreement"] = agreement_metrics(observer.rows)
            usage = judge_usage(observer.judge)
            metrics["judge_calls"] = len(usage)
            metrics["judge_cost_usd"] = round(sum(u.get("cost_usd") or 0.0 for u in usage), 6)
            extra["retention.jsonl"] = observer.rows
        info = {
            "tokenizer": model.tokenizer,
            "estimator": estimator.name,
            "dataset": cfg.dataset.name,
            "data_hash": data_hash,
            "overrides": overrides,
            "context_window": model.context_window,
            "source_format": transcript.source.get("format"),
            "summariser": getattr(summariser, "name", None),
            "judge": observer.judge.name if observer else None,
        }
        cell.write(calls=result.calls, events=result.events, metrics=metrics, info=info, extra_files=extra)
        summaries.append(json.loads((cell.path / "summary.json").read_text("utf-8")))
    (output_dir / CELLS_FILE).write_text(json.dumps(cells, indent=1), encoding="utf-8")
    return summaries


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="config")
def hydra_main(cfg: DictConfig) -> None:
    try:
        run_job(cfg)
    except CtxbenchError as exc:
        log.error("%s", exc)
        raise SystemExit(2) from None


def comparison_table(summaries: Sequence[dict[str, Any]], report: Any = None) -> str:
    """Per strategy (and model): tokens sent, peak, savings against `none`, errors, retries,
    retention; with intervals unless ``report.ci`` is false."""
    from ctxbench.report.tables import comparison_frame, format_table

    report = report or {}
    frame = comparison_frame(
        summaries,
        ci=bool(report.get("ci", True)),
        resamples=int(report.get("resamples", 2000)),
        seed=int(report.get("seed", 0)),
    )
    return format_table(frame)


class PrintComparison(Callback):
    """Print the comparison table after a run or a whole sweep."""

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        # HydraConfig is already cleared here; the config passed in still has the run's dir.
        self._print([Path(config.hydra.runtime.output_dir)], report=config.get("report"))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._print(
            sorted(Path(config.hydra.sweep.dir).glob(f"*/{CELLS_FILE}")), glob=False, report=config.get("report")
        )

    def _print(self, places: list[Path], glob: bool = True, report: Any = None) -> None:
        from ctxbench.results.store import iter_summaries

        files = [p / CELLS_FILE for p in places] if glob else places
        cells = [Path(c) for f in files if f.exists() for c in json.loads(f.read_text("utf-8"))]
        summaries = [s for c in cells for _, s in iter_summaries(c / "summary.json") if (c / "summary.json").exists()]
        if summaries:
            print("\n" + comparison_table(summaries, report), flush=True)  # below any progress bar left on the line


def cli(argv: Sequence[str]) -> int:
    sys.argv = ["ctxbench run", *argv]
    hydra_main()
    return 0
