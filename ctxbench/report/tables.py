"""Summaries into pandas tables: the comparison every run prints and every report starts from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

# Overrides that choose what is compared or where it goes, not a variant of a strategy.
NOT_VARIANT = ("strategy=", "model=", "dataset", "output", "progress", "hydra", "experiment=")


def cells_frame(summaries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per cell: its identity (cell.*) and its flat numeric metrics."""
    rows = []
    for s in summaries:
        cell, metrics = s["cell"], s["metrics"]
        row = {k: cell.get(k) for k in ("transcript", "strategy", "model", "tokenizer", "estimator", "config_hash")}
        row["variant"] = " ".join(o for o in cell.get("overrides") or () if not o.lstrip("+~").startswith(NOT_VARIANT))
        row.update({k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)})
        rows.append(row)
    return pd.DataFrame(rows)


def comparison_frame(summaries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Per strategy x model (x variant): totals over transcripts. Savings are against the
    full history, which is exactly what `none` sends each call."""
    cells = cells_frame(summaries)
    if cells.empty:
        return cells
    keys = ["strategy", "model", "variant"]
    agg = {
        "transcripts": ("transcript", "nunique"),
        "calls": ("calls", "sum"),
        "tokens_sent": ("tokens_sent_total", "sum"),
        "peak": ("tokens_sent_peak", "max"),
        "uncompacted": ("tokens_uncompacted_total", "sum"),
        "overflow_errors": ("overflow_errors", "sum"),
        "retries": ("retries", "sum"),
        "failed_calls": ("failed_calls", "sum"),
    }
    optional = {
        "retention": ("retention", "mean"),
        "recoverable": ("recoverable", "mean"),
        "cost_usd": ("cost_usd", "sum"),
    }
    agg.update({k: v for k, v in optional.items() if v[0] in cells})
    if "cost_usd" not in cells:  # results written before prompt caching was priced
        agg["cost_usd"] = ("total_cost_usd", "sum") if "total_cost_usd" in cells else ("agent_cost_usd", "sum")
    if "agent_cost_usd" not in cells:
        agg.pop("cost_usd", None)
    cached = "full_history_cost_usd" in cells and "cached_tokens_total" in cells
    if cached:
        cells = _with_cache_sums(cells)
        agg.update(
            strategy_cost=("strategy_cost", "sum"),
            full_cost=("full_history_cost_usd", "sum"),
            cached=("cached_tokens_total", "sum"),
            billed=("billed_tokens", "sum"),
        )
    table = cells.groupby(keys, dropna=False).agg(**agg).reset_index()
    at = table.columns.get_loc("uncompacted")
    table.insert(at, "savings_vs_none", 1 - table.tokens_sent / table.uncompacted)
    if cached:
        # Same baseline as savings_vs_none: the full history, under the same prompt caching.
        table.insert(at + 1, "cost_savings_vs_none", 1 - table.strategy_cost / table.full_cost)
        table.insert(at + 2, "cache_hit_share", table.cached / table.billed.where(table.billed > 0))
        table = table.drop(columns=["strategy_cost", "full_cost", "cached", "billed"])
    table = table.drop(columns="uncompacted")
    if not table.variant.astype(bool).any():
        table = table.drop(columns="variant")
    return table.sort_values(["model", "strategy"]).reset_index(drop=True)


def _with_cache_sums(cells: pd.DataFrame) -> pd.DataFrame:
    """The strategy's own cost (agent calls + compaction, not the judge) and the prompt tokens
    billed, per cell, for the ratios of the comparison table."""
    cells = cells.copy()
    compaction = cells["compaction_cost_usd"].fillna(0) if "compaction_cost_usd" in cells else 0.0
    cells["strategy_cost"] = cells["agent_cost_usd"] + compaction
    parts = ["cached_tokens_total", "cache_write_tokens_total", "uncached_tokens_total"]
    cells["billed_tokens"] = cells[[p for p in parts if p in cells]].sum(axis=1)
    return cells


def format_table(table: pd.DataFrame) -> str:
    """A plain-text table for the terminal."""
    if table.empty:
        return "(no results)"
    shown = table.copy()
    for col in shown.columns:
        if col in ("savings_vs_none", "cost_savings_vs_none", "cache_hit_share", "retention", "recoverable"):
            shown[col] = shown[col].map(lambda v: f"{v:6.1%}")
        elif col == "cost_usd":
            shown[col] = shown[col].map(lambda v: f"{v:,.2f}")
        elif pd.api.types.is_integer_dtype(shown[col]):
            shown[col] = shown[col].map(lambda v: f"{v:,}")
    return shown.to_string(index=False)


RETENTION_BREAKDOWNS = {
    "retention_by_kind": "Retention by probe type",
    "retention_by_age_calls": "Retention by fact age (calls since stated)",
    "retention_by_compactions": "Retention by compactions so far",
}


def retention_breakdown(summaries: Sequence[dict[str, Any]], key: str) -> pd.DataFrame:
    """Strategy x model rows, one column per group (probe type, age bucket, compactions):
    the mean over transcripts of each transcript's retention rate in that group."""
    rows = []
    for s in summaries:
        cell = s["cell"]
        for group, rate in (s["metrics"].get(key) or {}).items():
            if rate is not None:
                rows.append({"strategy": cell["strategy"], "model": cell["model"], "group": group, "rate": rate})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows).pivot_table(index=["strategy", "model"], columns="group", values="rate", aggfunc="mean")
    frame = frame[sorted(frame.columns, key=_group_order)]
    return frame.round(3).reset_index().rename_axis(columns=None)


def _group_order(group: str) -> tuple[float, str]:
    """Numeric buckets ("0-9", "10-49", "100+") by their lower bound, names alphabetically."""
    head = group.split("-")[0].rstrip("+")
    return (float(head), group) if head.isdigit() else (float("inf"), group)


def dropped_by_layer(summaries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """How many facts each strategy lost, by the layer that ran when each was first missing."""
    rows = [
        {"strategy": s["cell"]["strategy"], "model": s["cell"]["model"], "layer": "+".join(d["layers"])}
        for s in summaries
        for d in s["metrics"].get("dropped") or ()
        if d.get("status") == "lost"
    ]
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).value_counts().rename("facts_lost").reset_index()


def retention_tables(summaries: Sequence[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """Titled retention tables for reports; empty tables are left out."""
    tables = {title: retention_breakdown(summaries, key) for key, title in RETENTION_BREAKDOWNS.items()}
    tables["Facts lost, by the layer that dropped them"] = dropped_by_layer(summaries)
    return {title: table for title, table in tables.items() if not table.empty}
