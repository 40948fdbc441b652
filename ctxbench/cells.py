"""One result cell: a transcript replayed through a job's strategy, judged at its checkpoints
and published (``ctxbench run`` computes each cell with ``run_cell``; ``ctxbench bench`` times
the same function). Only light modules are imported up front: a sweep's parent imports this
module and never runs a cell."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from ctxbench.cell_reuse import CellSharing
    from ctxbench.probes.boilerplate import Boilerplate
    from ctxbench.replay.provider import ModelSpec
    from ctxbench.results.store import Cell
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.transcripts.model import Transcript


@dataclass
class CellJob:
    """What the cells of one job share: its config, model, counter (one tokenizer per job), the
    dataset's boilerplate, the overrides and resolved config stored in each summary."""

    cfg: DictConfig
    model: ModelSpec
    counter: TokenCounter
    boilerplate: Boilerplate | None
    overrides: list[str]
    resolved: dict[str, Any]
    record_contexts: bool = True
    progress: bool = False
    # The strategy's and estimator's configs, resolved once for all the job's cells (build.py).
    strategy_config: dict[str, Any] | None = None
    estimator_config: dict[str, Any] | None = None
    # A strategy built as configured, for the contexts' first line (its token levels) when the cells'
    # own strategies hold tracked parameters (ctxbench.cell_reuse): built once per job.
    levels_strategy: Any = None


def _levels_strategy(job: CellJob) -> Any:
    from ctxbench.build import build_strategy

    if job.levels_strategy is None:
        job.levels_strategy = build_strategy(job.cfg, job.strategy_config)
    return job.levels_strategy


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


def llm_cell_metrics(summariser: Any, observer: Any, result: Any, judge_cfg: dict[str, Any]) -> dict[str, Any]:
    """The cell's cost split (agent, compaction, judge) and its LLM side: calls, cache hits, retries,
    failures by role and kind, degradation (ctxbench.llm.accounting) and judge checks
    (ctxbench.judges.llm). ``cost_usd`` counts every LLM call, the judge's too;
    ``cost_savings_vs_none`` stays the strategy's own."""
    from ctxbench.build import judge_usage
    from ctxbench.judges.llm import judge_control_metrics
    from ctxbench.llm.accounting import llm_metrics

    judge = observer.judge if observer is not None else None
    metrics = {**compaction_cost(summariser, result.summary)}
    metrics.update(
        llm_metrics(
            list(getattr(summariser, "usage", None) or []),
            judge_usage(judge) if judge is not None else [],
            result.events,
        )
    )
    for key in ("cost_usd", "cost_usd_uncached", "total_cost_usd"):
        metrics[key] = round(metrics[key] + metrics["judge_cost_usd"], 6)
    if judge is not None:
        metrics.update(judge_control_metrics(judge, float(judge_cfg.get("max_false_positive_rate", 0.10))))
    return metrics


def run_cell(
    job: CellJob, cell: Cell, work: Path, transcript: Transcript, data_hash: str, sharing: CellSharing | None = None
) -> dict[str, Any]:
    """Compute ``cell`` in its private workspace ``work`` and publish it (``Cell.write``, one
    rename); returns its summary as written. With ``sharing``, the strategy's tracked parameters
    are recorded and the cell offered to the sweep's other settings (``ctxbench.cell_reuse``).
    The cyclic garbage collector waits until the cell is done (``ctxbench.gc_pause``)."""
    from ctxbench.gc_pause import gc_paused

    with gc_paused():
        return _run_cell(job, cell, work, transcript, data_hash, sharing)


