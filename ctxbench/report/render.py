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
from ctxbench.report.tables import PERCENT, hoist_constant_columns, percent_text, resampled

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


def _display(table: pd.DataFrame, interval_html: bool = False) -> pd.DataFrame:
    shown = table.copy()
    for col in shown.columns:
        if col.endswith(("_lo", "_hi")):
            continue
        if col in PERCENT_COLS:
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{percent_text(v)}%")
        elif col.endswith("cost_usd"):
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:,.2f}")
        elif col == "overflow_per_call":
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
        if f"{col}_lo" in table:  # a 95% bootstrap interval over transcripts beside the value
            low, high = (table[f"{col}_{end}"].map(_shown_like(col)) for end in ("lo", "hi"))
            if not any(resampled(table)):  # one transcript per row: [x, x] says nothing
                continue
            if interval_html:  # HTML: the interval on a line of its own under the value
                shown[col] = [
                    f"{html.escape(v)}<span class='ci'>[{html.escape(a)}, {html.escape(b)}]</span>"
                    for v, a, b in zip(shown[col], low, high)
                ]
            else:
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
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{percent_text(v)}%")
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
        return lambda v: "" if pd.isna(v) else f"{percent_text(v)}%"
    if col.endswith("cost_usd"):
        return lambda v: "" if pd.isna(v) else f"{v:,.2f}"
    return lambda v: "" if pd.isna(v) else f"{v:.3f}"


HTML_HEADERS = {
    "savings_vs_none": "savings",
    "cost_savings_vs_none": "cost savings",
    "cache_hit_share": "cache hits",
    "tokens_sent": "tokens sent",
    "peak": "peak prompt*",
    "overflow_errors": "overflows",
    "overflow_per_call": "overflows / call",
    "failed_calls": "rejected calls",
    "cost_usd": "cost (USD)",
}
PEAK_NOTE = "* peak prompt: the largest prompt sent, rejected ones included (so it can exceed the window)."
MAX_ROWS = 30  # rows of a detail table in the page; every row is in its CSV (per transcript: ctxbench view)
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1240px;margin:0 auto;padding:0 16px 40px;color:#222}"
    "h1{font-size:22px;margin:12px 0 4px}h2{font-size:17px;margin:22px 0 6px}nav{font-size:13px;margin:4px 0 8px}"
    "nav a{margin-right:10px}table{border-collapse:collapse;font-size:12px;max-width:100%}"
    "td,th{border:1px solid #ddd;padding:2px 6px;text-align:right;vertical-align:top}"
    "td.text,th.text{text-align:left}th{background:#f3f3f3}.ci{display:block;font-size:10px;color:#666}"
    "img{max-width:100%;height:auto;border:1px solid #eee}.note{color:#555;font-size:13px}"
    "details{margin:6px 0}summary{cursor:pointer;font-weight:600}.meta{color:#666;font-size:12px;margin:0}"
    "#pareto img{max-height:560px}"
)


