"""Wall time of real ``ctxbench run -m`` sweeps: the joblib launcher at 1 and 2 workers, and the
README's main job on the bundled data. Each run writes into a fresh temporary output root, so
no cell is skipped as already complete.

Two sweeps, each a multiple of the 2 workers' jobs, so neither waits for the other:

- ``thresholds`` (the default, what users run): the shipped experiment unchanged,
  ``ctxbench run -m +experiment=dbgpt_thresholds``: its 12 DB-GPT warning x error threshold
  settings over the bundled dataset, each job replaying all of its transcripts. Jobs are long
  next to the sweep's fixed start-up (about 3 s: Hydra, each worker's imports and tokenizers).
- ``strategies``: 8 strategies, one job each, on one generated transcript (``--sweep-size``):
  short jobs, where the fixed start-up (Hydra's, each worker's imports and tokenizer) weighs most.
"""

from __future__ import annotations

import itertools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxbench.bench.runner import BenchError
from ctxbench.data import BUNDLED

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SWEEPS = ("thresholds", "strategies")
DEFAULT_SWEEP_DATA = BUNDLED
SWEEP_STRATEGIES = (
    "none",
    "sliding_window",
    "dbgpt",
    "five_layer",
    "observation_masking",
    "clear_tool_uses",
    "amortized_forgetting",
    "anchored_summary",
)
THRESHOLD_EXPERIMENT = PROJECT_ROOT / "ctxbench" / "configs" / "experiment" / "dbgpt_thresholds.yaml"
THRESHOLD_SWEEP = ("+experiment=dbgpt_thresholds",)
# The sweep ratio (issue 24: "a 20-config threshold sweep of dbgpt on the bundled data costs at most 6
# single-config runs"): these DB-GPT warning x error thresholds against one dbgpt job, in CPU time.
RATIO_WARNING = (0.5, 0.6, 0.7, 0.75, 0.8)
RATIO_ERROR = (0.85, 0.88, 0.9, 0.95)
ONE_JOB = ("run", "strategy=dbgpt", "strategy.params.max_context_tokens=null")
MAIN_JOB = ("run", "-m")  # the README's main job: the default sweep over the bundled data


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ctxbench(
    args: Sequence[str],
    output_root: Path,
    cwd: Path = PROJECT_ROOT,
    timeout: float = 3600,
    env: Mapping[str, str] | None = None,
) -> float:
    """Wall seconds of ``ctxbench <args> output.root=<output_root>`` in a fresh process (``env``:
    variables set for it on top of this process's)."""
    cmd = [sys.executable, "-m", "ctxbench.cli", *args, f"output.root={output_root}", "progress=false"]
    start = time.perf_counter()
    environ = {**os.environ, **env} if env else None
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environ)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise BenchError(f"`ctxbench {' '.join(args)}` failed ({proc.returncode}): {tail}")
    return seconds


def count_cells(output_root: Path) -> int:
    """Result cells written (one per transcript per job)."""
    return sum(1 for _ in output_root.rglob("summary.json"))


def count_jobs(output_root: Path) -> int:
    """Hydra jobs that ran to the end (each writes the list of its cells last)."""
    return sum(1 for _ in output_root.rglob("cells.json"))


def sweep_args(dataset_dir: Path, overrides: Sequence[str], n_jobs: int) -> list[str]:
    return [
        "run",
        "-m",
        *overrides,
        f"dataset.paths=[{dataset_dir}]",
        "hydra/launcher=joblib",
        f"hydra.launcher.n_jobs={n_jobs}",
    ]


def timed_sweeps(
    dataset_dir: Path, overrides: Sequence[str], workers: Sequence[int], repeats: int, progress: Any, work: Path
) -> dict[str, Any]:
    """The same sweep at each worker count, ``repeats`` rounds. The order of the worker counts
    alternates between rounds, so a change of load on the shared cores does not favour one."""
    times: dict[int, list[float]] = {n: [] for n in workers}
    cpu: dict[int, list[float]] = {n: [] for n in workers}  # CPU the sweep got: cores actually free
    jobs: dict[int, int] = {}
    cells: dict[int, int] = {}
    load = [os.getloadavg()[0]]
    for round_ in range(repeats):
        for n in workers if round_ % 2 == 0 else list(reversed(workers)):
            out = work / f"out-{n}-{round_}"
            cpu_before = children_cpu()
            seconds = run_ctxbench(sweep_args(dataset_dir, overrides, n), out)
            cpu[n].append(children_cpu() - cpu_before)
            jobs[n], cells[n] = count_jobs(out), count_cells(out)
            shutil.rmtree(out, ignore_errors=True)
            times[n].append(seconds)
            load.append(os.getloadavg()[0])
            progress(
                f"sweep round {round_ + 1}/{repeats}: {jobs[n]} jobs ({cells[n]} result cells) at n_jobs={n}: "
                f"{seconds:.1f} s wall, {cpu[n][-1]:.1f} s cpu"
            )
    # `cells` in the report's sweep table counts sweep points (Hydra jobs), as in the "8 cells".
    return {"times": times, "cpu": cpu, "cells": jobs, "result_cells": cells, "load_average_1m": load}


