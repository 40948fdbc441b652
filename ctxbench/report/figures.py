"""Every figure of a report, in the order the report shows them: the plots of ``plots`` and of
``cost_plots`` (which builds on ``plots``' helpers, so the list that holds both lives above them)."""

from __future__ import annotations

import pandas as pd

from ctxbench.report.cost_plots import cache_over_calls, cost_vs_token_savings
from ctxbench.report.load import ResultSet
from ctxbench.report.plots import (
    Plot,
    cost_split,
    errors_and_retries,
    estimator_error,
    retention_vs_savings,
    swept_heatmaps,
    tokens_over_calls,
)


def all_plots(
    rs: ResultSet,
    cells: pd.DataFrame,
    calls: pd.DataFrame,
    transcript: str | None = None,
    comparison: pd.DataFrame | None = None,
) -> list[Plot]:
    """Every plot; ``comparison``: the table the report shows (with or without intervals)."""
    comparison = rs.comparison if comparison is None else comparison
    return [
        tokens_over_calls(rs, cells, calls, transcript),
        retention_vs_savings(comparison),
        errors_and_retries(comparison),
        estimator_error(cells, calls, transcript),
        *swept_heatmaps(cells),
        cost_split(cells),
        cost_vs_token_savings(comparison),
        cache_over_calls(cells, calls, transcript),
    ]
