"""Bootstrap intervals over transcripts, and paired differences between two sets of cells.

A transcript is the unit of replication: its calls are not independent of each other, so every
interval resamples whole transcripts (with replacement) and recomputes the aggregate exactly as
the comparison table does (ratios of sums, means of per-transcript rates). Seeded: the same
cells give the same interval. ``wilson``: the interval of a share of hand-labelled items (probes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

LEVEL = 0.95
RESAMPLES = 2000


@dataclass(frozen=True)
class Stat:
    """An aggregate over a group's transcripts: ``mean`` of a per-transcript rate (missing values
    skipped), ``sum`` of a column, ``ratio`` of two sums, or ``1 - ratio``."""

    how: str
    num: str
    den: str | None = None

    def columns(self) -> list[str]:
        return [self.num] + ([self.den] if self.den else [])

    def _parts(self, cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        num = cells[self.num].to_numpy(dtype=float)
        if self.how == "mean":
            present = ~np.isnan(num)
            return np.where(present, num, 0.0), present.astype(float)
        if self.how == "sum":
            return np.nan_to_num(num), np.ones_like(num)
        den = cells[self.den].to_numpy(dtype=float) if self.den else np.ones_like(num)
        return np.nan_to_num(num), np.nan_to_num(den)

    def _finish(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        if self.how == "sum":
            return num
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
        return 1 - value if self.how == "one_minus_ratio" else value

    def value(self, cells: pd.DataFrame) -> float:
        num, den = self._parts(cells)
        return float(self._finish(np.array([num.sum()]), np.array([den.sum()]))[0])

    def resampled(self, cells: pd.DataFrame, picks: np.ndarray) -> np.ndarray:
        """The statistic on each resample (``picks``: resamples x transcripts row indices)."""
        num, den = self._parts(cells)
        return self._finish(num[picks].sum(axis=1), den[picks].sum(axis=1))


# Comparison-table column -> how it aggregates cells (see ctxbench.report.tables.comparison_frame).
STATS: dict[str, Stat] = {
    "retention": Stat("mean", "retention"),
    "savings_vs_none": Stat("one_minus_ratio", "tokens_sent_total", "tokens_uncompacted_total"),
    "overflow_per_call": Stat("ratio", "overflow_errors", "calls"),
    "cost_usd": Stat("sum", "cost_usd"),
    "overflow_errors": Stat("sum", "overflow_errors"),
    "retries": Stat("sum", "retries"),
    "failed_calls": Stat("sum", "failed_calls"),
    "tokens_sent": Stat("sum", "tokens_sent_total"),
}


def _picks(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _bounds(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def interval(
    cells: pd.DataFrame, stat: Stat, *, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` over the cells' transcripts (one row each)."""
    if cells.empty or any(c not in cells for c in stat.columns()):
        return (float("nan"), float("nan"))
    if "transcript" in cells:  # the same cells in any order draw the same resamples (run and report agree)
        cells = cells.sort_values("transcript", kind="stable")
    return _bounds(stat.resampled(cells, _picks(len(cells), resamples, seed)), level)


def add_intervals(
    table: pd.DataFrame,
    cells: pd.DataFrame,
    keys: Sequence[str],
    columns: Sequence[str],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> pd.DataFrame:
    """``COL_lo`` and ``COL_hi`` beside each of ``columns`` in a table grouped by ``keys``."""
    table = table.copy()
    groups = {k if isinstance(k, tuple) else (k,): g for k, g in cells.groupby(list(keys), dropna=False)}
    for col in columns:
        if col not in table or col not in STATS:
            continue
        lows, highs = [], []
        for _, row in table.iterrows():
            group = groups.get(tuple(row[k] for k in keys), pd.DataFrame())
            low, high = interval(group, STATS[col], resamples=resamples, seed=seed, level=level)
            lows.append(low)
            highs.append(high)
        at = table.columns.get_loc(col) + 1
        table.insert(at, f"{col}_lo", lows)
        table.insert(at + 1, f"{col}_hi", highs)
    return table


@dataclass(frozen=True)
class Paired:
    """``after - before`` of a statistic on the transcripts both sides have, with its interval."""

    delta: float
    low: float
    high: float
    transcripts: int

    def excludes_zero(self) -> bool:
        return bool(self.low > 0 or self.high < 0)


def paired_difference(
    before: pd.DataFrame,
    after: pd.DataFrame,
    stat: Stat,
    *,
    on: str = "transcript",
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> Paired | None:
    """The difference of ``stat`` between two cell sets, paired by transcript: each resample draws
    the same transcripts on both sides. None when they share no transcript."""
    if any(c not in before or c not in after for c in stat.columns()):
        return None
    both = before.merge(after, on=on, suffixes=("_a", "_b"))
    if both.empty:
        return None
    both = both.sort_values(on, kind="stable")  # the same pairs in any order draw the same resamples
    side_a = both[[f"{c}_a" for c in stat.columns()]].set_axis(stat.columns(), axis=1)
    side_b = both[[f"{c}_b" for c in stat.columns()]].set_axis(stat.columns(), axis=1)
    picks = _picks(len(both), resamples, seed)
    diffs = stat.resampled(side_b, picks) - stat.resampled(side_a, picks)
    low, high = _bounds(diffs, level)
    return Paired(stat.value(side_b) - stat.value(side_a), low, high, len(both))


def wilson(p: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a share ``p`` over ``n`` (95% at z=1.96; ``n`` may be a stratified
    sample's effective size, a float): for hand-labelled samples, where there are no transcripts to
    resample. (0, 1) when ``n`` is 0."""
    if n <= 0:
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
