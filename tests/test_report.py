"""The report on cells written in-process by the real replay engine and results store:
sweep heatmaps pivot on the two overrides that vary, retention absent is said, Pareto."""

from __future__ import annotations

import pandas as pd
import pytest

from ctxbench.errors import InputError
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ModelSpec
from ctxbench.report.cli import report_cli
from ctxbench.report.load import gather, variant_overrides
from ctxbench.report.plots import pareto, retention_vs_savings, swept_heatmaps
from ctxbench.report.tables import percent_text
from ctxbench.results.store import Cell
from ctxbench.strategies.sliding_window import SlidingWindow
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.estimators import ExactEstimator
from ctxbench.tokens.tokenizers import get_tokenizer
from tests.test_sweep import make_transcript

MODEL = ModelSpec(name="gpt-4-32k", context_window=8192, reserved_output_tokens=1024, tokenizer="cl100k_base")


@pytest.fixture(scope="module")
def sweep_root(tmp_path_factory: pytest.TempPathFactory):
    """sliding_window over budget_ratio x retry_shrink (2 x 2), one transcript, written like a sweep."""
    root = tmp_path_factory.mktemp("results") / "default"
    transcript = make_transcript("t1", 12, 60, 1)
    counter = TokenCounter(get_tokenizer("cl100k_base"))
    for ratio in (0.3, 0.9):
        for shrink in (0.5, 0.25):
            overrides = [f"strategy.budget_ratio={ratio}", f"strategy.retry_shrink={shrink}", "output.root=x"]
            cell = Cell(root, "t1", "sliding_window", MODEL.name, f"{ratio}-{shrink}".replace(".", ""))
            result = replay(
                transcript,
                SlidingWindow(budget_ratio=ratio, retry_shrink=shrink),
                ExactEstimator("cl100k_base"),
                MODEL,
                counter,
            )
            info = {"overrides": overrides, "context_window": MODEL.context_window, "estimator": "exact"}
            cell.write(calls=result.calls, events=result.events, metrics=result.summary, info=info)
    return root


def test_variant_overrides_drop_what_is_not_a_variant() -> None:
    got = variant_overrides(["strategy=dbgpt", "+strategy.params.x=1", "output.root=r", "model.context_window=9"])
    assert got == {"strategy.params.x": "1", "model.context_window": "9"}


def test_gather_reads_cells_and_calls(sweep_root) -> None:
    rs = gather([sweep_root])
    assert len(rs.summaries) == 4
    calls = rs.calls()
    assert len(calls) == 4 * 13 and set(calls["variant"]) == set(rs.cells["variant"])
    with pytest.raises(InputError, match="no such file"):
        gather([sweep_root / "nope"])


def test_heatmap_pivots_on_the_two_swept_keys(sweep_root) -> None:
    cells = gather([sweep_root]).cells
    plots = swept_heatmaps(cells)
    savings = next(p for p in plots if p.name.startswith("heatmap_savings"))
    ax = savings.figure.axes[0]
    assert {ax.get_xlabel(), ax.get_ylabel()} == {"strategy.budget_ratio", "strategy.retry_shrink"}
    # The 4 cell labels are the 4 cells' own savings.
    shown = sorted(t.get_text() for t in ax.texts)
    expected = sorted(f"{percent_text(v)}%" for v in cells["savings"])
    assert shown == expected
    assert any("No retention" in p.note for p in plots)  # no probes here: said, not drawn


def test_retention_absent_is_said_and_pareto_marks_the_frontier() -> None:
    plot = retention_vs_savings(pd.DataFrame({"strategy": ["a"], "model": ["m"], "savings_vs_none": [0.5]}))
    assert plot.figure is None and "No retention" in plot.note
    data = pd.DataFrame({"savings_vs_none": [0.1, 0.5, 0.4, 0.9], "retention": [0.9, 0.8, 0.7, 0.2]})
    assert pareto(data, "savings_vs_none", "retention") == [0, 1, 3]  # row 2 is beaten by row 1 on both


def test_report_cli_writes_everything_and_rejects_bad_format(sweep_root, tmp_path, capsys) -> None:
    assert report_cli([str(sweep_root), "--out", str(tmp_path), "--format", "html,csv", "--no-progress"]) == 0
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text()
    assert len(pd.read_csv(tmp_path / "cells.csv")) == 4
    with pytest.raises(InputError, match="--format"):
        report_cli([str(sweep_root), "--format", "pdf"])
