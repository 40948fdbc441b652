"""Summaries into pandas tables: the comparison every run prints and every report starts from."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ctxbench.report.intervals import STATS, add_intervals, paired_difference

# Overrides that choose what is compared or where it goes, not a variant of a strategy.
NOT_VARIANT = ("strategy=", "model=", "dataset", "output", "progress", "hydra", "experiment=", "report.", "reuse_stale")


def cells_frame(summaries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per cell: its identity (cell.*) and its flat numeric metrics. Cells of two different
    configs with the same strategy, model and overrides (a strategy file edited between two runs into
    the same results) get the config's id in their variant: they are two rows of a table, never one."""
    rows = []
    for s in summaries:
        cell, metrics = s["cell"], s["metrics"]
        row = {k: cell.get(k) for k in ("transcript", "strategy", "model", "tokenizer", "estimator", "config_hash")}
        row["variant"] = " ".join(o for o in cell.get("overrides") or () if not o.lstrip("+~").startswith(NOT_VARIANT))
        row["config_id"] = config_id(s)
        row.update({k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)})
        row["context_window"] = cell.get("context_window")
        rows.append(row)
    return split_configs(pd.DataFrame(rows))


CONFIG_PARTS = ("strategy", "model", "estimator", "llm", "judge")  # what makes a config, not where it ran


