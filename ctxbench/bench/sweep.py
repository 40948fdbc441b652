"""Wall time of real ``ctxbench run -m`` sweeps: the joblib launcher at 1 and 2 workers, and the
README's main job on the bundled data. Each run writes into a fresh temporary output root, so
no cell is skipped as already complete."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxbench.bench.runner import BenchError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
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
MAIN_JOB = ("run", "-m")  # the README's main job: the default sweep over the bundled datasets/


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ctxbench(args: Sequence[str], output_root: Path, cwd: Path = PROJECT_ROOT, timeout: float = 3600) -> float:
    """Wall seconds of ``ctxbench <args> output.root=<output_root>`` in a fresh process."""
    cmd = [sys.executable, "-m", "ctxbench.cli", *args, f"output.root={output_root}", "progress=false"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise BenchError(f"`ctxbench {' '.join(args)}` failed ({proc.returncode}): {tail}")
    return seconds


def count_cells(output_root: Path) -> int:
    return sum(1 for _ in output_root.rglob("summary.json"))


def sweep_args(dataset_dir: Path, strategies: Sequence[str], n_jobs: int) -> list[str]:
    return [
        "run",
        "-m",
        f"strategy={','.join(strategies)}",
        f"dataset.paths=[{dataset_dir}]",
        "hydra/launcher=joblib",
        f"hydra.launcher.n_jobs={n_jobs}",
    ]


def launcher_sweep(
    transcript_path: Path, strategies: Sequence[str], workers: Sequence[int], repeats: int, progress: Any
) -> dict[str, Any]:
    """The same sweep (one cell per strategy on one transcript) at each worker count."""
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-sweep-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        shutil.copy(transcript_path, data / transcript_path.name)
        times: dict[int, list[float]] = {n: [] for n in workers}
        cpu: dict[int, list[float]] = {n: [] for n in workers}  # CPU the sweep got: cores actually free
        cells: dict[int, int] = {}
        load = [os.getloadavg()[0]]
        for round_ in range(repeats):
            for n in workers:
                out = Path(tmp) / f"out-{n}-{round_}"
                cpu_before = children_cpu()
                seconds = run_ctxbench(sweep_args(data, strategies, n), out)
                cpu[n].append(children_cpu() - cpu_before)
                cells[n] = count_cells(out)
                times[n].append(seconds)
                load.append(os.getloadavg()[0])
                progress(
                    f"sweep round {round_ + 1}/{repeats}: {cells[n]} cells at n_jobs={n}: {seconds:.1f} s wall, "
                    f"{cpu[n][-1]:.1f} s cpu"
                )
    return {
        "strategies": list(strategies),
        "transcript": transcript_path.name,
        "times": times,
        "cpu": cpu,
        "cells": cells,
        "load_average_1m": load,
    }


def main_job(progress: Any) -> dict[str, Any]:
    """The README's main job (`ctxbench run -m` on the bundled data), timed once."""
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-main-") as tmp:
        seconds = run_ctxbench(MAIN_JOB, Path(tmp))
        cells = count_cells(Path(tmp))
    progress(f"main job `ctxbench run -m`: {cells} cells in {seconds:.1f} s")
    return {"command": "ctxbench " + " ".join(MAIN_JOB), "seconds": seconds, "cells": cells}