def _run_cell(
    job: CellJob, cell: Cell, work: Path, transcript: Transcript, data_hash: str, sharing: CellSharing | None
) -> dict[str, Any]:
    from tqdm import tqdm

    from ctxbench.build import (
        build_estimator,
        build_probe_observer,
        build_strategy,
        build_summariser,
        estimator_config,
        plain_section,
        strategy_config,
    )
    from ctxbench.judges.agreement import agreement_metrics
    from ctxbench.probes.metrics import retention_metrics
    from ctxbench.replay.contexts import FILE as CONTEXTS_FILE
    from ctxbench.replay.contexts import ContextRecorder
    from ctxbench.replay.engine import replay
    from ctxbench.thresholds import resolve_names
    from ctxbench.tokens import count_cache

    cfg, model = job.cfg, job.model
    count_cache.cell_started()  # counts other workers of the sweep made meanwhile
    if job.strategy_config is None or job.estimator_config is None:
        job.strategy_config, job.estimator_config = (
            strategy_config(cfg, job.resolved),
            estimator_config(cfg, job.resolved),
        )
    recording = sharing.recording() if sharing is not None else None
    if sharing is not None and recording is not None:
        strategy_cfg = sharing.strategy_config(recording)  # its tracked values are this cell's own
    else:
        strategy_cfg = job.strategy_config  # plain: built without Hydra's copies (build._instantiated)
    strategy, estimator = build_strategy(cfg, strategy_cfg), build_estimator(cfg, job.estimator_config)
    judge_cfg = plain_section(cfg, job.resolved, "judge") or {}
    observer = build_probe_observer(cfg, transcript, work, strategy.snapshots(work), job.boilerplate, judge_cfg)
    counted = job.counter.for_transcript(transcript)  # the provider counts what this agent sent
    summariser = build_summariser(cfg, work, transcript.id, plain_section(cfg, job.resolved, "llm") or {})
    # The contexts' first line states the setting's token levels: from the strategy as configured.
    levels_of = _levels_strategy(job) if recording is not None else strategy
    recorder = ContextRecorder(transcript, counted, levels_of, model) if job.record_contexts else None
    calls_bar = tqdm(
        total=len(transcript.call_indices), desc=transcript.id, unit="call", disable=not job.progress, leave=False
    )
    with calls_bar:
        result = replay(
            transcript,
            strategy,
            estimator,
            model,
            counted,
            workdir=work,
            summariser=summariser,
            observers=[o for o in (observer, recorder) if o is not None],
            on_progress=calls_bar.update,
        )
    write_files = getattr(strategy, "write_files", None)  # a strategy need not derive from Strategy
    if write_files is not None:
        write_files(work)  # published with the cell (DB-GPT's snapshot store)
    # The level names (context.status states) the tracked levels left open, named for this setting.
    names = (
        resolve_names({"calls.jsonl": result.calls, "events.jsonl": result.events}, recording.values)
        if recording is not None
        else None
    )
    metrics = {**result.summary, **llm_cell_metrics(summariser, observer, result, judge_cfg)}
    extra: dict[str, list[dict[str, Any]] | str | bytes] = {}
    if recorder is not None:
        extra[CONTEXTS_FILE] = recorder.data()  # its rows' lines, encoded as they were recorded
    if observer is not None:
        answers = {p.id: p.answer for p in observer.probes}
        metrics.update(retention_metrics(observer.table(), answers))  # no dict per row
        if observer.has_others():
            metrics["judge_agreement"] = agreement_metrics(observer.rows)
        extra["retention.jsonl"] = observer.rows_text()  # encoded from pieces as they were judged
        controls = getattr(observer.judge, "controls", None)
        if controls:
            extra["judge_controls.jsonl"] = list(controls)
    info = {
        "tokenizer": model.tokenizer,
        "estimator": estimator.name,
        "dataset": cfg.dataset.name,
        "data_hash": data_hash,
        "overrides": job.overrides,
        "context_window": model.context_window,
        "source_format": transcript.source.get("format"),
        "summariser": getattr(summariser, "name", None),
        "judge": observer.judge.name if observer else None,
    }
    count_cache.cell_finished()  # this cell's new counts, for the other workers
    cell.write(
        calls=result.calls,
        events=result.events,
        metrics=metrics,
        info=info,
        extra_files=extra,
        workspace=work,
        config=job.resolved,
    )
    if sharing is not None and recording is not None:
        sharing.save(recording, names, cell.path)
    return json.loads((cell.path / "summary.json").read_text("utf-8"))


def reuse_cell(
    job: CellJob, cell: Cell, work: Path, transcript: Transcript, sharing: CellSharing
) -> dict[str, Any] | None:
    """Publish ``cell`` as a copy of a cell of another setting that made the same decisions
    (``ctxbench.cell_reuse``); None when there is none (``work`` is then left empty)."""
    from ctxbench.build import estimator_config, strategy_config
    from ctxbench.cell_reuse import clear, copy_cell
    from ctxbench.replay.contexts import ContextRecorder

    record = sharing.find()
    if record is None:
        return None
    if job.strategy_config is None or job.estimator_config is None:
        job.strategy_config = strategy_config(job.cfg, job.resolved)
        job.estimator_config = estimator_config(job.cfg, job.resolved)
    header = None
    if job.record_contexts:
        counted = job.counter.for_transcript(transcript)
        header = ContextRecorder(transcript, counted, _levels_strategy(job), job.model).header
    source = copy_cell(record, sharing, work, header)
    named = source.get("cell") if isinstance(source, dict) else None
    if not isinstance(named, dict) or [named.get(k) for k in ("transcript", "strategy", "model")] != [
        cell.transcript,
        cell.strategy,
        cell.model,
    ]:
        clear(work)
        return None
    info = {k: v for k, v in named.items() if k not in ("transcript", "strategy", "model", "config_hash")}
    info["overrides"] = job.overrides
    cell.finish(work, metrics=source["metrics"], info=info, config=job.resolved, publish=True)
    return json.loads((cell.path / "summary.json").read_text("utf-8"))
