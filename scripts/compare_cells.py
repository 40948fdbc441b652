"""Are two runs' cells the same? For a speed change that must not change results (issue 24):

    ctxbench run -m output.root=/tmp/before     # on the code before
    ctxbench run -m output.root=/tmp/after      # on the code after
    python scripts/compare_cells.py /tmp/before/default /tmp/after/default

Compares every cell (by its folder under cells/) file by file: calls, events, retention rows and
snapshots byte for byte, the recorded contexts decompressed, and the summary without what names
the run (when, which code, the command line and output root). Prints one line per difference; exit 1 if any.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

EXACT = ("calls.jsonl", "events.jsonl", "retention.jsonl", "op_snapshots.jsonl")
RUN_NAMING = ("created", "git_revision", "code")  # summary keys naming the run (when, which code), not its results


def cells(results: Path) -> dict[str, Path]:
    return {str(p.parent.relative_to(results / "cells")): p.parent for p in (results / "cells").rglob("summary.json")}


def _summary(path: Path) -> Any:
    summary = json.loads(path.read_text("utf-8"))
    for key in RUN_NAMING:
        summary.pop(key, None)
    summary.get("cell", {}).pop("overrides", None)  # the command line (output.root)
    summary.get("config", {}).get("output", {}).pop("root", None)
    return summary


def differences(before: Path, after: Path) -> list[str]:
    old, new = cells(before), cells(after)
    out = [f"{name}: only in {before}" for name in sorted(old.keys() - new.keys())]
    out += [f"{name}: only in {after}" for name in sorted(new.keys() - old.keys())]
    for name in sorted(old.keys() & new.keys()):
        a, b = old[name], new[name]
        for file in EXACT:
            if (a / file).exists() != (b / file).exists() or (
                (a / file).exists() and (a / file).read_bytes() != (b / file).read_bytes()
            ):
                out.append(f"{name}: {file} differs")
        contexts = "contexts.jsonl.gz"
        if (a / contexts).exists() != (b / contexts).exists() or (
            (a / contexts).exists()
            and gzip.decompress((a / contexts).read_bytes()) != gzip.decompress((b / contexts).read_bytes())
        ):
            out.append(f"{name}: {contexts} differs (decompressed)")
        if _summary(a / "summary.json") != _summary(b / "summary.json"):
            out.append(f"{name}: summary.json differs")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: compare_cells.py RESULTS_BEFORE RESULTS_AFTER (the folders holding cells/)", file=sys.stderr)
        return 2
    before, after = map(Path, argv)
    found = differences(before, after)
    for line in found:
        print(line)
    verdict = f"{len(found)} differences" if found else "identical"
    print(f"{len(cells(before))} cells before, {len(cells(after))} after: {verdict}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