def _tokens(value: object) -> str:
    """A token count short enough for a narrow column (the exact count is in the cell's title)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    v = float(value)  # type: ignore[arg-type]
    for above, size, unit in ((1e9, 1e9, "B"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(v) >= above:
            return f"{v / size:.1f}{unit}"
    return f"{v:,.0f}"


def html_comparison(comparison: pd.DataFrame) -> str:
    """The comparison as an HTML table that fits the page: short headers, token counts in k/M (exact
    in the title), intervals on a second line, columns that are the same in every row said below."""
    narrow, same = hoist_constant_columns(comparison)
    shown = _display(narrow, interval_html=True)
    titles: dict[str, list[str]] = {}
    for col in ("tokens_sent", "peak"):
        if col in narrow:
            titles[col] = [f"{int(v):,}" for v in narrow[col]]
            shown[col] = [_tokens(v) for v in narrow[col]]
    head = "".join(
        f"<th class='{'text' if c in TEXT_COLUMNS else 'num'}'>{html.escape(HTML_HEADERS.get(c, c))}</th>"
        for c in shown.columns
    )
    body = []
    for i in range(len(shown)):
        cells = []
        for c in shown.columns:
            value = shown[c].iloc[i]
            text = value if c.endswith(INTERVAL_COLUMNS) or c in INTERVAL_COLUMNS else html.escape(str(value))
            title = f" title='{titles[c][i]}'" if c in titles else ""
            cells.append(f"<td class='{'text' if c in TEXT_COLUMNS else 'num'}'{title}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = f"<table id='comparison-table'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    notes = [comparison_note(comparison)]
    if "peak" in shown:
        notes.append(PEAK_NOTE)
    if same:
        notes.insert(0, f"In every row: {same}.")
    return table + "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes)


TEXT_COLUMNS = ("strategy", "model", "variant", "llm_failures", "llm_judge")
INTERVAL_COLUMNS = ("retention", "savings_vs_none", "overflow_per_call", "cost_usd")


def _bounded(table: pd.DataFrame, name: str) -> tuple[pd.DataFrame, str]:
    if len(table) <= MAX_ROWS:
        return table, ""
    file = "_".join(name.lower().replace(",", "").replace("(", "").replace(")", "").split())
    return table.head(MAX_ROWS), (
        f"The first {MAX_ROWS} of {len(table):,} rows; all of them are in {file}.csv (ctxbench report --format csv), "
        "and each cell's calls, prompts and probes in ctxbench view."
    )


def numbers_shown(table: pd.DataFrame) -> pd.DataFrame:
    """Counts with thousands separators and other numbers rounded (costs to cents), as the comparison
    shows them: ``19,420,042`` and ``410.79``, not ``19420042`` and ``410.786160``."""
    import numbers

    def said(value: object, digits: int) -> object:
        if isinstance(value, bool) or not isinstance(value, numbers.Number):
            return value
        if isinstance(value, numbers.Integral):
            return f"{int(value):,}"
        as_float = float(value)  # type: ignore[arg-type]
        return "" if pd.isna(as_float) else f"{as_float:,.{digits}f}"

    shown = table.copy()
    for col in shown.columns:
        digits = 2 if "cost" in str(col) else 3
        shown[col] = shown[col].map(lambda v, d=digits: said(v, d))
    return shown


def _anchor(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")[:60]


def _img(plot: Plot) -> str:
    data = base64.b64encode(png_bytes(plot)).decode("ascii")
    return f"<img alt='{html.escape(_heading(plot.title))}' src='data:image/png;base64,{data}'>"


def write_html(
    path: Path,
    title: str,
    sources: Sequence[str],
    comparison: pd.DataFrame,
    plots: list[Plot],
    extra_tables: Mapping[str, pd.DataFrame] | None = None,
) -> Path:
    """The report page, answers first: the Pareto plot and which strategy per model and window, then
    the comparison, the other plots, and the detail tables collapsed (each bounded: see MAX_ROWS)."""
    from ctxbench.report.answer import which_strategy

    pareto_plot = next((p for p in plots if p.name == "retention_vs_savings"), None)
    others = [p for p in plots if p is not pareto_plot]
    sections = [("pareto", "Retention against savings"), ("answer", "Which strategy"), ("comparison", "Comparison")]
    sections += [(_anchor(p.name), _heading(p.title).split(":")[0]) for p in others]
    sections.append(("details", "Details"))
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='meta'>Generated {datetime.now(UTC).isoformat(timespec='seconds')} from "
        + ", ".join(f"<code>{html.escape(s)}</code>" for s in sources)
        + "</p>",
        "<nav id='toc'>" + "".join(f"<a href='#{a}'>{html.escape(t)}</a>" for a, t in sections) + "</nav>",
        "<section id='pareto'>",
    ]
    if pareto_plot is not None and pareto_plot.figure is not None:
        parts.append(_img(pareto_plot))
    if pareto_plot is not None and pareto_plot.note:
        parts.append(f"<p class='note'>{html.escape(pareto_plot.note)}</p>")
    parts.append("</section>")
    answer = which_strategy(comparison)
    parts += ["<section id='answer'><h2>Which strategy, per model and window</h2>"]
    if not answer.empty:
        parts.append(answer.to_html(index=False, border=0, na_rep="", classes="answer"))
    parts += ["</section>", "<section id='comparison'><h2>Comparison (totals over transcripts)</h2>"]
    parts += [html_comparison(comparison), "</section>"]
    for plot in others:
        parts.append(f"<section id='{_anchor(plot.name)}'><h2>{html.escape(_heading(plot.title))}</h2>")
        if plot.figure is not None:
            parts.append(_img(plot))
        if plot.note:
            parts.append(f"<p class='note'>{html.escape(plot.note)}</p>")
        parts.append("</section>")
    parts.append("<section id='details'><h2>Details</h2>")
    for name, table in (extra_tables or {}).items():
        shown, note = _bounded(numbers_shown(rates_as_percent(name, table)), name)
        parts.append(f"<details id='{_anchor(name)}'><summary>{html.escape(name)} ({len(table):,} rows)</summary>")
        parts.append(shown.to_html(index=False, border=0, na_rep=""))
        if note:
            parts.append(f"<p class='note'>{html.escape(note)}</p>")
        parts.append("</details>")
    parts.append("</section></body></html>")
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
    from ctxbench.report.answer import which_strategy

    plot_dir = path.parent / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", "", "Sources: " + ", ".join(f"`{s}`" for s in sources), ""]
    answer = which_strategy(comparison)
    if not answer.empty:
        lines += ["## Which strategy, per model and window", "", markdown_table(answer), ""]
    comparison_lines = ["## Comparison", "", markdown_table(_display(comparison)), ""]
    comparison_lines += [f"_{comparison_note(comparison)}_", ""]
    if "peak" in comparison:
        comparison_lines += [f"_{PEAK_NOTE}_", ""]
    tables: list[str] = []
    for name, table in (extra_tables or {}).items():
        shown, note = _bounded(rates_as_percent(name, table), name)
        tables += [f"## {name}", "", markdown_table(shown), ""] + ([f"_{note}_", ""] if note else [])
    pngs: list[Path] = []
    # The answer's picture first, then the comparison, the other plots, the detail tables.
    for n, plot in enumerate(sorted(plots, key=lambda p: p.name != "retention_vs_savings")):
        if n == 1:
            lines += comparison_lines
        lines += [f"## {_heading(plot.title)}", ""]
        if plot.figure is not None:
            png = plot_dir / f"{plot.name}.png"
            write_bytes_atomic(png, png_bytes(plot))
            pngs.append(png)
            lines += [f"![{plot.title}](plots/{png.name})", ""]
        if plot.note:
            lines += [f"_{plot.note}_", ""]
    if len(plots) < 2:
        lines += comparison_lines
    lines += tables
    write_text_atomic(path, "\n".join(lines))
    return pngs


def close_all(plots: list[Plot]) -> None:
    for plot in plots:
        if plot.figure is not None:
            plt.close(plot.figure)