def config_id(summary: dict[str, Any]) -> str | None:
    """A short id of the config a cell ran (its strategy, model, estimator, llm and judge), the
    same for every transcript of a job; None for cells written without their config."""
    config = summary.get("config")
    if not isinstance(config, dict):
        return None
    text = json.dumps({k: config.get(k) for k in CONFIG_PARTS}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def split_configs(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty or frame["config_id"].isna().all():
        return frame
    keys = ["strategy", "model", "variant"]
    several = frame.groupby(keys, dropna=False)["config_id"].transform("nunique") > 1
    if several.any():
        frame = frame.copy()
        named = frame.loc[several, "variant"] + " config " + frame.loc[several, "config_id"].fillna("?")
        frame.loc[several, "variant"] = named.str.strip()
    return frame


REFERENCE = "none"  # the full history: what savings are measured against, never a frontier point
# Rates that get a bootstrap interval over transcripts (ctxbench.report.intervals).
CI_COLUMNS = ("retention", "savings_vs_none", "overflow_per_call", "cost_usd")


def comparison_frame(
    summaries: Sequence[dict[str, Any]], ci: bool = True, resamples: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per strategy x model (x variant): totals over transcripts. Savings are against the
    full history, which is exactly what `none` sends each call; `none` is flagged as the
    reference. Retention is on the informative probes (``probes``; the ``trivial`` ones apart);
    with ``ci``, the rates get 95% bootstrap intervals over transcripts (``COL_lo``/``COL_hi``)."""
    cells = cells_frame(summaries)
    if cells.empty:
        return cells
    # Sums and means of floats in one order whatever order the cells were found in: a run's table
    # and the report on its folder then agree to the last digit (0.5395 is not 53.9 in one, 54.0 in the other).
    cells = cells.sort_values(["strategy", "model", "variant", "transcript", "config_hash"], kind="stable")
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
    optional = {
        "retention": ("retention", "mean"),
        "probes": ("probes_informative", "sum"),
        "trivial": ("probes_trivial", "sum"),
        "recoverable": ("recoverable", "mean"),
        "cost_usd": ("cost_usd", "sum"),
    }
    agg.update({k: v for k, v in optional.items() if v[0] in cells})
    if cells["context_window"].nunique() > 1:  # a windows sweep: each row says its window
        agg["window"] = ("context_window", "max")
    if "cost_usd" not in cells:  # results written before prompt caching was priced
        agg["cost_usd"] = ("total_cost_usd", "sum") if "total_cost_usd" in cells else ("agent_cost_usd", "sum")
    if "agent_cost_usd" not in cells:
        agg.pop("cost_usd", None)
    cached = "full_history_cost_usd_served" in cells and "cached_tokens_total" in cells
    if cached:
        cells = _with_cache_sums(cells)
        agg.update(
            strategy_cost=("strategy_cost", "sum"),
            full_cost=("full_history_cost_usd_served", "sum"),
            cached=("cached_tokens_total", "sum"),
            billed=("billed_tokens", "sum"),
        )
    table = cells.groupby(keys, dropna=False).agg(**agg).reset_index()
    at = table.columns.get_loc("uncompacted")
    table.insert(at, "savings_vs_none", 1 - table.tokens_sent / table.uncompacted)
    if cached:
        # Same baseline as savings_vs_none: the full history, under the same prompt caching (on the
        # calls the strategy got through: a rejected call is neither billed nor a saving).
        table.insert(at + 1, "cost_savings_vs_none", 1 - table.strategy_cost / table.full_cost)
        table.insert(at + 2, "cache_hit_share", table.cached / table.billed.where(table.billed > 0))
        # The baseline beside the cost: what the full history would have cost over the row's own calls.
        table["baseline_cost_usd"] = table.full_cost
        table = table.drop(columns=["strategy_cost", "full_cost", "cached", "billed"])
    table = table.drop(columns="uncompacted")
    table.insert(table.columns.get_loc("overflow_errors") + 1, "overflow_per_call", table.overflow_errors / table.calls)
    for col in ("probes", "trivial"):
        if col in table:
            table[col] = table[col].fillna(0).astype(int)
    if ci:
        cells = cells.copy()
        if "cost_usd" in agg:
            cells["cost_usd"] = cells[agg["cost_usd"][0]]
        table = add_intervals(table, cells, keys, CI_COLUMNS, resamples=resamples, seed=seed)
    table.insert(2, "reference", table.strategy == REFERENCE)
    table = add_llm_columns(table, summaries, keys, list(cells[keys].itertuples(index=False, name=None)))
    if not table.variant.astype(bool).any():
        table = table.drop(columns="variant")
    # The reference first, then strategies by name, each one's variants by their values (2 before 10).
    rows = sorted(
        range(len(table)),
        key=lambda i: (
            str(table.model.iloc[i]),
            not table.reference.iloc[i],
            str(table.strategy.iloc[i]),
            natural(table.variant.iloc[i] if "variant" in table else ""),
        ),
    )
    return table.iloc[rows].reset_index(drop=True)


def natural(text: Any) -> tuple:
    """A sort key that orders the numbers inside text by value: ``window=2`` before ``window=10``."""
    chunks = re.split(r"(-?\d+(?:\.\d+)?)", str(text))
    return tuple((0, float(c), "") if re.fullmatch(r"-?\d+(?:\.\d+)?", c) else (1, 0.0, c) for c in chunks)


def _with_cache_sums(cells: pd.DataFrame) -> pd.DataFrame:
    """The strategy's own cost (agent calls + compaction, not the judge) and the prompt tokens
    billed, per cell, for the ratios of the comparison table."""
    cells = cells.copy()
    compaction = cells["compaction_cost_usd"].fillna(0) if "compaction_cost_usd" in cells else 0.0
    # Cells without the baseline (written before it existed) count in neither sum.
    cells["strategy_cost"] = (cells["agent_cost_usd"] + compaction).where(cells["full_history_cost_usd_served"].notna())
    parts = ["cached_tokens_total", "cache_write_tokens_total", "uncached_tokens_total"]
    cells["billed_tokens"] = cells[[p for p in parts if p in cells]].sum(axis=1)
    return cells


PERCENT = ("savings_vs_none", "cost_savings_vs_none", "cache_hit_share", "retention", "recoverable", "unjudged")


def percent_text(share: float) -> str:
    """A share in percent points, one decimal: the one rounding every table and report uses (so
    0.5395 is 53.9 in the terminal and 53.9% in the HTML, not 54.0% there)."""
    return f"{round(share * 100, 9):.1f}"  # round first: 53.9499999999 (float noise) is 53.95


def _fmt(col: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if col in PERCENT:
        return percent_text(value)
    if col == "overflow_per_call":
        return f"{value:.3f}"
    if col in ("cost_usd", "baseline_cost_usd"):
        return f"{value:,.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


# LLM columns, shown only when some row has something to say (offline runs keep the short table).
LLM_COUNTS = {
    "summariser_failures": "summariser_failures",
    "breaker_trips": "circuit_breaker_trips",
    "degraded": "degraded_summaries",
    "retries_llm": ("compaction_retries", "judge_retries"),
}
ROLE_LETTER = {"summariser": "S", "answerer": "A", "judge": "J"}


def _key(summary: dict[str, Any], keys: Sequence[str]) -> tuple:
    cell = summary["cell"]
    variant = " ".join(o for o in cell.get("overrides") or () if not o.lstrip("+~").startswith(NOT_VARIANT))
    return tuple(variant if k == "variant" else cell.get(k) for k in keys)


def add_llm_columns(
    table: pd.DataFrame,
    summaries: Sequence[dict[str, Any]],
    keys: Sequence[str],
    summary_keys: Sequence[tuple] | None = None,
) -> pd.DataFrame:
    """Per row: LLM failures by role and kind ("S:timeout=2 J:malformed=1"; S/A/J = summariser,
    answerer, judge), summariser failures, circuit-breaker trips, degraded five_layer summaries,
    LLM retries, the share of probes left unjudged and whether the LLM judge passed its control
    answers ("untrusted": its false-positive rate is over the threshold, so its retention is not)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for n, s in enumerate(summaries):  # ``summary_keys``: each summary's row key as the cells frame has it
        groups.setdefault(tuple(summary_keys[n]) if summary_keys else _key(s, keys), []).append(s["metrics"])
    index = [tuple(row) for row in table[list(keys)].itertuples(index=False)]
    columns: dict[str, list[Any]] = {}
    for name, source in LLM_COUNTS.items():
        fields = source if isinstance(source, tuple) else (source,)
        columns[name] = [sum(int(m.get(f) or 0) for m in groups.get(k, []) for f in fields) for k in index]
    failures, unjudged, trust = [], [], []
    for k in index:
        cells = groups.get(k, [])
        counts: dict[str, dict[str, int]] = {}
        for m in cells:
            for role, kinds in (m.get("llm_failures") or {}).items():
                for kind, n in kinds.items():
                    counts.setdefault(role, {}).setdefault(kind, 0)
                    counts[role][kind] += n
        failures.append(
            " ".join(
                f"{ROLE_LETTER.get(role, role)}:" + ",".join(f"{kind}={n}" for kind, n in sorted(kinds.items()))
                for role, kinds in sorted(counts.items(), key=lambda rk: "SAJ".find(ROLE_LETTER.get(rk[0], "?")))
            )
        )
        # Only LLM-judged cells can leave a probe unjudged; the deterministic judge always answers.
        shares = [m["unjudged_share"] for m in cells if m.get("unjudged_share") is not None and m.get("judge_calls")]
        unjudged.append(sum(shares) / len(shares) if shares else None)
        verdicts = [m.get("judge_trusted") for m in cells if "judge_trusted" in m]
        fps = [m["judge_false_positive_rate"] for m in cells if m.get("judge_false_positive_rate") is not None]
        fns = [m["judge_false_negative_rate"] for m in cells if m.get("judge_false_negative_rate") is not None]
        rates = (f" FP {max(fps):.0%}" if fps else "") + (f" FN {max(fns):.0%}" if fns else "")
        trust.append(("untrusted" if False in verdicts else "ok" if verdicts and None not in verdicts else "-") + rates)
    summary_counts = [sum(int(m.get("summaries") or 0) for m in groups.get(k, [])) for k in index]
    if any(columns["summariser_failures"]):  # how many summaries got through beside the failures
        table["summaries"] = summary_counts
    for name, values in columns.items():
        if any(values):
            table[name] = values
    if any(failures):
        table["llm_failures"] = failures
    if any(v is not None for v in unjudged):
        table["unjudged"] = unjudged
    if any(t != "-" for t in trust):
        table["llm_judge"] = trust
    return table


def format_table(table: pd.DataFrame, width: int | None = None) -> str:
    """A plain-text table for the terminal: rates with their interval as ``value [low, high]``
    (percentages in points), the reference row marked, and a footnote on what it means. With
    ``width``, columns that do not fit go to a block under the first (see ``in_blocks``)."""
    body, notes = table_and_notes(table, width)
    return body + ("\n" + "\n".join(notes) if notes else "")


def terminal_width(wide: bool = False, width: int | None = None) -> int | None:
    """The width a table is cut to: ``width`` if given, else the terminal's when printing to one;
    None (no limit) with ``wide``, or into a file or pipe (a CI log: one table, the fewest bytes)."""
    import shutil
    import sys

    if wide:
        return None
    if width:
        return int(width)
    return shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else None


def in_blocks(shown: pd.DataFrame, width: int | None) -> str:
    """``shown`` as text no wider than ``width``: the first column, then as many columns as fit; the
    rest in further blocks, each starting with the first column again (the row's name)."""
    text = shown.to_string(index=False)
    if not width or max(map(len, text.splitlines())) <= width or len(shown.columns) < 3:
        return text
    first = shown.columns[0]
    size = {c: max(len(str(c)), int(shown[c].astype(str).str.len().max())) + 2 for c in shown.columns}
    blocks, block, used = [], [first], size[first]
    for col in shown.columns[1:]:
        if used + size[col] > width and len(block) > 1:
            blocks.append(block)
            block, used = [first], size[first]
        block.append(col)
        used += size[col]
    blocks.append(block)
    return "\n\n".join(shown[b].to_string(index=False) for b in blocks)


def table_and_notes(
    table: pd.DataFrame, width: int | None = None, several: list[bool] | None = None
) -> tuple[str, list[str]]:
    """``format_table``'s table text and its notes apart; ``several``: per row, whether its interval
    is shown (default ``resampled(table)``; a table whose transcripts column was hoisted passes it)."""
    if table.empty:
        return "(no results)", []
    several = resampled(table) if several is None else several
    shown = table.copy()
    for col in list(shown.columns):
        if col.endswith(("_lo", "_hi")) or col == "reference":
            continue
        lo, hi = f"{col}_lo", f"{col}_hi"
        if lo in shown:
            shown[col] = [
                f"{_fmt(col, v)} [{_fmt(col, a)}, {_fmt(col, b)}]" if many else _fmt(col, v)
                for v, a, b, many in zip(shown[col], shown[lo], shown[hi], several)
            ]
        elif (
            col in PERCENT
            or col in ("overflow_per_call", "cost_usd", "baseline_cost_usd")
            or pd.api.types.is_integer_dtype(shown[col])
        ):
            shown[col] = shown[col].map(lambda v, c=col: _fmt(c, v))
    if "reference" in shown:
        shown["strategy"] = [f"{s} (ref)" if r else s for s, r in zip(shown.strategy, shown.reference)]
    if "failed_calls" in table:  # a row whose calls were rejected did not finish its transcripts
        shown["strategy"] = [
            f"{s} [did not finish]" if int(f or 0) else s for s, f in zip(shown.strategy, table.failed_calls)
        ]
    shown = shown.drop(columns=[c for c in shown.columns if c.endswith(("_lo", "_hi")) or c == "reference"])
    shown = shown.rename(columns={c: f"{c} %" for c in PERCENT if c in shown})
    notes = []
    if any(c.endswith("_lo") for c in table.columns) and any(several):
        notes.append("[low, high]: 95% bootstrap interval over transcripts (seeded; report.ci=false hides it).")
    if "probes" in table:
        notes.append(
            "retention: share of informative probes kept at the end (probes: how many; trivial ones, kept by any "
            "strategy, apart); a rejected call's checkpoint counts as lost."
        )
    if "reference" in table and table.reference.any():
        notes.append(
            f"(ref): {REFERENCE} sends the full history: the baseline of savings, not a strategy on the frontier; "
            "its rejected calls are failed_calls."
        )
    if "peak" in table:
        notes.append("peak: the largest prompt sent, rejected ones included (it can exceed the window).")
    notes += cost_notes(table)
    return in_blocks(shown, width), notes


def resampled(table: pd.DataFrame) -> list[bool]:
    """Per row: whether its interval says anything (two transcripts or more; one gives [x, x])."""
    if "transcripts" not in table:
        return [True] * len(table)
    return [int(n or 0) > 1 for n in table["transcripts"]]


def _accepted(row: Any) -> str:
    calls = getattr(row, "calls", None)
    return "?" if calls is None else f"{int(calls) - int(getattr(row, 'failed_calls', 0) or 0):,}"


COST_NOTE = "cost:"  # notes that say why rows compare badly: ``ctxbench run`` prints them under its legend


def cost_notes(table: pd.DataFrame) -> list[str]:
    """What a reader needs to compare the cost columns: the baseline, rows that did not finish,
    and each pair of rows in which one costs more and also "saves" more, with why."""
    if not {"baseline_cost_usd", "cost_usd", "cost_savings_vs_none"} <= set(table.columns):
        return []
    notes = [
        "cost_savings_vs_none: 1 - cost_usd / baseline_cost_usd, the full history's cost over the same calls under "
        "the same prompt caching; a rejected call is neither billed nor in the baseline."
    ]
    if "failed_calls" in table and (table.failed_calls.fillna(0) > 0).any():
        stopped = ", ".join(
            f"{r.strategy} ({int(r.failed_calls):,} call{'s' if int(r.failed_calls) != 1 else ''} rejected)"
            for r in table.itertuples()
            if (r.failed_calls or 0) > 0
        )
        notes.append(f"cost: rows that did not finish cover only their accepted calls: {stopped}.")
    rows = list(table.itertuples())
    for a in rows:
        for b in rows:
            same_model = getattr(a, "model", None) == getattr(b, "model", None)
            values = (a.cost_usd, b.cost_usd, a.cost_savings_vs_none, b.cost_savings_vs_none)
            if a is b or not same_model or any(pd.isna(v) for v in values):
                continue
            if a.cost_usd > b.cost_usd and a.cost_savings_vs_none > b.cost_savings_vs_none:
                notes.append(
                    f"cost: {a.strategy} costs more than {b.strategy} (${a.cost_usd:,.2f} vs ${b.cost_usd:,.2f}) and "
                    f"saves more because its baseline is larger (${a.baseline_cost_usd:,.2f} vs "
                    f"${b.baseline_cost_usd:,.2f}): it got more calls through ({_accepted(a)} vs {_accepted(b)})."
                    if a.baseline_cost_usd > b.baseline_cost_usd
                    else f"cost: {a.strategy} costs more than {b.strategy} and saves more against its own baseline."
                )
    return notes


RETENTION_BREAKDOWNS = {
    "retention_by_kind": "Retention by probe type",
    "retention_by_label": "Retention by probe label",
    "retention_by_age_calls": "Retention by fact age (calls since stated)",
    "retention_by_compactions": "Retention by compactions so far",
}


def retention_breakdown(summaries: Sequence[dict[str, Any]], key: str) -> pd.DataFrame:
    """Strategy x model rows, one column per group (probe type, age bucket, compactions):
    the mean over transcripts of each transcript's retention rate in that group."""
    rows = []
    for s in summaries:
        cell = s["cell"]
        for group, rate in (s["metrics"].get(key) or {}).items():
            if rate is not None:
                rows.append({"strategy": cell["strategy"], "model": cell["model"], "group": group, "rate": rate})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows).pivot_table(index=["strategy", "model"], columns="group", values="rate", aggfunc="mean")
    frame = frame[sorted(frame.columns, key=_group_order)]
    return frame.round(3).reset_index().rename_axis(columns=None)


def _group_order(group: str) -> tuple[float, str]:
    """Numeric buckets ("0-9", "10-49", "100+") by their lower bound, names alphabetically."""
    head = group.split("-")[0].rstrip("+")
    return (float(head), group) if head.isdigit() else (float("inf"), group)


def dropped_by_layer(summaries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """How many facts each strategy lost, by the layer that ran when each was first missing."""
    rows = [
        {"strategy": s["cell"]["strategy"], "model": s["cell"]["model"], "layer": "+".join(d["layers"])}
        for s in summaries
        for d in s["metrics"].get("dropped") or ()
        if d.get("status") == "lost"
    ]
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).value_counts().rename("facts_lost").reset_index()


PAIRED_METRICS = ("retention", "savings_vs_none", "overflow_per_call", "cost_usd")


def paired_comparisons(
    summaries: Sequence[dict[str, Any]], metrics: Sequence[str] = PAIRED_METRICS, seed: int = 0
) -> pd.DataFrame:
    """Every pair of strategies on the same model and variant (the same overrides), compared on
    the transcripts both ran: the difference (``strategy - versus``) and its 95% bootstrap
    interval, paired by transcript. ``separated``: the interval excludes zero."""
    cells = cells_frame(summaries)
    if cells.empty:
        return pd.DataFrame()
    cells = cells.copy()
    for fallback in ("cost_usd", "total_cost_usd", "agent_cost_usd"):
        if fallback in cells:
            cells["cost_usd"] = cells[fallback]
            break
    rows = []
    for (model, variant), group in cells.groupby(["model", "variant"], dropna=False):
        names = sorted(group.strategy.unique(), key=lambda n: (n != REFERENCE, n))
        for i, versus in enumerate(names):
            for name in names[i + 1 :]:
                a, b = group[group.strategy == versus], group[group.strategy == name]
                for metric in metrics:
                    diff = paired_difference(a, b, STATS[metric], seed=seed)
                    if diff is None or math.isnan(diff.delta):
                        continue
                    rows.append(
                        {
                            "model": model,
                            "variant": variant,
                            "strategy": name,
                            "versus": versus,
                            "metric": metric,
                            "difference": diff.delta,
                            "low": diff.low,
                            "high": diff.high,
                            "transcripts": diff.transcripts,
                            "separated": diff.excludes_zero(),
                        }
                    )
    return pd.DataFrame(rows)


def probe_table(summaries: Sequence[dict[str, Any]], gold_chars: int = 60) -> pd.DataFrame:
    """One row per probe of every transcript: what was asked, the gold, where it was stated, and
    per strategy x model what happened to it (kept, or lost / recoverable at call N by LAYERS)."""
    rows = []
    for s in summaries:
        cell = s["cell"]
        who = f"{cell['strategy']} / {cell['model']}"
        for p in s["metrics"].get("probe_outcomes") or ():
            if p["status"] == "kept":
                what = "kept"
            elif p.get("rejected"):
                what = f"{p['status']} (call {p['first_missing_call']} rejected)"
            else:
                layers = "+".join(p.get("layers") or []) or "-"
                what = f"{p['status']} (call {p['first_missing_call']}, {layers})"
            gold = str(p.get("gold") or "")
            rows.append(
                {
                    "transcript": cell["transcript"],
                    "probe": p["probe"],
                    "type": p.get("label"),
                    "question": p.get("question"),
                    "gold": gold if len(gold) <= gold_chars else gold[: gold_chars - 1] + "…",
                    "stated_at": p.get("stated_at"),
                    "trivial": p.get("trivial"),
                    "who": who,
                    "outcome": what,
                }
            )
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    index = ["transcript", "probe", "type", "question", "gold", "stated_at", "trivial"]
    frame = frame.fillna({"question": "", "gold": "", "stated_at": -1, "trivial": False, "type": ""})
    wide = frame.drop_duplicates([*index, "who"]).set_index([*index, "who"])["outcome"].unstack("who")
    return wide.reset_index().rename_axis(columns=None).sort_values(["transcript", "stated_at"], ignore_index=True)


def retention_tables(summaries: Sequence[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """Titled retention tables for reports; empty tables are left out."""
    tables = {title: retention_breakdown(summaries, key) for key, title in RETENTION_BREAKDOWNS.items()}
    by_type, by_label = tables["Retention by probe type"], tables["Retention by probe label"]
    if by_label.equals(by_type):  # planted probes: the label is the type; one table, not the same twice
        del tables["Retention by probe label"]
    tables["Facts lost, by the layer that dropped them"] = dropped_by_layer(summaries)
    tables["Paired differences by transcript"] = paired_comparisons(summaries)
    tables["Per probe outcome by strategy"] = probe_table(summaries)
    return {title: table for title, table in tables.items() if not table.empty}


def per_transcript_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per transcript x strategy x model (x variant): where the totals come from.
    Shares are fractions (the report shows them in percent)."""
    if cells.empty:
        return cells
    keep = ["transcript", "strategy", "model", "variant", "calls", "tokens_sent_total", "tokens_sent_peak"]
    keep += [c for c in ("overflow_errors", "failed_calls", "retention", "recoverable", "total_cost_usd") if c in cells]
    table = cells[[c for c in keep if c in cells]].copy()
    if "tokens_uncompacted_total" in cells:
        full = cells["tokens_uncompacted_total"].where(cells["tokens_uncompacted_total"] > 0)
        table.insert(table.columns.get_loc("tokens_sent_peak") + 1, "savings", 1 - cells["tokens_sent_total"] / full)
    if "variant" in table and not table["variant"].astype(bool).any():
        table = table.drop(columns=["variant"])
    return table.sort_values(["transcript", "model", "strategy"]).reset_index(drop=True)


def hoist_constant_columns(frame: Any) -> tuple[Any, str]:
    """Columns with one value in every row (the model of a one-model sweep, the transcript and
    call counts, zero retries...) said once below the table instead: a narrower table."""
    if len(frame) < 2:
        return frame, ""
    keep = {"strategy", "reference"}
    constant = [
        c
        for c in frame.columns
        if c not in keep
        and not c.endswith(("_lo", "_hi"))
        and f"{c}_lo" not in frame
        and frame[c].nunique(dropna=False) == 1
    ]

    def shown(col: str, value: Any) -> str:
        import numbers

        if col in PERCENT and isinstance(value, numbers.Real):
            return f"{percent_text(float(value))}%"  # a share in percent, as in the table's columns
        if isinstance(value, numbers.Integral):
            return f"{int(value):,}"
        return f"{value:g}" if isinstance(value, numbers.Real) else str(value)

    said = ", ".join(f"{c} {shown(c, frame[c].iloc[0])}" for c in constant)
    return frame.drop(columns=constant), said
