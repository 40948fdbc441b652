"""The report's plots (matplotlib, Agg). Each returns a ``Plot``: a figure, or the reason
there is nothing to draw (the report prints the reason instead of an empty picture)."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.patheffects  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ctxbench.replay.contexts import FILE as CONTEXTS_FILE  # noqa: E402
from ctxbench.report.load import ResultSet  # noqa: E402
from ctxbench.report.tables import natural as natural_text  # noqa: E402
from ctxbench.report.tables import percent_text  # noqa: E402

MAX_LINES = 8  # more lines than this on one axis are unreadable
REJECTED = "rejected call (prompt over the window)"
REJECTED_COLOUR = "#8b008b"  # dark magenta: not in tab10 (the strategies' colours), not the window's black
THRESHOLD_KEYS = ("threshold", "budget_ratio", "headroom_ratio")


@dataclass
class Plot:
    name: str  # file stem
    title: str
    figure: Figure | None = None
    note: str = ""  # what the reader should know (or why there is no figure)


def short_variant(variant: str) -> str:
    """`strategy.params.warning_threshold=0.6 model.context_window=8192`
    -> `warning_threshold=0.6, context_window=8192`."""
    return ", ".join(part.rsplit(".", 1)[-1] if "=" not in part else _short_key(part) for part in variant.split())


def _short_key(part: str) -> str:
    key, value = part.split("=", 1)
    return f"{key.rsplit('.', 1)[-1]}={value}"


def label(strategy: str, variant: Any) -> str:
    return f"{strategy} [{short_variant(variant)}]" if isinstance(variant, str) and variant else strategy


def _pick(cells: pd.DataFrame, transcript: str | None, model: str | None) -> tuple[str, str]:
    """The transcript and model a per-call plot shows: as asked, else the longest transcript
    of the most common model."""
    if model is None:
        model = str(cells["model"].value_counts().index[0])
    if transcript is None:
        subset = cells[cells["model"] == model]
        transcript = str(subset.sort_values(["calls", "transcript"], ascending=[False, True])["transcript"].iloc[0])
    return transcript, model


def _series(
    cells: pd.DataFrame, calls: pd.DataFrame, transcript: str, model: str, left_out: list[str] | None = None
) -> list[tuple[str, pd.DataFrame]]:
    """(label, calls) per strategy x variant for one transcript and model, at most MAX_LINES; the
    labels of the series not drawn go to ``left_out`` (the plot's note says them)."""
    chosen = calls[(calls["transcript"] == transcript) & (calls["model"] == model)]
    groups = sorted(chosen.groupby(["strategy", "variant"], sort=False, dropna=False), key=lambda g: natural(g[0]))
    if len(groups) > MAX_LINES:  # a sweep: keep the first variant of each strategy
        firsts: dict[str, Any] = {}
        for key, frame in groups:
            firsts.setdefault(key[0], (key, frame))
        kept = list(firsts.values())[:MAX_LINES]
        if left_out is not None:
            left_out += [label(s, v) for (s, v), _ in groups if all(k != (s, v) for k, _ in kept)]
        groups = kept
    return [(label(s, v), frame.sort_values("call")) for (s, v), frame in groups]


def natural(key: Any) -> tuple:
    """``tables.natural`` over each part of a group key."""
    return tuple(natural_text(part) for part in (key if isinstance(key, tuple) else (key,)))


def recorded_thresholds(cell_dir: str | Path) -> list[tuple[str, float]] | None:
    """The levels a cell's strategy acted at as it ran: from the cell's recorded contexts (each step's
    ratio times the budget it used), else None (cells written without them)."""
    path = Path(cell_dir) / CONTEXTS_FILE
    if not path.exists():
        return None
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            header = json.loads(handle.readline())
    except (OSError, EOFError, ValueError):
        return None
    merged: dict[float, list[str]] = {}
    for t in header.get("thresholds") or ():
        merged.setdefault(float(t["tokens"]), []).append(f"{t['layer']} {t['ratio']:g}")
    return [(", ".join(names), level) for level, names in sorted(merged.items())]


def event_budgets(cell_dir: str | Path) -> set[int]:
    """The budgets a cell's ``context.status`` events report (what DB-GPT-style thresholds apply to)."""
    path = Path(cell_dir) / "events.jsonl"
    budgets: set[int] = set()
    if path.exists():
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if '"context.status"' in line:
                    try:
                        budget = json.loads(line).get("budget")
                    except ValueError:
                        continue
                    if isinstance(budget, int):
                        budgets.add(budget)
    return budgets


def threshold_lines(rs: ResultSet, cell_dirs: list[str]) -> list[tuple[str, float]]:
    """Token levels where a strategy acts, as the cell used them: recorded in its contexts file, else
    its job's ratio keys (``*threshold*``, ``budget_ratio``, ``*headroom_ratio``, a ``thresholds``
    map) times the budget its events report, else times the budget its config gives (window -
    reserved output; the raw window for headroom ratios)."""
    lines: dict[str, float] = {}
    for cell_dir in cell_dirs:
        recorded = recorded_thresholds(cell_dir)
        if recorded is not None:
            for key, level in recorded:
                if level not in lines.values():
                    lines[key] = level
            continue
        cfg = rs.config_of(cell_dir)
        if not cfg or not isinstance(cfg.get("strategy"), dict):
            continue
        strategy, mdl = cfg["strategy"], cfg.get("model") or {}
        window = int(mdl.get("context_window") or 0)
        reserved = int(mdl.get("reserved_output_tokens") or 0)
        budget_cfg = strategy.get("budget") if isinstance(strategy.get("budget"), dict) else {}
        if isinstance(budget_cfg.get("max_context_tokens"), int):
            window = budget_cfg["max_context_tokens"] if budget_cfg["max_context_tokens"] > 0 else 120_000
        if isinstance(budget_cfg.get("reserved_tokens"), int):
            reserved = budget_cfg["reserved_tokens"]
        budgets = event_budgets(cell_dir)
        used = max(budgets) if len(budgets) == 1 else None  # the budget the strategy itself reported
        for key, value in _ratio_keys(strategy).items():
            base = used if used is not None and "headroom" not in key else None
            level = value * (base if base is not None else window if "headroom" in key else window - reserved)
            if level not in lines.values():  # `params.warning_threshold` and `thresholds.warning` are one line
                lines[f"{key}={value:g}"] = level
    return sorted(lines.items(), key=lambda kv: kv[1])[:4]


def _ratio_keys(node: Any, prefix: str = "") -> dict[str, float]:
    """Ratio settings in (0, 1] anywhere in a strategy config (thresholds maps included)."""
    out: dict[str, float] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            name = str(key)
            if isinstance(value, dict | list):
                sub = _ratio_keys(value, name)
                out.update(sub)
            elif (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and 0 < value <= 1
                and (any(k in name for k in THRESHOLD_KEYS) or prefix == "thresholds")
            ):
                out[name] = float(value)
    elif isinstance(node, list):
        for item in node:
            out.update(_ratio_keys(item, prefix))
    return out


def tokens_over_calls(
    rs: ResultSet, cells: pd.DataFrame, calls: pd.DataFrame, transcript: str | None = None, model: str | None = None
) -> Plot:
    plot = Plot("tokens_over_calls", "Prompt tokens sent per call")
    if calls.empty:
        plot.note = "No per-call records found."
        return plot
    transcript, model = _pick(cells, transcript, model)
    plot.title = f"Prompt tokens sent per call: transcript {transcript}, model {model}"
    fig, ax = plt.subplots(figsize=(10, 5.5), layout="constrained")
    left_out: list[str] = []
    series = _series(cells, calls, transcript, model, left_out)
    full = series[0][1] if series else None
    if full is not None:
        ax.plot(
            full["call"], full["tokens_uncompacted"], color="0.6", ls=":", lw=1.5, label="full history (uncompacted)"
        )
    shown_dirs: list[str] = []
    for i, (name, frame) in enumerate(series):
        color = plt.cm.tab10(i % 10)
        ax.plot(frame["call"], frame["tokens_sent"], lw=1.8, label=name, color=color)
        dirs = list(
            cells.loc[
                (cells["transcript"] == transcript)
                & (cells["model"] == model)
                & (cells["strategy"] == frame["strategy"].iloc[0])
                & (cells["variant"] == frame["variant"].iloc[0]),
                "cell_dir",
            ]
        )
        shown_dirs.extend(dirs)
        for key, level in threshold_lines(rs, dirs):
            ax.axhline(level, color=color, ls="--", lw=1, label=f"   {key} ({level:,.0f} tok)")
        rejected = frame[~frame["accepted"].astype(bool)]
        if not rejected.empty:  # a colour no line has (tab10 and the black window); labelled once
            labelled = any(t.get_label() == REJECTED for t in ax.collections)
            ax.scatter(
                rejected["call"],
                rejected["tokens_sent"],
                marker="x",
                color=REJECTED_COLOUR,
                zorder=5,
                s=30,
                label="_" if labelled else REJECTED,
            )
    windows = cells[cells["cell_dir"].isin(shown_dirs)]["context_window"].dropna().unique()
    for window in windows:
        ax.axhline(window, color="black", lw=1.5, label=f"context window ({int(window):,})")
    ax.set_xlabel("LLM call (index in the transcript)")
    ax.set_ylabel("prompt tokens")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_title(plot.title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    plot.figure = fig
    plot.note = (
        "Magenta crosses: calls the provider rejected (over the window). Dashed lines, in each strategy's colour: "
        "its thresholds as the cell used them (each step's ratio times the budget its events report)."
    )
    if left_out:
        plot.note += (
            f" Not drawn ({len(left_out)} more series than {MAX_LINES} lines can show): "
            + ", ".join(left_out)
            + ". Each one's calls: ctxbench view."
        )
    return plot


def retention_vs_savings(comparison: pd.DataFrame) -> Plot:
    plot = Plot("retention_vs_savings", "Fact retention against token savings")
    if "retention" not in comparison or comparison["retention"].isna().all():
        plot.note = (
            "No retention measured in these results (no probes were scored), so retention against savings "
            "cannot be plotted. Run with probes/judges enabled to get it."
        )
        return plot
    data = comparison.dropna(subset=["retention"]).copy()
    data["label"] = [label(s, v) for s, v in zip(data["strategy"], data.get("variant", [""] * len(data)))]
    fig, ax = plt.subplots(figsize=(11, 6), layout="constrained")
    # The reference (none, the full history) is what savings are measured against: drawn, never a frontier point.
    reference = data["reference"] if "reference" in data else pd.Series(False, index=data.index)
    several_models = data["model"].nunique() > 1
    windows = "window" in data and data["window"].nunique() > 1
    keys = ["model", "window"] if windows else ["model"]
    for i, (key, group) in enumerate(data.groupby(keys, sort=True)):
        color = plt.cm.tab10(i % 10)
        model, window = (key[0], key[1]) if windows else (key[0] if isinstance(key, tuple) else key, None)
        where = f"{model}, window {int(window):,}" if window is not None else str(model)
        points = group[~reference.loc[group.index]]
        err: dict[str, Any] = {}
        for axis, col in (("xerr", "savings_vs_none"), ("yerr", "retention")):
            if f"{col}_lo" in points:  # 95% bootstrap intervals over transcripts
                low = (points[col] - points[f"{col}_lo"]).clip(lower=0) * 100
                high = (points[f"{col}_hi"] - points[col]).clip(lower=0) * 100
                err[axis] = [low.fillna(0), high.fillna(0)]
        ax.errorbar(
            points["savings_vs_none"] * 100,
            points["retention"] * 100,
            fmt="o",
            ms=7,
            capsize=3,
            elinewidth=1,
            color=color,
            label=f"model {where}" if window is not None else f"model {model}",
            **err,
        )
        # One frontier per model and window: runs on different models or windows are not alternatives.
        front = points.loc[pareto(points, "savings_vs_none", "retention")].sort_values("savings_vs_none")
        ax.plot(
            front["savings_vs_none"] * 100,
            front["retention"] * 100,
            color=color,
            lw=1.5,
            marker="o",
            mfc="none",
            ms=13,
            label=f"Pareto frontier ({where})" if several_models or window is not None else "Pareto frontier",
        )
    if reference.any():
        ref = data[reference]
        ref_err: dict[str, Any] = {}
        if "retention_lo" in ref:
            low = (ref["retention"] - ref["retention_lo"]).clip(lower=0) * 100
            high = (ref["retention_hi"] - ref["retention"]).clip(lower=0) * 100
            ref_err["yerr"] = [low.fillna(0), high.fillna(0)]
        ax.errorbar(
            ref["savings_vs_none"] * 100,
            ref["retention"] * 100,
            fmt="s",
            ms=9,
            capsize=3,
            elinewidth=1,
            color="gray",
            zorder=3,
            label="reference: none (full history)",
            **ref_err,
        )
    ax.margins(x=0.12, y=0.08)
    # Each point named beside it, each name moved up or down until it covers no name placed before it.
    fig.canvas.draw()
    placed: list[Any] = []
    for _, row in data.sort_values(["savings_vs_none", "retention"]).iterrows():
        name = row["label"] + (f" / {row['model']}" if several_models else "")
        if windows and pd.notna(row.get("window")):
            name += f" @ {int(row['window']):,}"
        for dy in (7, -12, 17, -22, 27, -32, 37, -42, 47, -52):
            text = ax.annotate(
                name,
                (row["savings_vs_none"] * 100, row["retention"] * 100),
                fontsize=8,
                xytext=(7, dy),
                textcoords="offset points",
                path_effects=[matplotlib.patheffects.withStroke(linewidth=2.5, foreground="white")],
            )
            box = text.get_window_extent()
            if not any(box.overlaps(other) for other in placed):
                break
            text.remove()
        else:
            text = ax.annotate(
                name,
                (row["savings_vs_none"] * 100, row["retention"] * 100),
                fontsize=8,
                xytext=(7, 7),
                textcoords="offset points",
            )
        placed.append(text.get_window_extent())
    ax.set_xlabel("token savings vs full history (%)")
    ax.set_ylabel("fact retention (%)")
    ax.set_title(plot.title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    plot.figure = fig
    plot.note = (
        "Circled points are Pareto-optimal (per model and window): no other run on that model and window keeps "
        "more facts while saving more tokens."
    )
    if "retention_lo" in data:
        plot.note += " Bars: 95% bootstrap intervals over transcripts."
    if reference.any():
        plot.note += " The grey square is the reference (none, the full history), outside the frontier."
    return plot


def pareto(data: pd.DataFrame, x: str, y: str) -> list[Any]:
    """Index labels of rows no other row beats on both x and y (higher is better for both)."""
    keep = []
    for idx, row in data.iterrows():
        dominated = ((data[x] >= row[x]) & (data[y] >= row[y]) & ((data[x] > row[x]) | (data[y] > row[y]))).any()
        if not dominated:
            keep.append(idx)
    return keep


def errors_and_retries(comparison: pd.DataFrame) -> Plot:
    plot = Plot("overflow_and_retries", "Overflow errors, retries and failed calls per strategy")
    if comparison.empty:
        plot.note = "No results."
        return plot
    data = comparison.copy()
    data["label"] = [label(s, v) + f" / {m}" for s, v, m in zip(data["strategy"], _variants(data), data["model"])]
    cols = [c for c in ("overflow_errors", "retries", "failed_calls") if c in data]
    # Only what happened: rows and kinds that are zero everywhere are named in the note, not drawn as empty bars.
    cols = [c for c in cols if (data[c].fillna(0) > 0).any()]
    busy = data[cols].fillna(0).gt(0).any(axis=1) if cols else pd.Series(False, index=data.index)
    quiet = list(data.loc[~busy, "label"])
    data = data[busy]
    if data.empty:
        plot.note = "No overflow errors, retries or failed calls in any run."
        return plot
    # Horizontal bars: long strategy/variant names stay readable on the y axis.
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(data) * max(1, len(cols) / 2) + 2), layout="constrained")
    y = np.arange(len(data))[::-1]
    height = 0.8 / len(cols)
    for i, col in enumerate(cols):
        bars = ax.barh(y + ((len(cols) - 1) / 2 - i) * height, data[col], height, label=col.replace("_", " "))
        ax.bar_label(bars, labels=[f"{v:,.0f}" if v else "" for v in data[col].fillna(0)], fontsize=7, padding=2)
    ax.set_yticks(y, data["label"], fontsize=8)
    ax.set_xlabel("count (all transcripts)")
    ax.margins(x=0.12)
    ax.set_title(plot.title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    plot.figure = fig
    if quiet:
        plot.note = "No overflow errors, retries or failed calls: " + ", ".join(quiet) + "."
    return plot


def _variants(data: pd.DataFrame) -> list[str]:
    return list(data["variant"]) if "variant" in data else [""] * len(data)


def estimator_error(
    cells: pd.DataFrame, calls: pd.DataFrame, transcript: str | None = None, model: str | None = None
) -> Plot:
    plot = Plot("estimator_error", "Estimator error per call")
    if calls.empty or "tokens_estimated" not in calls:
        plot.note = "No per-call estimates recorded."
        return plot
    transcript, model = _pick(cells, transcript, model)
    plot.title = f"Estimator error per call (estimated vs sent)\ntranscript {transcript}, model {model}"
    fig, ax = plt.subplots(figsize=(10, 5), layout="constrained")
    worst = 0.0
    exact: list[str] = []  # series that are 0 on every call: one labelled zero line, not lines hidden under it
    for i, (name, frame) in enumerate(_series(cells, calls, transcript, model)):
        sent = frame["tokens_sent"].where(frame["tokens_sent"] > 0)
        error = (frame["tokens_estimated"] - frame["tokens_sent"]) / sent * 100
        worst = max(worst, float(error.abs().max(skipna=True) or 0))
        estimators = cells[(cells["transcript"] == transcript) & (cells["strategy"] == frame["strategy"].iloc[0])]
        est = ", ".join(sorted(set(estimators["estimator"].dropna().astype(str))))
        if error.fillna(0).eq(0).all():
            exact.append(f"{name} ({est})" if est else name)
            continue
        ax.plot(frame["call"], error, lw=1.5, color=plt.cm.tab10(i % 10), label=f"{name} ({est})" if est else name)
    ax.axhline(0, color="black", lw=1)
    if exact:
        ax.axhline(0, color="0.45", lw=4, alpha=0.6, zorder=1, label="0% on every call:\n  " + "\n  ".join(exact))
    ax.set_xlabel("LLM call (index in the transcript)")
    ax.set_ylabel("(estimated - sent) / sent  (%)")
    ax.set_title(plot.title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    plot.figure = fig
    plot.note = (
        "Every estimator here counted exactly (0% error on every call)."
        if worst == 0
        else f"Largest error on one call: {worst:.1f}%. Below 0: the strategy thought the prompt smaller than it was."
    )
    return plot


def swept_heatmaps(cells: pd.DataFrame) -> list[Plot]:
    """Savings and retention over the two overrides a sweep varied, per strategy x model."""
    plots: list[Plot] = []
    if cells.empty:
        return plots
    for (strategy, model), group in cells.groupby(["strategy", "model"]):
        overrides = pd.DataFrame(list(group["overrides"]), index=group.index)
        varying = [c for c in overrides.columns if overrides[c].nunique(dropna=False) > 1]
        if len(varying) < 2:
            continue
        xkey, ykey = sorted(varying, key=lambda k: (-overrides[k].nunique(), k))[:2]
        data = group.assign(_x=overrides[xkey].map(_num), _y=overrides[ykey].map(_num))
        agg = data.groupby(["_y", "_x"]).agg(
            sent=("tokens_sent_total", "sum"), full=("tokens_uncompacted_total", "sum")
        )
        agg["savings"] = 1 - agg["sent"] / agg["full"]
        metrics = [("savings", agg["savings"])]
        if "retention" in data and data["retention"].notna().any():
            metrics.append(("retention", data.groupby(["_y", "_x"])["retention"].mean()))
        for metric, values in metrics:
            table = values.unstack("_x")
            plot = Plot(f"heatmap_{metric}_{strategy}_{model}", f"{metric} of {strategy} on {model} over the sweep")
            fig, ax = plt.subplots(
                figsize=(1.1 * table.shape[1] + 3.5, 0.7 * table.shape[0] + 2.5), layout="constrained"
            )
            image = ax.imshow(table.to_numpy(dtype=float) * 100, cmap="viridis", aspect="auto", origin="lower")
            ax.set_xticks(range(table.shape[1]), [f"{v:g}" if isinstance(v, float) else v for v in table.columns])
            ax.set_yticks(range(table.shape[0]), [f"{v:g}" if isinstance(v, float) else v for v in table.index])
            for (i, j), value in np.ndenumerate(table.to_numpy(dtype=float)):
                if not np.isnan(value):
                    ax.text(
                        j,
                        i,
                        f"{percent_text(value)}%",
                        ha="center",
                        va="center",
                        color="white",
                        fontsize=8,
                        path_effects=[matplotlib.patheffects.withStroke(linewidth=2, foreground="black")],
                    )
            ax.set_xlabel(xkey)
            ax.set_ylabel(ykey)
            ax.set_title(plot.title, fontsize=10)
            fig.colorbar(image, ax=ax, label=f"{metric} (%)")
            plot.figure = fig
            others = [k for k in varying if k not in (xkey, ykey)]
            plot.note = f"Averaged over transcripts{' and over ' + ', '.join(others) if others else ''}."
            plots.append(plot)
        if "retention" not in data or data["retention"].isna().all():
            plots.append(
                Plot(
                    f"heatmap_retention_{strategy}_{model}",
                    f"retention of {strategy} on {model}",
                    note="No retention measured in these results: no retention heatmap.",
                )
            )
    return plots


def _num(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def cost_split(cells: pd.DataFrame) -> Plot:
    plot = Plot("cost_split", "Cost per strategy: agent calls, compaction (summariser) and judge (LLM probes)")
    if cells.empty or "agent_cost_usd" not in cells:
        plot.note = "No cost recorded in these results."
        return plot
    data = cells.assign(
        compaction=cells["compaction_cost_usd"].fillna(0) if "compaction_cost_usd" in cells else 0.0,
        judge=cells["judge_cost_usd"].fillna(0) if "judge_cost_usd" in cells else 0.0,
        agent=cells["agent_cost_usd"].fillna(0),
    )
    parts = ["agent", "compaction", "judge"]
    table = data.groupby(["strategy", "variant", "model"], dropna=False)[parts].sum().reset_index()
    names = [label(s, v) + f" / {m}" for s, v, m in zip(table["strategy"], table["variant"], table["model"])]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(table) + 2.2), layout="constrained")
    y = np.arange(len(table))[::-1]
    ax.barh(y, table["agent"], label="agent calls (input tokens)")
    ax.barh(y, table["compaction"], left=table["agent"], label="compaction (summariser)")
    total = table["agent"] + table["compaction"] + table["judge"]
    bars = ax.barh(y, table["judge"], left=table["agent"] + table["compaction"], label="judge (answerer + grader)")
    ax.bar_label(bars, labels=[f"${v:,.2f}" for v in total], fontsize=7, padding=2)
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlabel("USD (all transcripts)")
    ax.set_xlim(0, float(total.max() or 1) * 1.18)  # room for the longest bar's label
    ax.set_title(plot.title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)  # beside the bars, never over one
    ax.grid(axis="x", alpha=0.3)
    plot.figure = fig
    if "compaction_cost_usd" not in cells:
        plot.note = "No compaction cost recorded in these results (no summariser usage): only agent cost is shown."
    return plot
