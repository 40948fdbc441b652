"""Regenerate the docs' figures of the main job from a run, never by hand (issue 27: typed figures went stale).

    .venv/bin/python scripts/main_job_table.py              # runs `ctxbench run -q -m` into a scratch folder
    .venv/bin/python scripts/main_job_table.py --results results/default   # or reads a run's results

Rewrites, between their markers:
- ``<!-- main-job-table:start -->`` ... ``end`` (README.md, docs/retention.md): the comparison table the run
  printed (``report.wide=true``: one table);
- ``<!-- main-job-pairs:start -->`` ... ``end`` (docs/retention.md): the retention differences, paired by
  transcript, whose 95% interval excludes zero, and those whose does not, from the same cells
  (``ctxbench.report.tables.paired_comparisons``, the report's "Paired differences by transcript").
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
from pathlib import Path

from ctxbench.report.load import gather
from ctxbench.report.tables import paired_comparisons
from ctxbench.run_app import comparison_table

ROOT = Path(__file__).resolve().parents[1]
TABLE = ("<!-- main-job-table:start -->", "<!-- main-job-table:end -->")
PAIRS = ("<!-- main-job-pairs:start -->", "<!-- main-job-pairs:end -->")


def replace_between(text: str, markers: tuple[str, str], body: str) -> str:
    """``text`` with what is between the two markers replaced by ``body`` (the markers kept)."""
    start, end = markers
    if start not in text or end not in text:
        return text
    head, rest = text.split(start, 1)
    return head + start + "\n" + body.rstrip("\n") + "\n" + end + rest.split(end, 1)[1]


def table_block(results: Path) -> str:
    summaries = gather([results]).summaries
    # No wall time here: it depends on the caches a machine has warm (the speed is `ctxbench bench`'s to measure).
    stamp = f"Measured {datetime.date.today().isoformat()} by `scripts/main_job_table.py` ({len(summaries)} cells):"
    return f"{stamp}\n\n```\n{comparison_table(summaries, {'wide': True})}\n```"


def pairs_block(results: Path) -> str:
    pairs = paired_comparisons(gather([results]).summaries)
    pairs = pairs[(pairs.metric == "retention") & (pairs.versus != "none")]

    def said(row: object) -> str:
        r = row  # a pandas row: the difference and its interval in percentage points
        return (
            f"{r.strategy} - {r.versus} {r.difference * 100:+.1f} "  # type: ignore[attr-defined]
            f"[{r.low * 100:+.1f}, {r.high * 100:+.1f}]"  # type: ignore[attr-defined]
        )

    apart = [said(r) for r in pairs.itertuples() if r.separated]
    close = [said(r) for r in pairs.itertuples() if not r.separated]
    return (
        f"Paired by transcript ({int(pairs.transcripts.max()) if len(pairs) else 0} transcripts; measured "
        f"{datetime.date.today().isoformat()} by `scripts/main_job_table.py`), these differences in retention "
        f"are separated (the 95% interval excludes zero): {', '.join(apart) or 'none'}. "
        f"Not separated: {', '.join(close) or 'none'}."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", help="a main job's results folder (default: run it now into a scratch folder)")
    args = parser.parse_args(argv)
    if args.results:
        results = Path(args.results)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="ctxbench-main-job-"))
        command = [sys.executable, "-m", "ctxbench.cli", "run", "-q", "-m", f"output.root={scratch}"]
        subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        results = scratch / "default"
    table, pairs = table_block(results), pairs_block(results)
    for doc in (ROOT / "README.md", ROOT / "docs" / "retention.md"):
        text = doc.read_text("utf-8")
        new = replace_between(replace_between(text, TABLE, table), PAIRS, pairs)
        if new != text:
            doc.write_text(new, "utf-8")
            print(f"rewrote {doc.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
