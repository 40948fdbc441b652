"""Report and plot defects of issue 18.6, each checked on the figure or file the report writes:
labelled points, one frontier per model, a legend entry and its own colour for rejected calls,
no invisible zero series, no all-zero bars, legends beside the bars, real Markdown tables with
percentages, one-line headings, and a per-transcript table."""

from __future__ import annotations

import matplotlib.colors
import pandas as pd

from ctxbench.report.cli import report_cli
from ctxbench.report.load import gather
from ctxbench.report.plots import (
    REJECTED,
    cost_split,
    errors_and_retries,
    estimator_error,
    retention_vs_savings,
    tokens_over_calls,
)
from tests.test_report import sweep_root  # noqa: F401  (the fixture: real cells from the replay engine)


def _comparison() -> pd.DataFrame:
    rows = [
        ("none", "m1", True, 0.0, 0.30, 12, 0, 12),
        ("dbgpt", "m1", False, 0.6, 0.50, 0, 0, 0),
        ("masking", "m1", False, 0.8, 0.40, 0, 0, 0),
        ("dbgpt", "m2", False, 0.5, 0.70, 0, 0, 0),
        ("masking", "m2", False, 0.7, 0.65, 3, 2, 1),
    ]
    cols = ["strategy", "model", "reference", "savings_vs_none", "retention", "overflow_errors", "retries"]
    return pd.DataFrame([r[:-1] for r in rows], columns=cols).assign(failed_calls=[r[-1] for r in rows], variant="")


def test_points_are_labelled_and_each_model_has_its_own_frontier():
    plot = retention_vs_savings(_comparison())
    ax = plot.figure.axes[0]
    names = {t.get_text() for t in ax.texts}
    assert {"none / m1", "dbgpt / m1", "masking / m1", "dbgpt / m2", "masking / m2"} <= names  # no numbered key
    frontiers = {line.get_label(): line for line in ax.lines if line.get_label().startswith("Pareto frontier")}
    assert set(frontiers) == {"Pareto frontier (m1)", "Pareto frontier (m2)"}
    m1 = list(zip(*frontiers["Pareto frontier (m1)"].get_data()))
    assert m1 == [(60.0, 50.0), (80.0, 40.0)]  # none (the reference) is never on it, m2's points neither


def test_rejected_calls_have_their_own_colour_and_a_legend_entry(sweep_root):  # noqa: F811
    rs = gather([sweep_root])
    cells, calls = rs.cells, rs.calls()
    calls.loc[calls.index[:3], "accepted"] = False  # mark three calls rejected in the frame the plot reads
    plot = tokens_over_calls(rs, cells, calls)
    ax = plot.figure.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    assert labels.count(REJECTED) == 1
    marker = matplotlib.colors.to_hex(ax.collections[0].get_facecolor()[0])
    assert marker not in {matplotlib.colors.to_hex(line.get_color()) for line in ax.lines}


def test_zero_series_and_zero_bars_are_said_not_hidden(sweep_root):  # noqa: F811
    plot = errors_and_retries(_comparison())
    ax = plot.figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["none / m1", "masking / m2"]
    assert "dbgpt / m1" in plot.note and "masking / m1" in plot.note
    quiet = _comparison().assign(overflow_errors=0, retries=0, failed_calls=0)
    assert errors_and_retries(quiet).figure is None
    rs = gather([sweep_root])
    error_plot = estimator_error(rs.cells, rs.calls())  # exact estimators: 0% on every call
    labels = error_plot.figure.axes[0].get_legend_handles_labels()[1]
    assert len(labels) == 1 and labels[0].startswith("0% on every call:")


def test_cost_legend_sits_beside_the_bars_and_labels_fit(sweep_root):  # noqa: F811
    cells = gather([sweep_root]).cells
    plot = cost_split(cells)
    fig = plot.figure
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # outside the axes: it covers no bar
    for text in ax.texts:
        assert text.get_window_extent().x1 <= ax.get_window_extent().x1  # value labels not clipped


def test_markdown_report_has_real_tables_percentages_and_one_line_headings(sweep_root, tmp_path):  # noqa: F811
    assert report_cli([str(sweep_root), "--out", str(tmp_path), "--format", "md", "--no-progress"]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "```" not in text
    assert "| strategy | model |" in text and "|---|---|" in text
    assert "## Per transcript" in text
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert any(h.startswith("## Estimator error per call (estimated vs sent) transcript ") for h in headings)
    per_transcript = text.split("## Per transcript", 1)[1].split("\n## ", 1)[0]
    assert "%" in per_transcript and "0." not in per_transcript.split("| savings |")[0]
