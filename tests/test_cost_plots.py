"""The report's cost plots, drawn from real replays with prompt caching."""

import pandas as pd

from ctxbench.layers.mask_observations import MaskObservations
from ctxbench.replay.engine import replay
from ctxbench.report.cost_plots import cache_over_calls, cost_vs_token_savings
from ctxbench.report.tables import cells_frame, comparison_frame
from ctxbench.run_app import compaction_cost
from ctxbench.strategies.none import FullHistory
from ctxbench.strategies.pipeline import LayeredStrategy
from ctxbench.tokens import ExactEstimator, TokenCounter, get_tokenizer
from tests.helpers import coding_transcript
from tests.test_prefix_cache import GPT4O


def test_cost_plots_draw_savings_and_mark_invalidating_calls():
    t = coding_transcript(rounds=20)
    counter = TokenCounter(get_tokenizer("cl100k_base"))
    summaries, frames = [], []
    for name, strategy in [("none", FullHistory()), ("masking", LayeredStrategy([{"layer": MaskObservations(n=3)}]))]:
        result = replay(t, strategy, ExactEstimator("cl100k_base"), GPT4O, counter)
        metrics = {**result.summary, **compaction_cost(None, result.summary)}
        summaries.append({"cell": {"transcript": t.id, "strategy": name, "model": GPT4O.name}, "metrics": metrics})
        frames.append(pd.DataFrame(result.calls).assign(transcript=t.id, strategy=name, model=GPT4O.name, variant=""))
    comparison = comparison_frame(summaries).assign(variant="")
    assert cost_vs_token_savings(comparison).figure is not None
    cells = cells_frame(summaries)
    calls = pd.concat(frames, ignore_index=True)
    calls["layers"] = calls["layers"].map(";".join)
    plot = cache_over_calls(cells, calls)
    titles = [ax.get_title(loc="left") for ax in plot.figure.axes]
    invalidated = summaries[1]["metrics"]["cache_invalidations"]
    assert invalidated > 0 and f"masking: {invalidated} calls invalidated the cache" in titles
    assert "none: 0 calls invalidated the cache" in titles


def test_cost_plots_explain_results_without_caching():
    empty = pd.DataFrame({"strategy": ["none"], "savings_vs_none": [0.0]})
    assert cost_vs_token_savings(empty).figure is None
    assert "No prompt-cache" in cache_over_calls(pd.DataFrame(), pd.DataFrame()).note
