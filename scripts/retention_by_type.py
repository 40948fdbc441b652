"""Retention per probe type and strategy, each fact scored where it was next needed (else at the end),
pooled over a results folder's cells: what each strategy loses, by kind of fact.

    python scripts/retention_by_type.py RESULTS_DIR        # e.g. results/default

docs/retention.md's table "What each strategy loses" is this script's output (its run is stated there)."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from ctxbench.probes.metrics import at_need, trivial_probes


def table(root: Path) -> str:
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for summary_path in sorted(root.rglob("summary.json")):
        summary = json.loads(summary_path.read_text("utf-8"))
        strategy = str(summary.get("cell", {}).get("strategy", "?"))
        rows_path = summary_path.parent / "retention.jsonl"
        if not rows_path.exists():
            continue
        rows = [json.loads(line) for line in rows_path.read_text("utf-8").splitlines() if line.strip()]
        rows = [r for r in rows if r.get("status") != "unjudged"]
        trivial = trivial_probes(rows)
        for row in at_need([r for r in rows if r["probe"] not in trivial]):
            tally = counts[strategy][row.get("label") or row.get("kind", "?")]
            tally[0] += row["status"] == "kept"
            tally[1] += 1
    strategies = sorted(counts)
    labels = sorted({label for by in counts.values() for label in by})
    lines = ["| type | " + " | ".join(strategies) + " |", "|---|" + "---|" * len(strategies)]
    for label in labels:
        cells = []
        for s in strategies:
            kept, n = counts[s].get(label, [0, 0])
            cells.append(f"{kept / n:.0%} ({n})" if n else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python scripts/retention_by_type.py RESULTS_DIR")
    print(table(Path(sys.argv[1])))
