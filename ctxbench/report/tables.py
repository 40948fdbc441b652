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
    optional = {"retention": ("retention", "mean"), "cost_usd": ("total_cost_usd", "sum")}
    agg.update({k: v for k, v in optional.items() if v[0] in cells})
    if "total_cost_usd" not in cells and "agent_cost_usd" in cells:
        agg["cost_usd"] = ("agent_cost_usd", "sum")
    table = cells.groupby(keys, dropna=False).agg(**agg).reset_index()
    table.insert(table.columns.get_loc("uncompacted"), "savings_vs_none", 1 - table.tokens_sent / table.uncompacted)
    table = table.drop(columns="uncompacted")
    if not table.variant.astype(bool).any():
        table = table.drop(columns="variant")
    return table.sort_values(["model", "strategy"]).reset_index(drop=True)


def format_table(table: pd.DataFrame) -> str:
    """A plain-text table for the terminal."""
    if table.empty:
        return "(no results)"
    shown = table.copy()
    for col in shown.columns:
        if col in ("savings_vs_none", "retention"):
            shown[col] = shown[col].map(lambda v: f"{v:6.1%}")
        elif col == "cost_usd":
            shown[col] = shown[col].map(lambda v: f"{v:,.2f}")
        elif pd.api.types.is_integer_dtype(shown[col]):
            shown[col] = shown[col].map(lambda v: f"{v:,}")
    return shown.to_string(index=False)
