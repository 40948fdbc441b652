"""``ctxbench report RESULTS... [--out DIR] [--format html,md,csv,parquet]``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from ctxbench.atomic import write_bytes_atomic, write_error, write_text_atomic
from ctxbench.errors import InputError
from ctxbench.progress import show_progress
from ctxbench.report.figures import all_plots
from ctxbench.report.load import gather
from ctxbench.report.render import close_all, write_html, write_markdown
from ctxbench.report.tables import (
    comparison_frame,
    format_table,
    per_transcript_frame,
    retention_tables,
    terminal_width,
)

FORMATS = ("html", "md", "csv", "parquet")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ctxbench report",
        description="Gather runs, multiruns or result roots into tables, plots, an HTML report and a Markdown summary.",
    )
    p.add_argument("results", nargs="+", help="result roots, run or multirun folders, cell folders")
    p.add_argument("--out", default="report", help="output folder (default: ./report)")
    p.add_argument("--format", default="html,md,csv", help=f"comma list of {','.join(FORMATS)} (default html,md,csv)")
    p.add_argument("--transcript", help="transcript for the per-call plots (default: the longest)")
    p.add_argument("--title", default="ctxbench report", help="the report's heading (default: ctxbench report)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (they show only on a terminal)")
    p.add_argument(
        "--no-ci", action="store_true", help="no bootstrap intervals in the tables (as report.ci=false for a run)"
    )
    p.add_argument("--wide", action="store_true", help="print the table in one piece, however wide")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap over transcripts (default 0)")
    return p


def report_cli(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise InputError(None, "--format", f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    rs = gather(args.results)
    if not rs.summaries:
        raise InputError(", ".join(args.results), None, "no complete result cells found")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(exc, out) from None
    progress = not args.no_progress and show_progress("auto")
    cells, comparison = rs.cells, comparison_frame(rs.summaries, ci=not args.no_ci, seed=args.seed)
    calls = rs.calls(progress=progress)
    if args.transcript and args.transcript not in set(cells["transcript"]):
        raise InputError(None, "--transcript", f"no transcript {args.transcript!r} in these results")
    written: list[Path] = []
    retention = retention_tables(rs.summaries)
    retention["Per transcript"] = per_transcript_frame(cells)  # where each total comes from
    tables = {"cells": cells.drop(columns=["overrides"]), "comparison": comparison, "calls": calls}
    tables.update({_file_name(title): table for title, table in retention.items()})
    for fmt in ("csv", "parquet"):
        if fmt in formats:
            for name, table in tables.items():
                path = out / f"{name}.{fmt}"
                if fmt == "csv":
                    write_text_atomic(path, table.to_csv(index=False))
                else:
                    write_bytes_atomic(path, table.to_parquet(index=False))
                written.append(path)
    if "html" in formats or "md" in formats:
        steps = tqdm(total=2, desc="plots", disable=not progress, leave=False)
        plots = all_plots(rs, cells, calls, args.transcript, comparison)
        steps.update(1)
        if "html" in formats:
            written.append(write_html(out / "report.html", args.title, args.results, comparison, plots, retention))
        if "md" in formats:
            written.append(out / "report.md")
            written += write_markdown(out / "report.md", args.title, args.results, comparison, plots, retention)
        steps.update(1)
        steps.close()
        close_all(plots)
    print(format_table(comparison, terminal_width(args.wide)))
    print(f"\n{len(rs.summaries)} cells, {len(calls)} calls; wrote {len(written)} files to {out}:")
    for path in written:
        print(f"  {path}")
    return 0


def _file_name(title: str) -> str:
    return "_".join(title.lower().replace(",", "").replace("(", "").replace(")", "").split())
