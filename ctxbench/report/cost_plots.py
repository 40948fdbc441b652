"""Cost plots: what a strategy saves in money against what it saves in tokens once the provider's
prompt cache is priced, and the calls where a compaction layer invalidated the cache."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ctxbench.report.plots import Plot, _pick, _series, label

MAX_ANNOTATED = 6


def cost_vs_token_savings(comparison: pd.DataFrame) -> Plot:
    plot = Plot("cost_vs_token_savings", "Cost savings against token savings (with prompt caching)")
    if "cost_savings_vs_none" not in comparison or comparison["cost_savings_vs_none"].isna().all():
        plot.note = "No prompt-cache pricing in these results (a model config without a cache block, or older results)."
        return plot
    fig, ax = plt.subplots(figsize=(8, 6), layout="constrained")
    variants = comparison["variant"] if "variant" in comparison else [""] * len(comparison)
    annotate = len(comparison) <= MAX_ANNOTATED  # more points: a legend instead of overlapping labels
    for i, (row, variant) in enumerate(zip(comparison.itertuples(), variants, strict=True)):
        x, y = 100 * row.savings_vs_none, 100 * row.cost_savings_vs_none
        name = f"{label(row.strategy, variant)} / {row.model}"
        ax.scatter(x, y, s=50, color=plt.cm.tab20(i % 20), zorder=3, label=None if annotate else name)
        if annotate:
            ax.annotate(name, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    low = min(0.0, 100 * comparison[["savings_vs_none", "cost_savings_vs_none"]].min().min())
    ax.plot([low, 100], [low, 100], color="0.6", ls=":", lw=1, label="cost savings = token savings")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("token savings vs the full history (%)")
    ax.set_ylabel("cost savings vs the full history, both with prompt caching (%)")
    ax.set_title(plot.title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)
    plot.figure = fig
    plot.note = (
        "Below the dotted line a strategy saves less money than tokens: its rewrites of early messages make the "
        "provider bill the rest of the prompt uncached (docs/cost.md)."
    )
    return plot


def cache_over_calls(cells: pd.DataFrame, calls: pd.DataFrame, transcript: str | None = None) -> Plot:
    plot = Plot("cache_over_calls", "Prompt tokens served from the cache per call")
    if calls.empty or "cached_tokens" not in calls or calls["cached_tokens"].isna().all():
        plot.note = "No prompt-cache columns in these per-call records."
        return plot
    transcript, model = _pick(cells, transcript, None)
    plot.title = f"Share of the prompt served from the cache: transcript {transcript}, model {model}"
    series = _series(cells, calls, transcript, model)
    fig, axes = plt.subplots(
        len(series), 1, figsize=(10, 1.3 * len(series) + 1.2), sharex=True, squeeze=False, layout="constrained"
    )
    for i, ((name, frame), ax) in enumerate(zip(series, axes[:, 0], strict=True)):
        color = plt.cm.tab10(i % 10)
        billed = frame["cached_tokens"] + frame["cache_write_tokens"] + frame["uncached_tokens"]
        share = 100 * frame["cached_tokens"] / billed.where(billed > 0)
        ax.plot(frame["call"], share, lw=1.2, color=color)
        broken = frame[frame["cache_lost_tokens"] > 0]
        ax.scatter(broken["call"], share[broken.index], marker="v", color="black", s=12, zorder=4)
        ax.set_ylim(-5, 105)
        ax.set_ylabel("% cached", fontsize=8)
        ax.set_title(f"{name}: {len(broken)} calls invalidated the cache", fontsize=9, loc="left")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("LLM call (index in the transcript)")
    fig.suptitle(plot.title)
    plot.figure = fig
    plot.note = (
        "Triangles: calls whose prompt rewrote part of the previous one (a compaction layer, or a strategy's own "
        "prompt update such as DB-GPT's progress block), invalidating the cache from that point; "
        "summary.json's cache_invalidations_by_layer counts them by layer."
    )
    return plot
