"""Bootstrap intervals over transcripts: seeded, around the point estimate, wider with fewer
transcripts; paired differences are zero for identical runs and exclude zero for a real drop."""

import math

import numpy as np
import pandas as pd
import pytest

from ctxbench.report.intervals import STATS, interval, paired_difference, wilson
from ctxbench.report.tables import comparison_frame, format_table


def _cells(retention, strategy="s", sent=None):
    n = len(retention)
    return pd.DataFrame(
        {
            "transcript": [f"t{i}" for i in range(n)],
            "strategy": strategy,
            "model": "m",
            "retention": retention,
            "tokens_sent_total": sent or [100 + 10 * i for i in range(n)],
            "tokens_uncompacted_total": [400] * n,
            "overflow_errors": [i % 3 for i in range(n)],
            "calls": [50] * n,
        }
    )


def test_interval_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(1)
    cells = _cells(list(rng.uniform(0.2, 0.9, 12)))
    first = interval(cells, STATS["retention"], seed=3)
    assert first == interval(cells, STATS["retention"], seed=3)
    low, high = first
    assert low < cells.retention.mean() < high
    few = interval(cells.head(4), STATS["retention"], seed=3)
    assert few[1] - few[0] > high - low  # fewer transcripts, wider interval
    s_low, s_high = interval(cells, STATS["savings_vs_none"])
    savings = 1 - cells.tokens_sent_total.sum() / cells.tokens_uncompacted_total.sum()
    assert s_low <= savings <= s_high


def test_paired_difference_zero_for_identical_runs_and_excludes_zero_for_a_drop():
    rng = np.random.default_rng(2)
    base = _cells(list(rng.uniform(0.3, 0.9, 10)))
    same = paired_difference(base, base.copy(), STATS["retention"])
    assert same.delta == 0 and same.low == 0 and same.high == 0 and not same.excludes_zero()
    worse = base.assign(retention=base.retention - rng.uniform(0.05, 0.15, 10))
    drop = paired_difference(base, worse, STATS["retention"])
    assert drop.delta < 0 and drop.high < 0 and drop.excludes_zero() and drop.transcripts == 10
    # An unpaired look at the same numbers would overlap: pairing is what separates them.
    a, b = interval(base, STATS["retention"]), interval(worse, STATS["retention"])
    assert a[0] < b[1]


def _summary(transcript, strategy, retention, sent, failed=0):
    return {
        "cell": {"transcript": transcript, "strategy": strategy, "model": "m", "overrides": []},
        "metrics": {
            "calls": 10,
            "tokens_sent_total": sent,
            "tokens_sent_peak": sent // 10,
            "tokens_uncompacted_total": 1000,
            "overflow_errors": failed,
            "retries": 0,
            "failed_calls": failed,
            "retention": retention,
            "probes_informative": 4,
            "probes_trivial": 1,
            "agent_cost_usd": sent / 1e4,
        },
    }


def test_comparison_has_intervals_reference_first_and_probe_counts():
    summaries = [_summary(f"t{i}", "none", 0.5, 1000, failed=3) for i in range(5)]
    summaries += [_summary(f"t{i}", "window", 0.4 + i / 20, 400 + 50 * i) for i in range(5)]
    table = comparison_frame(summaries, seed=1)
    assert list(table.strategy) == ["none", "window"] and list(table.reference) == [True, False]
    row = table.iloc[1]
    assert row.retention_lo <= row.retention <= row.retention_hi and row.retention_hi > row.retention_lo
    assert row.probes == 20 and row.trivial == 5
    assert math.isclose(table.iloc[0].overflow_per_call, 0.3)
    text = format_table(table)
    assert "none (ref)" in text and "[" in text and "bootstrap interval" in text
    plain = comparison_frame(summaries, ci=False)
    assert not any(c.endswith("_lo") for c in plain.columns) and "bootstrap" not in format_table(plain)


def test_paired_comparisons_within_a_shared_variant():
    from ctxbench.report.tables import paired_comparisons

    summaries = [_summary(f"t{i}", "none", 0.5, 1000) for i in range(4)]
    summaries += [_summary(f"t{i}", "window", 0.2 + i / 50, 400) for i in range(4)]
    for s in summaries:
        s["cell"]["overrides"] = ["model.context_window=16000"]  # the same variant on both sides
    table = paired_comparisons(summaries)
    row = table[(table.metric == "retention") & (table.strategy == "window")].iloc[0]
    assert row.versus == "none" and row.variant == "model.context_window=16000" and row.separated


def test_wilson_interval_of_a_hand_labelled_share():
    """The interval the probe scripts report (scripts/trivial_patterns.py, scripts/probe_ab_dump.py):
    around the share, inside [0, 1], and over a stratified sample's fractional effective size."""
    lo, hi = wilson(24 / 193, 193)
    assert 0.08 < lo < 0.124 < hi < 0.18
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, 10)[0] == 0.0
    lo, hi = wilson(0.5, 33.6)
    assert lo == pytest.approx(0.340, abs=0.001) and hi == pytest.approx(0.660, abs=0.001)