def dataset_summary(dataset_dir: Path) -> tuple[int, int, float]:
    """(transcripts, calls, MiB of JSONL) in a folder of canonical transcripts."""
    from ctxbench.transcripts.canonical import find_canonical_files, read_transcripts

    files = find_canonical_files([dataset_dir])
    transcripts = [t for f in files for t in read_transcripts(f) if t.call_indices]
    mib = sum(f.stat().st_size for f in files) / 1024**2
    return len(transcripts), sum(len(t.call_indices) for t in transcripts), mib


def threshold_settings(experiment: Path = THRESHOLD_EXPERIMENT) -> list[str]:
    """The experiment's jobs, one per warning x error threshold in its sweeper params."""
    from omegaconf import OmegaConf

    params = OmegaConf.load(experiment).hydra.sweeper.params
    warning = str(params["strategy.params.warning_threshold"]).split(",")
    error = str(params["strategy.params.error_threshold"]).split(",")
    return [f"dbgpt warning={w} error={e}" for w, e in itertools.product(warning, error)]


def threshold_sweep(dataset_dir: Path, workers: Sequence[int], repeats: int, progress: Any) -> dict[str, Any]:
    """The shipped DB-GPT threshold experiment over a whole dataset (default: the bundled one)."""
    if not dataset_dir.is_dir():
        raise BenchError(f"--sweep-data {dataset_dir}: not a folder of canonical transcripts")
    n_transcripts, calls, mib = dataset_summary(dataset_dir)
    if not n_transcripts:
        raise BenchError(f"--sweep-data {dataset_dir}: no canonical .jsonl transcripts with calls")
    settings = threshold_settings()
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-sweep-") as tmp:
        result = timed_sweeps(dataset_dir, THRESHOLD_SWEEP, workers, repeats, progress, Path(tmp))
    name = dataset_dir.name if dataset_dir != DEFAULT_SWEEP_DATA else "the bundled data"
    return {
        "kind": "thresholds",
        "command": "ctxbench run -m " + " ".join(THRESHOLD_SWEEP),
        "strategies": settings,  # one sweep cell (Hydra job) each
        # The report's header reads "<n> cells on <transcript> with the joblib launcher".
        "transcript": (
            f"{name} ({n_transcripts} transcripts, {calls:,} calls, {mib:.1f} MiB; DB-GPT warning x error "
            f"thresholds, each cell a job replaying all {n_transcripts})"
        ),
        "dataset": str(dataset_dir),
        "balanced": all(len(settings) % n == 0 for n in workers),
        **result,
    }


def strategy_sweep(
    transcript_path: Path, strategies: Sequence[str], workers: Sequence[int], repeats: int, progress: Any
) -> dict[str, Any]:
    """One job per strategy on one transcript: short jobs, the fixed start-up weighs most."""
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-sweep-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        shutil.copy(transcript_path, data / transcript_path.name)
        overrides = [f"strategy={','.join(strategies)}"]
        result = timed_sweeps(data, overrides, workers, repeats, progress, Path(tmp))
    return {
        "kind": "strategies",
        "command": "ctxbench run -m " + " ".join(overrides),
        "strategies": list(strategies),
        "transcript": f"{transcript_path.name} (one short job per strategy)",
        "balanced": all(len(strategies) % n == 0 for n in workers),
        **result,
    }


