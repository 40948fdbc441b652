"""Run measurements in fresh worker processes and reduce repeats to medians and ratios."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ctxbench.bench.data import BenchTranscript
from ctxbench.errors import CtxbenchError

Progress = Callable[[str], None]


class BenchError(CtxbenchError):
    """A worker process failed."""


def run_worker(task: dict[str, Any], timeout: float = 3600) -> dict[str, Any]:
    """One measurement in a fresh ``python`` process (nothing cached, its own peak RSS)."""
    cmd = [sys.executable, "-m", "ctxbench.bench.worker", json.dumps(task)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise BenchError(f"bench worker {task.get('kind')} {task.get('strategy') or ''} on {task['path']}: {tail}")
    return json.loads(lines[-1])


def label(kind: str, strategy: str | None) -> str:
    if kind == "cell":
        return f"{strategy} (cells)"
    return {"floor": "tokenizer floor", "naive": "naive recount"}.get(kind, strategy or kind)


def measure_transcript(
    transcript: BenchTranscript,
    strategies: Sequence[str],
    repeats: int,
    model: str,
    naive_repeats: int,
    progress: Progress,
    worker: Callable[[dict[str, Any]], dict[str, Any]] = run_worker,
    cells: bool = True,
) -> list[dict[str, Any]]:
    """Floor, each strategy's replay and (``cells``) its whole cells, and the naive recount,
    ``repeats`` rounds; each round measures the floor first so every ratio compares two runs of
    the same round, and ``ratio_none_cpu`` compares a strategy with ``none`` of the same kind and
    round (when ``none`` is measured)."""
    plan = [("floor", None), *(("replay", s) for s in strategies)]
    plan += [*(("cell", s) for s in strategies if cells), ("naive", None)]
    samples: dict[tuple[str, str | None], list[dict[str, Any]]] = {key: [] for key in plan}
    for round_ in range(repeats):
        floor: dict[str, Any] | None = None
        for kind, strategy in plan:
            if kind == "naive" and round_ >= naive_repeats:
                continue
            task = {"kind": kind, "strategy": strategy, "path": str(transcript.path), "model": model}
            result = worker(task)
            if kind == "floor":
                floor = result
            assert floor is not None
            result["ratio_wall"] = result["seconds"] / floor["seconds"] if floor["seconds"] else math.inf
            result["ratio_cpu"] = result["cpu_seconds"] / floor["cpu_seconds"] if floor["cpu_seconds"] else math.inf
            samples[(kind, strategy)].append(result)
            progress(
                f"{transcript.name:>5} round {round_ + 1}/{repeats} {label(kind, strategy):<20} "
                f"{result['seconds']:7.2f} s wall {result['cpu_seconds']:7.2f} s cpu  x{result['ratio_cpu']:.2f} cpu"
            )
    for (kind, strategy), runs in samples.items():  # against `none` of the same kind and round
        nones = samples.get((kind, "none")) or []
        for run, none in zip(runs, nones):
            if strategy is not None and none["cpu_seconds"]:
                run["ratio_none_cpu"] = run["cpu_seconds"] / none["cpu_seconds"]
    return [reduce(transcript, kind, strategy, runs) for (kind, strategy), runs in samples.items() if runs]


def reduce(transcript: BenchTranscript, kind: str, strategy: str | None, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over repeats; memory is the worst repeat's growth over its own baseline (the RSS
    just before loading the transcript, see ``ctxbench.bench.worker``)."""
    worst = max(runs, key=lambda r: r["peak_rss_kib"] - r["rss_ready_kib"])
    ready = worst["rss_ready_kib"]

    def x_text(peak_kib: int) -> float:
        return (peak_kib - ready) * 1024 / transcript.text_bytes if transcript.text_bytes else 0.0

    return {
        "transcript": transcript.name,
        "tokens": transcript.tokens,
        "text_bytes": transcript.text_bytes,
        "kind": kind,
        "name": label(kind, strategy),
        "strategy": strategy,
        "repeats": len(runs),
        "seconds": statistics.median(r["seconds"] for r in runs),
        "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
        "ratio_wall": statistics.median(r["ratio_wall"] for r in runs),
        "ratio_cpu": statistics.median(r["ratio_cpu"] for r in runs),
        "ratio_none_cpu": _median(r.get("ratio_none_cpu") for r in runs),
        "peak_rss_kib": worst["peak_rss_kib"],
        "rss_ready_kib": ready,
        "rss_tokenizer_kib": min(r["rss_tokenizer_kib"] for r in runs),
        "rss_imports_kib": min(r["rss_imports_kib"] for r in runs),
        "memory_growth_x_text": x_text(worst["peak_rss_kib"]),
        "load_growth_x_text": x_text(worst["peak_load_kib"]),
        "replay_growth_x_text": x_text(worst["peak_replay_kib"]),
        "peak_reset": all(r["peak_reset"] for r in runs),
        "tokenized_chars": runs[0].get("tokenized_chars"),
        "tokens_sent_total": runs[0].get("tokens_sent_total"),
        "failed_calls": runs[0].get("failed_calls"),
    }


def _median(values: Any) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def growth_exponent(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(time) on log(tokens): 1.0 is linear, 2.0 quadratic."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def exponents(rows: Sequence[dict[str, Any]], synthetic: set[str]) -> dict[str, dict[str, float | None]]:
    """Per measured row name: the growth exponent of wall and CPU time over the generated sizes."""
    out: dict[str, dict[str, float | None]] = {}
    for name in dict.fromkeys(r["name"] for r in rows):
        mine = [r for r in rows if r["name"] == name and r["transcript"] in synthetic]
        out[name] = {
            "wall": growth_exponent([(r["tokens"], r["seconds"]) for r in mine]),
            "cpu": growth_exponent([(r["tokens"], r["cpu_seconds"]) for r in mine]),
        }
    return out
