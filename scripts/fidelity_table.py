"""Regenerate README.md's replay-fidelity table from a measurement, never by hand.

    .venv/bin/python scripts/fidelity_table.py [--transcripts ../shared/transcripts] [--readme README.md]

Imports every transcript under ``--transcripts``, measures it as ``ctxbench calibrate --against
provider`` does (``ctxbench.calibration.provider_fidelity``) and rewrites the part of the README between
``<!-- fidelity-table:start -->`` and ``<!-- fidelity-table:end -->``: one row per (source, model,
tokenizer) and the estimators' MAPE per source (the transcripts are read as ``ctxbench calibrate``
reads them).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import warnings
from pathlib import Path
from typing import Any

from ctxbench.calibration.provider_fidelity import estimator_rows, measure
from ctxbench.tokens.calibrate import load_any

START, END = "<!-- fidelity-table:start -->", "<!-- fidelity-table:end -->"
ROOT = Path(__file__).resolve().parents[1]


def _load(root: Path) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the importers' own warnings are ctxbench import's to print
        return load_any([root])


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def table(transcripts: list[Any]) -> str:
    fidelity = measure(transcripts)
    lines = [
        f"Measured {datetime.date.today().isoformat()} by `scripts/fidelity_table.py` "
        f"({fidelity.transcripts} transcripts with usage, {len(fidelity.calls)} calls):",
        "",
        "| source | model | tokenizer | calls | median replayed/reported | tool schemas | fitted overhead "
        "| error after overhead (scored calls) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in fidelity.fidelity_rows():
        schemas = f"{r['tool_schema_tokens']:,} tokens" if r["tool_schema_tokens"] else "not recorded"
        lines.append(
            f"| {r['source']} | {r['model']} | {r['tokenizer']} | {r['calls']:,} | {r['median_ratio']:.3f} "
            f"| {schemas} | {r['fitted_overhead_tokens']:,} tokens | {_pct(r['mape_after_overhead'])} "
            f"({r['scored_calls']}) |"
        )
    est = [r for r in estimator_rows(transcripts) if r["estimator"] in ("anchored", "ema")]
    lines += ["", "Estimators against the same calls (MAPE; calibrating ones observe each reported count):", ""]
    lines += ["| source | calls | anchored | ema |", "|---|---:|---:|---:|"]
    by_source: dict[str, dict[str, Any]] = {}
    for r in est:
        by_source.setdefault(r["source"], {})[r["estimator"]] = r
    for source, rows in by_source.items():
        calls = next(iter(rows.values()))["calls"]
        lines.append(
            f"| {source} | {calls:,} | {_pct(rows.get('anchored', {}).get('mape'))} "
            f"| {_pct(rows.get('ema', {}).get('mape'))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=Path, default=ROOT.parent / "shared" / "transcripts")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{args.readme}: no {START} ... {END} block to fill", file=sys.stderr)
        return 2
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{table(_load(args.transcripts))}\n{END}{tail}"
    tmp = args.readme.with_name(args.readme.name + ".tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(args.readme)  # the README is replaced whole
    print(f"{args.readme}: fidelity table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
