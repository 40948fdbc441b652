"""Write a report: one self-contained HTML file (plots inlined as base64 PNG), a Markdown
summary with the plots as PNG files beside it, and the tables as CSV/Parquet."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ctxbench.atomic import write_bytes_atomic, write_text_atomic
from ctxbench.report.plots import Plot
from ctxbench.report.tables import PERCENT

PERCENT_COLS = (*PERCENT, "savings")  # shares shown in percent everywhere in a report


def comparison_note(comparison: pd.DataFrame) -> str:
    """What the comparison's columns mean (the interval sentence only when it has intervals)."""
    intervals = "[low, high]: 95% bootstrap interval over transcripts. "
    return (intervals if any(c.endswith("_lo") for c in comparison.columns) else "") + (
        "Shares in percent. Retention is on the informative probes (a probe every strategy keeps trivially is "
        "counted apart); a rejected call's checkpoint counts as lost. The reference row (ref: none, the full "
        "history) is what savings are measured against."
    )


def png_bytes(plot: Plot) -> bytes:
    buffer = io.BytesIO()
    assert plot.figure is not None
    plot.figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _display(table: pd.DataFrame) -> pd.DataFrame:
    shown = table.copy()
    for col in shown.columns:
        if col.endswith(("_lo", "_hi")):
            continue
        if col in PERCENT_COLS:
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.1%}")
        elif col.endswith("cost_usd"):
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:,.2f}")
        elif col == "overflow_per_call":
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
        if f"{col}_lo" in table:  # a 95% bootstrap interval over transcripts beside the value
            low, high = (table[f"{col}_{end}"].map(_shown_like(col)) for end in ("lo", "hi"))
            shown[col] = [f"{v} [{a}, {b}]" for v, a, b in zip(shown[col], low, high)]
    if "reference" in shown:
        shown["strategy"] = [f"{s} (ref)" if r else s for s, r in zip(shown["strategy"], shown["reference"])]
    return shown.drop(columns=[c for c in shown.columns if c.endswith(("_lo", "_hi")) or c == "reference"])


def rates_as_percent(title: str, table: pd.DataFrame) -> pd.DataFrame:
    """Shares in percent, like the comparison: the share columns of any table, and every float
    column of a breakdown of retention (by probe type, age...), whose cells are shares in [0, 1]."""
    breakdown = title.lower().startswith("retention by")
    shown = table.copy()
    for col in shown.columns:
        floats = pd.api.types.is_float_dtype(shown[col])
        if col in PERCENT_COLS or (breakdown and floats and shown[col].dropna().between(0, 1).all()):
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.1%}")
    return shown


def markdown_table(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (numbers right-aligned); no extra package needed."""
    if table.empty:
        return "_(empty)_"

    def cell(value: object) -> str:
        text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
        if isinstance(value, float) and text:
            text = f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:,.0f}"
        elif isinstance(value, int) and not isinstance(value, bool):
            text = f"{value:,}"
        return text.replace("|", "\\|").replace("\n", " ")

    numeric = [pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c]) for c in table]
    lines = ["| " + " | ".join(str(c) for c in table.columns) + " |"]
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)


def _heading(title: str) -> str:
    """A plot title as one line (a title may break its line inside the figure)."""
    return " ".join(title.split())


def _shown_like(col: str):  # noqa: ANN202  (a formatter for one column's values)
    if col in PERCENT_COLS:
        return lambda v: "" if pd.isna(v) else f"{v:.1%}"
    if col.endswith("cost_usd"):
        return lambda v: "" if pd.isna(v) else f"{v:,.2f}"
    return lambda v: "" if pd.isna(v) else f"{v:.3f}"


def write_html(
    path: Path,
    title: str,
    sources: Sequence[str],
    comparison: pd.DataFrame,
    plots: list[Plot],
    extra_tables: Mapping[str, pd.DataFrame] | None = None,
) -> Path:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee}.note{color:#555;font-style:italic}"
        "</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Generated {datetime.now(UTC).isoformat(timespec='seconds')} from: "
        + ", ".join(f"<code>{html.escape(s)}</code>" for s in sources)
        + "</p>",
        "<h2>Comparison (totals over transcripts)</h2>",
        _display(comparison).to_html(index=False, border=0, na_rep=""),
        f"<p class='note'>{html.escape(comparison_note(comparison))}</p>",
    ]
    for name, table in (extra_tables or {}).items():
        shown = rates_as_percent(name, table)
        parts += [f"<h2>{html.escape(name)}</h2>", shown.to_html(index=False, border=0, na_rep="")]
    for plot in plots:
        parts.append(f"<h2>{html.escape(_heading(plot.title))}</h2>")
        if plot.figure is not None:
            data = base64.b64encode(png_bytes(plot)).decode("ascii")
            parts.append(f"<img alt='{html.escape(plot.title)}' src='data:image/png;base64,{data}'>")
        if plot.note:
            parts.append(f"<p class='note'>{html.escape(plot.note)}</p>")
    parts.append("</body></html>")
    write_text_atomic(path, "\n".join(parts))
    return path


def write_markdown(
    path: Path,
    title: str,
    sources: Sequence[str],
    comparison: pd.DataFrame,
    plots: list[Plot],
    extra_tables: Mapping[str, pd.DataFrame] | None = None,
) -> list[Path]:
    """The summary plus one PNG per plot in ``<out>/plots/``; returns the PNG paths."""
    plot_dir = path.parent / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", "", "Sources: " + ", ".join(f"`{s}`" for s in sources), "", "## Comparison", ""]
    lines += [markdown_table(_display(comparison)), "", f"_{comparison_note(comparison)}_", ""]
    for name, table in (extra_tables or {}).items():
        lines += [f"## {name}", "", markdown_table(rates_as_percent(name, table)), ""]
    pngs: list[Path] = []
    for plot in plots:
        lines += [f"## {_heading(plot.title)}", ""]
        if plot.figure is not None:
            png = plot_dir / f"{plot.name}.png"
            write_bytes_atomic(png, png_bytes(plot))
            pngs.append(png)
            lines += [f"![{plot.title}](plots/{png.name})", ""]
        if plot.note:
            lines += [f"_{plot.note}_", ""]
    write_text_atomic(path, "\n".join(lines))
    return pngs


def close_all(plots: list[Plot]) -> None:
    for plot in plots:
        if plot.figure is not None:
            plt.close(plot.figure)
