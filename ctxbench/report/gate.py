"""The regression gate: ``ctxbench baseline`` stores a results summary, ``ctxbench check``
compares fresh results with it and exits non-zero when a metric moved past its tolerance.

Entries are keyed by strategy x model x variant (the overrides that make a variant, as in
the comparison table). Tolerances are per metric and signed by direction: for metrics
where higher is better (savings, retention) a tolerance is the largest allowed drop; for
the others (retries, overflow errors, failed calls, tokens, cost) the largest allowed
rise. ``N%`` means relative to the baseline value.

A check fails only when the move is past its tolerance AND the 95% bootstrap interval of the
difference, paired by transcript (the baseline keeps each transcript's numbers), excludes zero:
a move the transcripts do not agree on is reported as noise, not as a regression.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ctxbench.atomic import write_text_atomic
from ctxbench.errors import ConfigError, InputError
from ctxbench.report.intervals import STATS, Paired, paired_difference
from ctxbench.report.load import gather
from ctxbench.report.tables import cells_frame
from ctxbench.results.store import git_revision

BASELINE_SCHEMA = "ctxbench.baseline/1"
# comparison column -> baseline metric name
METRICS = {
    "savings_vs_none": "savings",
    "retention": "retention",
    "overflow_errors": "overflow_errors",
    "retries": "retries",
    "failed_calls": "failed_calls",
    "tokens_sent": "tokens_sent",
    "peak": "peak",
    "cost_usd": "cost_usd",
}
HIGHER_IS_BETTER = {"savings", "retention"}
# baseline metric -> how its per-transcript numbers aggregate (ctxbench.report.intervals.STATS)
PAIRED = {
    "savings": "savings_vs_none",
    "retention": "retention",
    "overflow_errors": "overflow_errors",
    "retries": "retries",
    "failed_calls": "failed_calls",
    "tokens_sent": "tokens_sent",
    "cost_usd": "cost_usd",
}
PER_TRANSCRIPT = sorted({c for name in PAIRED.values() for c in STATS[name].columns()})
# Checked unless told otherwise: retention and savings may drop by 2 points (absolute),
# counts of overflow errors, retries and failed calls may not rise at all (runs are deterministic).
DEFAULT_TOLERANCES: dict[str, str] = {
    "retention": "0.02",
    "savings": "0.02",
    "overflow_errors": "0",
    "retries": "0",
    "failed_calls": "0",
}
EPS = 1e-9


@dataclass(frozen=True)
class Tolerance:
    value: float
    relative: bool = False

    @classmethod
    def parse(cls, text: str, where: str = "--tolerance") -> Tolerance:
        raw = text.strip()
        relative = raw.endswith("%")
        try:
            value = abs(float(raw.rstrip("%").strip()))
        except ValueError:
            raise ConfigError(f"{where}: tolerance {text!r} is not a number (e.g. 0.02, +0, 5%)") from None
        return cls(value / 100 if relative else value, relative)

    def allowed(self, baseline: float) -> float:
        return self.value * abs(baseline) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value:.0%}" if self.relative else f"{self.value:g}"

    def said_for(self, metric: str) -> str:
        """In the units the metric's delta is printed in: a share's tolerance in percentage points
        like its delta ("-31.34%, tolerance -2.00%", not "tolerance -0.02"); a relative one says so."""
        if self.relative:
            return f"{self.value:.0%} of the baseline"
        return _fmt(metric, self.value, False)


def parse_tolerances(
    items: Sequence[str] | None, defaults: Mapping[str, str] = DEFAULT_TOLERANCES
) -> dict[str, Tolerance]:
    """``metric=value`` items over the defaults; ``metric=off`` stops checking a metric."""
    chosen = dict(defaults)
    for item in items or ():
        if "=" not in item:
            raise ConfigError(f"--tolerance {item!r}: expected metric=value, e.g. retention=0.05")
        metric, value = (p.strip() for p in item.split("=", 1))
        if metric not in METRICS.values():
            raise ConfigError(f"--tolerance {item!r}: unknown metric {metric!r}; known: {', '.join(METRICS.values())}")
        chosen[metric] = value
    return {m: Tolerance.parse(v, f"--tolerance {m}") for m, v in chosen.items() if v.lower() not in ("off", "none")}


def per_transcript(cells: pd.DataFrame) -> dict[tuple[str, str, str], dict[str, dict[str, float]]]:
    """Each entry's numbers per transcript (what paired intervals resample)."""
    if cells.empty:
        return {}
    cells = cells.copy()
    if "cost_usd" not in cells:
        for fallback in ("total_cost_usd", "agent_cost_usd"):
            if fallback in cells:
                cells["cost_usd"] = cells[fallback]
                break
    columns = [c for c in PER_TRANSCRIPT if c in cells]
    out: dict[tuple[str, str, str], dict[str, dict[str, float]]] = {}
    for row in cells.to_dict("records"):
        key = (row["strategy"], row["model"], row.get("variant") or "")
        values = {c: float(row[c]) for c in columns if row.get(c) is not None and not pd.isna(row[c])}
        out.setdefault(key, {})[str(row["transcript"])] = values
    return out