def main_job(progress: Any) -> dict[str, Any]:
    """The README's main job (`ctxbench run -m` on the bundled data), timed once."""
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-main-") as tmp:
        seconds = run_ctxbench(MAIN_JOB, Path(tmp))
        cells = count_cells(Path(tmp))
    progress(f"main job `ctxbench run -m`: {cells} cells in {seconds:.1f} s")
    return {"command": "ctxbench " + " ".join(MAIN_JOB), "seconds": seconds, "cells": cells}


def ratio_sweep_args(dataset_dir: Path, warning: Sequence[float], error: Sequence[float], n_jobs: int) -> list[str]:
    """The threshold sweep the ratio measures: the shipped experiment at these thresholds."""
    return [
        "run",
        "-m",
        *THRESHOLD_SWEEP,
        f"strategy.params.warning_threshold={','.join(map(str, warning))}",
        f"strategy.params.error_threshold={','.join(map(str, error))}",
        f"dataset.paths=[{dataset_dir}]",
        f"hydra.launcher.n_jobs={n_jobs}",
    ]


def sweep_ratio(
    dataset_dir: Path,
    progress: Any,
    warning: Sequence[float] = RATIO_WARNING,
    error: Sequence[float] = RATIO_ERROR,
    n_jobs: int = 2,
    repeats: int = 3,
) -> dict[str, Any]:
    """CPU of the dbgpt threshold sweep (joblib at ``n_jobs``, a cold count cache of its own) as a
    multiple of one dbgpt job's (count cache off), each its process tree's user + sys time (what
    ``/usr/bin/time`` reports), ``repeats`` rounds alternating the two; the ratio of the bests."""
    if not dataset_dir.is_dir():
        raise BenchError(f"--sweep-data {dataset_dir}: not a folder of canonical transcripts")
    settings = len(warning) * len(error)
    one: list[float] = []
    swept: list[float] = []
    cells: dict[str, int] = {}
    load = [os.getloadavg()[0]]
    data = f"dataset.paths=[{dataset_dir}]"
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-ratio-") as tmp:
        for round_ in range(repeats):
            out = Path(tmp) / f"one-{round_}"
            before = children_cpu()
            run_ctxbench([*ONE_JOB, data], out, env={"CTXBENCH_COUNT_CACHE": "off"})
            one.append(children_cpu() - before)
            cells["one"] = count_cells(out)
            out, cache = Path(tmp) / f"sweep-{round_}", Path(tmp) / f"counts-{round_}"
            cache.mkdir()
            before = children_cpu()
            run_ctxbench(
                ratio_sweep_args(dataset_dir, warning, error, n_jobs), out, env={"CTXBENCH_COUNT_CACHE": str(cache)}
            )
            swept.append(children_cpu() - before)
            cells["sweep"], cells["jobs"] = count_cells(out), count_jobs(out)
            load.append(os.getloadavg()[0])
            progress(
                f"sweep ratio round {round_ + 1}/{repeats}: one job {one[-1]:.2f} s cpu, "
                f"{settings} settings {swept[-1]:.2f} s cpu ({swept[-1] / one[-1]:.2f} single runs)"
            )
            shutil.rmtree(out, ignore_errors=True)
    return {
        "kind": "ratio",
        "settings": settings,
        "n_jobs": n_jobs,
        "dataset": str(dataset_dir),
        "one_job": "ctxbench " + " ".join(ONE_JOB),
        "command": "ctxbench " + " ".join(ratio_sweep_args(dataset_dir, warning, error, n_jobs)),
        "one_cpu": one,
        "sweep_cpu": swept,
        "ratio": min(swept) / min(one),
        "cells": cells,
        "load_average_1m": load,
    }


def ratio_text(result: dict[str, Any]) -> str:
    """The ratio in a few lines: what ran, each round's CPU, the ratio of the bests."""
    one, swept = result["one_cpu"], result["sweep_cpu"]
    rounds = ", ".join(f"{s:.2f}/{o:.2f}" for s, o in zip(swept, one, strict=True))
    return "\n".join(
        [
            f"sweep: {result['command']} ({result['cells']['jobs']} jobs, {result['cells']['sweep']} cells)",
            f"one job: {result['one_job']} ({result['cells']['one']} cells)",
            f"cpu s per round, sweep/one job: {rounds}; 1-minute load average: "
            + ", ".join(f"{x:.1f}" for x in result["load_average_1m"]),
            f"sweep ratio: {result['ratio']:.2f} single runs (best sweep {min(swept):.2f} s / best job {min(one):.2f} s"
            f" of {len(one)} rounds)",
        ]
    )
