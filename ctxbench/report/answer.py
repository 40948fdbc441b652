"""The report's first answer: which strategy, per model and window. From the comparison table:
the strategy that kept the most facts, the one that saved the most tokens, and the Pareto frontier
between them (no other strategy on that model and window keeps more while saving more)."""

from __future__ import annotations

import pandas as pd

from ctxbench.report.plots import label, pareto
from ctxbench.report.tables import percent_text


def _named(row: pd.Series) -> str:
    return label(str(row["strategy"]), row.get("variant", ""))


def _pct(value: float) -> str:
    return f"{percent_text(value)}%"


def which_strategy(comparison: pd.DataFrame) -> pd.DataFrame:
    """One row per model (and window, when they differ): most retention, most savings, the frontier."""
    if comparison.empty:
        return pd.DataFrame()
    data = comparison[~comparison["reference"]] if "reference" in comparison else comparison
    keys = ["model", "window"] if "window" in data else ["model"]
    rows = []
    has_retention = "retention" in data and data["retention"].notna().any()
    for key, group in data.groupby(keys, dropna=False, sort=True):
        values = key if isinstance(key, tuple) else (key,)
        row: dict[str, object] = dict(zip(keys, values))
        best_savings = group.loc[group["savings_vs_none"].idxmax()]
        if has_retention:
            scored = group.dropna(subset=["retention"])
            if not scored.empty:
                best = scored.loc[scored["retention"].idxmax()]
                row["most retention"] = (
                    f"{_named(best)} ({_pct(best['retention'])} kept, {_pct(best['savings_vs_none'])} saved)"
                )
                front = scored.loc[pareto(scored, "savings_vs_none", "retention")].sort_values("savings_vs_none")
                row["Pareto frontier (savings ↑)"] = ", ".join(_named(r) for _, r in front.iterrows())
        kept = (
            f", {_pct(best_savings['retention'])} kept"
            if has_retention and pd.notna(best_savings.get("retention"))
            else ""
        )
        row["most savings"] = f"{_named(best_savings)} ({_pct(best_savings['savings_vs_none'])} saved{kept})"
        rows.append(row)
    frame = pd.DataFrame(rows)
    if "window" in frame:
        frame["window"] = frame["window"].map(lambda v: f"{int(v):,}" if pd.notna(v) else "")
    order = [c for c in ("model", "window", "most retention", "most savings", "Pareto frontier (savings ↑)")]
    return frame[[c for c in order if c in frame]]