def summarise(comparison: pd.DataFrame, cells: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Baseline entries from a comparison table (one per strategy x model x variant), with each
    transcript's numbers when the cells are given (for paired intervals)."""
    by_transcript = per_transcript(cells) if cells is not None else {}
    entries = []
    for row in comparison.to_dict("records"):
        metrics = {}
        for col, name in METRICS.items():
            value = row.get(col)
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                metrics[name] = float(value) if isinstance(value, float) else int(value)
        entries.append(
            {
                "strategy": row["strategy"],
                "model": row["model"],
                "variant": row.get("variant") or "",
                "transcripts": int(row["transcripts"]),
                "calls": int(row["calls"]),
                "metrics": metrics,
            }
        )
        transcripts = by_transcript.get(_key(entries[-1]))
        if transcripts:
            entries[-1]["per_transcript"] = transcripts
    return entries


def _key(entry: Mapping[str, Any]) -> tuple[str, str, str]:
    return (entry["strategy"], entry["model"], entry.get("variant") or "")


def load_baseline(path: str | Path) -> dict[str, Any]:
    """A baseline, schema-checked: finite numbers in range (results/reader.py); else one ``InputError``."""
    from ctxbench.results.reader import read_baseline

    return read_baseline(path, BASELINE_SCHEMA)


def paired(before: Mapping[str, Any], after: Mapping[str, Any], metric: str, seed: int = 0) -> Paired | None:
    """The metric's change from one entry to the other with its 95% interval, paired by transcript."""
    if metric not in PAIRED or "per_transcript" not in before or "per_transcript" not in after:
        return None

    def frame(entry: Mapping[str, Any]) -> pd.DataFrame:
        return pd.DataFrame([{"transcript": t, **v} for t, v in entry["per_transcript"].items()])

    return paired_difference(frame(before), frame(after), STATS[PAIRED[metric]], seed=seed)


def compare(
    baseline: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    tolerances: Mapping[str, Tolerance],
    allow_missing: bool = False,
) -> pd.DataFrame:
    """One row per checked (entry, metric): baseline, current, delta, the 95% interval of the
    delta paired by transcript, tolerance, status. FAIL needs both: past the tolerance, and an
    interval that excludes zero (when there is one: baselines without per-transcript numbers
    fall back to the tolerance alone)."""
    now = {_key(e): e for e in current}
    rows: list[dict[str, Any]] = []
    for entry in baseline:
        key = _key(entry)
        ident = {"strategy": key[0], "model": key[1], "variant": key[2]}
        if key not in now:
            status = "ok (missing, allowed)" if allow_missing else "FAIL: missing"
            rows.append(
                {
                    **ident,
                    "metric": "(entry)",
                    "baseline": None,
                    "current": None,
                    "delta": None,
                    "interval": None,
                    "tolerance": "",
                    "status": status,
                }
            )
            continue
        for metric, tol in tolerances.items():
            before = entry["metrics"].get(metric)
            after = now[key]["metrics"].get(metric)
            if before is None:
                continue  # the baseline never measured it: nothing to hold the current run to
            if after is None:
                rows.append(
                    {
                        **ident,
                        "metric": metric,
                        "baseline": before,
                        "current": None,
                        "delta": None,
                        "interval": None,
                        "tolerance": tol.said_for(metric),
                        "status": "FAIL: absent now",
                    }
                )
                continue
            delta = after - before
            sign = -1 if metric in HIGHER_IS_BETTER else 1
            worse = sign * delta
            diff = paired(entry, now[key], metric)
            if worse > tol.allowed(before) + EPS:
                # The interval must lie wholly on the worse side of zero for a regression.
                real = diff is None or (diff.high < -EPS if sign < 0 else diff.low > EPS)
                status = "FAIL" if real else "ok (within noise)"
            else:
                status = "better" if worse < -EPS else "ok"
            rows.append(
                {
                    **ident,
                    "metric": metric,
                    "baseline": before,
                    "current": after,
                    "delta": delta,
                    "interval": (diff.low, diff.high, diff.transcripts) if diff else None,
                    "tolerance": ("-" if metric in HIGHER_IS_BETTER else "+") + tol.said_for(metric),
                    "status": status,
                }
            )
    known = {_key(e) for e in baseline}
    for key in now.keys() - known:
        rows.append(
            {
                "strategy": key[0],
                "model": key[1],
                "variant": key[2],
                "metric": "(entry)",
                "baseline": None,
                "current": None,
                "delta": None,
                "interval": None,
                "tolerance": "",
                "status": "new (not in baseline)",
            }
        )
    columns = ["strategy", "model", "variant", "metric", "baseline", "current", "delta", "interval", "tolerance"]
    return pd.DataFrame(rows, columns=[*columns, "status"])


def failed(table: pd.DataFrame) -> bool:
    return bool(table["status"].str.startswith("FAIL").any()) if not table.empty else False


def format_check(table: pd.DataFrame, only_moved: bool = True) -> str:
    """The table a person reads: by default only rows that moved or failed."""
    if table.empty:
        return "(nothing to compare)"
    shown = table if not only_moved else table[table["status"] != "ok"]
    if shown.empty:
        return f"all {len(table)} checks within tolerance; nothing moved"
    shown = shown.copy()
    shown["interval"] = [_fmt_interval(m, v) for m, v in zip(shown["metric"], shown["interval"])]
    for col in ("baseline", "current", "delta"):
        shown[col] = [_fmt(m, v, col == "delta") for m, v in zip(shown["metric"], shown[col])]
    shown = shown.rename(columns={"interval": "95% interval of delta (paired, n)"})
    if not shown["variant"].astype(bool).any():
        shown = shown.drop(columns="variant")
    return shown.to_string(index=False)


def _fmt_interval(metric: str, value: Any) -> str:
    if not value:
        return "-"
    low, high, n = value
    return f"[{_fmt(metric, low, True)}, {_fmt(metric, high, True)}] n={n}"


def regressions(table: pd.DataFrame) -> list[str]:
    """One sentence per failed check: the metric, the delta, its interval, the tolerance."""
    out = []
    for row in table[table["status"].str.startswith("FAIL")].to_dict("records"):
        who = " ".join(x for x in (row["strategy"], row["model"], row.get("variant") or "") if x)
        if row["delta"] is None:
            out.append(f"{who}: {row['metric']} {row['status'][6:]}")
            continue
        where = (
            f", 95% interval of the paired difference {_fmt_interval(row['metric'], row['interval'])} excludes zero"
            if row["interval"]
            else " (no per-transcript numbers in the baseline: tolerance only)"
        )
        out.append(
            f"{who}: {row['metric']} moved {_fmt(row['metric'], row['delta'], True)} "
            f"(tolerance {row['tolerance']}){where}"
        )
    return out


def _fmt(metric: str, value: Any, signed: bool) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric in HIGHER_IS_BETTER:
        return f"{value:+.2%}" if signed else f"{value:.2%}"
    if float(value).is_integer():
        return f"{int(value):+,}" if signed else f"{int(value):,}"
    return f"{value:+,.4f}" if signed else f"{value:,.4f}"


def current_entries(results: Sequence[str | Path]) -> tuple[list[dict[str, Any]], int]:
    rs = gather(results)
    if not rs.summaries:
        raise InputError(", ".join(map(str, results)), None, "no complete result cells found")
    return summarise(rs.comparison, cells_frame(rs.summaries)), len(rs.summaries)


def run_sweep(overrides: Sequence[str]) -> Path:
    """Run ``ctxbench run -m OVERRIDES`` into a fresh sweep folder; return it (its jobs' cells.json
    name exactly the cells this run produced or reused)."""
    sweep_dir = Path(tempfile.mkdtemp(prefix="ctxbench-check-"))
    cmd = [
        sys.executable,
        "-m",
        "ctxbench.cli",
        "run",
        "-m",
        *overrides,
        f"hydra.sweep.dir={sweep_dir}",
        "progress=false",
    ]
    print("running:", " ".join(cmd[2:]), flush=True)
    done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        raise ConfigError(f"ctxbench run exited with {done.returncode}; nothing checked")
    return sweep_dir


def baseline_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctxbench baseline", description="Store the current results summary as JSON.")
    p.add_argument("results", nargs="*", default=["results"], help="result folders (default: ./results)")
    p.add_argument("--out", required=True, help="baseline JSON file to write")
    return p


def baseline_cli(argv: Sequence[str]) -> int:
    args = baseline_parser().parse_args(list(argv))
    entries, cells = current_entries(args.results)
    data = {
        "schema": BASELINE_SCHEMA,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_revision": git_revision(),
        "sources": [str(r) for r in args.results],
        "cells": cells,
        "entries": entries,
    }
    out = Path(args.out)
    write_text_atomic(out, json.dumps(data, indent=1, sort_keys=False) + "\n")  # a full disk keeps the old one
    print(f"baseline: {len(entries)} entries from {cells} cells -> {out}")
    return 0


def check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ctxbench check",
        description="Compare results with a baseline; exit 1 when a metric moved past its tolerance and the 95% "
        "interval of the difference, paired by transcript, excludes zero.",
        epilog="Default tolerances: "
        + ", ".join(f"{k}={v}" for k, v in DEFAULT_TOLERANCES.items())
        + ". Higher-is-better metrics (savings, retention) may drop by the tolerance, the others may rise by it. "
        "N% is relative to the baseline; metric=off disables a check. Also checkable: tokens_sent, peak, cost_usd.",
    )
    p.add_argument("results", nargs="*", help="result folders to check (default: ./results, unless --run)")
    p.add_argument("--baseline", required=True, help="baseline JSON written by `ctxbench baseline`")
    p.add_argument("--tolerance", action="append", default=[], metavar="METRIC=VALUE", help="repeatable")
    p.add_argument("--allow-missing", action="store_true", help="baseline entries absent from the results pass")
    p.add_argument("--all", action="store_true", help="show every check, not only what moved")
    p.add_argument(
        "--run",
        nargs=argparse.REMAINDER,
        metavar="OVERRIDES",
        help="first run `ctxbench run -m OVERRIDES` and check exactly its cells (must come last)",
    )
    return p


def check_cli(argv: Sequence[str]) -> int:
    args = check_parser().parse_args(list(argv))
    tolerances = parse_tolerances(args.tolerance)
    baseline = load_baseline(args.baseline)
    results = list(args.results)
    if args.run is not None:
        results.append(str(run_sweep(args.run)))
    entries, cells = current_entries(results or ["results"])
    table = compare(baseline["entries"], entries, tolerances, args.allow_missing)
    print(f"ctxbench check: {cells} cells against {args.baseline} ({len(baseline['entries'])} baseline entries)")
    print(format_check(table, only_moved=not args.all))
    if failed(table):
        bad = regressions(table)
        print(f"\nREGRESSION: {len(bad)} check(s) failed:\n  " + "\n  ".join(bad))
        return 1
    noise = int((table["status"] == "ok (within noise)").sum()) if not table.empty else 0
    extra = f" ({noise} past it only within noise: their interval includes zero)" if noise else ""
    print(f"\nOK: no metric moved past its tolerance with an interval that excludes zero{extra}")
    return 0
