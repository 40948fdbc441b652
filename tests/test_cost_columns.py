"""The cost columns a reader compares (issue 25.4): the baseline beside the cost, rows that did not
finish marked, and a row that costs more and also "saves" more explained."""

from __future__ import annotations

import pandas as pd

from ctxbench.report.tables import cost_notes, format_table


def _table() -> pd.DataFrame:
    # The shape of the printout: `none` had 634 calls rejected (not billed), sliding_window
    # got every call through and is cheaper than the full history over those calls.
    return pd.DataFrame(
        {
            "strategy": ["none", "sliding_window"],
            "model": ["gpt-4o", "gpt-4o"],
            "reference": [True, False],
            "calls": [1626, 1626],
            "failed_calls": [634, 0],
            "cost_savings_vs_none": [0.0, 0.315],
            "cost_usd": [73.11, 181.66],
            "baseline_cost_usd": [73.11, 265.21],
        }
    )


def test_the_baseline_and_the_unfinished_row_are_shown() -> None:
    text = format_table(_table())
    header = text.splitlines()[0]
    assert "baseline_cost_usd" in header and "cost_usd" in header
    assert "none (ref) [did not finish]" in text and "sliding_window [did not finish]" not in text
    assert "265.21" in text


def test_costing_more_and_saving_more_is_explained() -> None:
    notes = cost_notes(_table())
    [why] = [n for n in notes if n.startswith("cost: sliding_window costs more than none")]
    assert "$181.66 vs $73.11" in why and "baseline is larger ($265.21 vs $73.11)" in why
    assert "(1,626 vs 992)" in why
    assert any("none (634 calls rejected)" in n for n in notes)


def test_no_note_when_the_columns_agree() -> None:
    table = _table().assign(failed_calls=[0, 0], cost_usd=[265.21, 181.66], baseline_cost_usd=[265.21, 265.21])
    notes = cost_notes(table)
    assert len(notes) == 1 and notes[0].startswith("cost_savings_vs_none:")
