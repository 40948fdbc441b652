"""The report's retention parts: intervals in the comparison (hidden with --no-ci), the per-probe
table (which strategy lost which fact, where), paired differences, and a retention plot with error
bars and the reference outside the frontier."""

from __future__ import annotations

import csv

from matplotlib.container import ErrorbarContainer

from ctxbench.report.cli import report_cli
from ctxbench.report.load import gather
from ctxbench.report.plots import retention_vs_savings
from ctxbench.report.tables import comparison_frame
from ctxbench.results.store import Cell, seal
from ctxbench.strategies.none import FullHistory
from ctxbench.strategies.sliding_window import SlidingWindow
from tests.test_gate_paired import _write


def _results(tmp_path):
    root = tmp_path / "results"
    _write(root, SlidingWindow(budget_ratio=0.3))
    _write(tmp_path / "none", FullHistory())
    for cell in (tmp_path / "none").rglob("summary.json"):  # the same cells under strategy "none"
        target = Cell(root, cell.parent.name.rsplit("-", 1)[0], "none", "small", "h").path
        target.mkdir(parents=True)
        text = cell.read_text().replace('"strategy": "sliding_window"', '"strategy": "none"')
        (target / "summary.json").write_text(text)
        for name in ("calls.jsonl", "events.jsonl"):
            (target / name).write_bytes((cell.parent / name).read_bytes())
        seal(target)  # a cell made by hand is complete once its manifest lists its files
    return root


def test_report_writes_per_probe_and_paired_tables_with_intervals(tmp_path, capsys):
    root = _results(tmp_path)
    out = tmp_path / "report"
    assert report_cli([str(root), "--out", str(out), "--format", "csv,md", "--no-progress"]) == 0
    with (out / "per_probe_outcome_by_strategy.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows and {"question", "gold", "stated_at", "none / small", "sliding_window / small"} <= set(rows[0])
    assert any(r["sliding_window / small"].startswith("lost (call ") for r in rows)
    with (out / "paired_differences_by_transcript.csv").open() as f:
        paired = list(csv.DictReader(f))
    retention = next(r for r in paired if r["metric"] == "retention" and r["versus"] == "none")
    assert float(retention["low"]) <= float(retention["difference"]) <= float(retention["high"])
    md = (out / "report.md").read_text()
    assert "none (ref)" in md and "bootstrap interval" in md
    plain = tmp_path / "plain"
    assert report_cli([str(root), "--out", str(plain), "--format", "md", "--no-progress", "--no-ci"]) == 0
    text = (plain / "report.md").read_text()
    assert "none (ref)" in text and "bootstrap interval" not in text


def test_retention_plot_draws_intervals_and_keeps_the_reference_off_the_frontier(tmp_path):
    comparison = comparison_frame(gather([_results(tmp_path)]).summaries)
    plot = retention_vs_savings(comparison)
    ax = plot.figure.axes[0]
    assert any(isinstance(c, ErrorbarContainer) for c in ax.containers)
    frontier = next(line for line in ax.get_lines() if line.get_label() == "Pareto frontier")
    reference = comparison[comparison.reference].iloc[0]
    assert reference.savings_vs_none * 100 not in list(frontier.get_xdata())
