"""``ctxbench bench``: replay speed against the tokenizer floor, peak memory, growth exponent,
launcher scaling and the main job's wall time, on generated and real transcripts."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from ctxbench.atomic import write_text_atomic
from ctxbench.bench import data, report, runner, sweep
from ctxbench.cli import describe
from ctxbench.data import BUNDLED
from ctxbench.errors import ConfigError

DEFAULT_STRATEGIES = "none,sliding_window,dbgpt,five_layer,observation_masking"
MAIN_JOB_DATA = report.MAIN_JOB_DATA  # the bundled data, measured as one set: the cells of `ctxbench run -m`


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctxbench bench", description=describe(__doc__))
    p.add_argument("--sizes", default="100k,250k,1m", help="generated transcript sizes in tokens (default %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="rounds per measurement; medians are reported")
    p.add_argument("--strategies", default=DEFAULT_STRATEGIES, help="strategy configs to replay")
    p.add_argument("--model", default="gpt-4o", help="model config (its tokenizer is the floor's)")
    p.add_argument("--kind", default="coding", help="generator agent kind (sql, coding, research)")
    p.add_argument("--real", default=str(data.DEFAULT_REAL), help="folder or file of real transcripts; 'none' skips")
    p.add_argument("--naive-repeats", type=int, default=1, help="rounds of the naive recount (slow by design)")
    p.add_argument("--workers", default="1,2", help="joblib n_jobs values for the sweep; empty skips the sweep")
    p.add_argument(
        "--sweep",
        choices=sweep.SWEEPS,
        default="thresholds",
        help="thresholds: the shipped +experiment=dbgpt_thresholds (12 DB-GPT threshold settings), each a job "
        "over the whole --sweep-data (long jobs, what users sweep); strategies: one job per --sweep-strategies "
        "on a --sweep-size transcript (short jobs)",
    )
    p.add_argument("--sweep-data", default=str(sweep.DEFAULT_SWEEP_DATA), help="thresholds sweep: transcript folder")
    p.add_argument("--sweep-size", default="100k", help="strategies sweep: generated transcript it runs on")
    p.add_argument(
        "--sweep-strategies", default=",".join(sweep.SWEEP_STRATEGIES), help="strategies sweep: one job each"
    )
    p.add_argument(
        "--no-main-job",
        action="store_true",
        help="skip the main job: its cells on the bundled data per strategy, and `ctxbench run -m` timed whole",
    )
    p.add_argument(
        "--no-cells", action="store_true", help="time the replay alone, not the whole cells (probes, judge, files)"
    )
    p.add_argument(
        "--sweep-ratio",
        action="store_true",
        help="only this: CPU of a dbgpt warning x error threshold sweep over --sweep-data (joblib at the largest "
        "--workers) as a multiple of one dbgpt job's, best of --repeats",
    )
    p.add_argument(
        "--ratio-thresholds",
        default=f"{','.join(map(str, sweep.RATIO_WARNING))}x{','.join(map(str, sweep.RATIO_ERROR))}",
        help="--sweep-ratio's warning x error thresholds (default %(default)s: 20 settings)",
    )
    p.add_argument("--out", help="write the Markdown report here (and JSON beside it, .json)")
    return p


def split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def machine() -> dict[str, Any]:
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    except (ValueError, OSError):
        mem = 0.0
    return {
        "cpus": os.cpu_count(),
        "memory_gib": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": list(os.getloadavg()),
    }


def progress(line: str) -> None:
    print(f"[bench] {line}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from ctxbench.bench.worker import compose_config

    if args.repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    sizes = [data.parse_size(s) for s in split(args.sizes)]
    strategies = split(args.strategies)
    workers = [int(n) for n in split(args.workers)]
    tokenizer = str(compose_config("none", args.model).model.tokenizer)
    result: dict[str, Any] = {"machine": machine(), "model": args.model, "tokenizer": tokenizer, "notes": []}
    result["repeats"] = args.repeats
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-data-") as tmp:
        workdir = Path(tmp)
        transcripts = []
        for size in sizes:
            progress(f"generating a {data.size_label(size)}-token {args.kind} transcript")
            transcripts.append(data.generated(size, workdir, tokenizer, args.kind))
        if args.real.lower() != "none":
            real_root = Path(args.real)
            real = data.largest_real(real_root, workdir, tokenizer) if real_root.exists() else None
            if real is None:
                result["notes"].append(f"No real transcript: {real_root} is absent or holds none; skipped.")
            else:
                transcripts.append(real)
        main_data = None if args.no_main_job else data.dataset(BUNDLED, MAIN_JOB_DATA, tokenizer)
        result["transcripts"] = [t.to_dict() for t in ([main_data] if main_data else []) + transcripts]
        rows: list[dict[str, Any]] = []
        cells = not args.no_cells
        if main_data is not None:  # what users wait for first: the main job's cells, strategy by strategy
            progress(f"measuring the main job's cells: {main_data.tokens:,} tokens, {main_data.calls} calls")
            rows += runner.measure_transcript(main_data, strategies, args.repeats, args.model, 0, progress, cells=cells)
        for t in transcripts:
            progress(f"measuring {t.name}: {t.tokens:,} tokens, {t.calls} calls")
            rows += runner.measure_transcript(
                t, strategies, args.repeats, args.model, args.naive_repeats, progress, cells=cells
            )
        result["rows"] = rows
        synthetic = {t.name for t in transcripts if t.synthetic}
        result["exponents"] = runner.exponents(rows, synthetic)
        largest = max((t for t in transcripts if t.synthetic), key=lambda t: t.tokens, default=None)
        result["sweep"] = None
        if workers and args.sweep == "thresholds":
            progress(f"sweep: +experiment=dbgpt_thresholds over {args.sweep_data} at n_jobs {args.workers}")
            result["sweep"] = sweep.threshold_sweep(Path(args.sweep_data), workers, args.repeats, progress)
        elif workers:
            size = data.parse_size(args.sweep_size)
            path = next((t.path for t in transcripts if t.synthetic and t.tokens and size == _target(t)), None)
            if path is None:
                path = data.generated(size, workdir, tokenizer, args.kind).path
            result["sweep"] = sweep.strategy_sweep(path, split(args.sweep_strategies), workers, args.repeats, progress)
        if result["sweep"] is not None and not result["sweep"]["balanced"]:
            result["notes"].append(
                f"The sweep's {len(result['sweep']['strategies'])} jobs are not a multiple of every worker count "
                f"({args.workers}): at the end some workers wait, which lowers the speedup."
            )
        result["main_job"] = None if args.no_main_job else sweep.main_job(progress)
    result["verdicts"] = report.verdicts(
        rows, result["exponents"], largest.name if largest else None, result["sweep"], result["main_job"], synthetic
    )
    return result


def _target(t: data.BenchTranscript) -> int:
    return data.parse_size(t.name)


def thresholds(text: str) -> tuple[list[float], list[float]]:
    """``--ratio-thresholds``: warning values ``x`` error values, each comma-separated."""
    try:
        warning, error = ([float(v) for v in split(part)] for part in text.split("x"))
    except ValueError:
        raise ConfigError(f"--ratio-thresholds {text!r}: warning values x error values, e.g. 0.5,0.6x0.9") from None
    if not warning or not error:
        raise ConfigError(f"--ratio-thresholds {text!r}: warning values x error values, e.g. 0.5,0.6x0.9")
    return warning, error


def ratio(args: argparse.Namespace) -> int:
    """``ctxbench bench --sweep-ratio``: the sweep's CPU against one job's, and nothing else."""
    if args.repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    warning, error = thresholds(args.ratio_thresholds)
    n_jobs = max([int(n) for n in split(args.workers)] or [1])
    result = sweep.sweep_ratio(Path(args.sweep_data), progress, warning, error, n_jobs, args.repeats)
    text = sweep.ratio_text(result)
    print(text)
    if args.out:
        out = Path(args.out)
        write_text_atomic(out, text + "\n")
        write_text_atomic(out.with_suffix(".json"), json.dumps(result, indent=1))
        progress(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


def cli(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.sweep_ratio:
        return ratio(args)
    result = run(args)
    text = report.markdown(result)
    print(text)
    if args.out:
        out = Path(args.out)
        write_text_atomic(out, text)
        write_text_atomic(out.with_suffix(".json"), json.dumps(result, indent=1, default=str))
        progress(f"wrote {out} and {out.with_suffix('.json')}")
    return 0
