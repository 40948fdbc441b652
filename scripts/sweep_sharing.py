"""How much work could the cells of a threshold sweep share? (issue 24)

    ctxbench run -m +experiment=dbgpt_thresholds output.root=/tmp/sweep \\
        strategy.params.warning_threshold=0.5,0.6,0.7,0.75,0.8 strategy.params.error_threshold=0.85,0.88,0.9,0.95
    python scripts/sweep_sharing.py /tmp/sweep/dbgpt_thresholds

Groups the sweep's cells by transcript and, within a transcript, by their results (calls, events,
retention rows and snapshots byte for byte, the recorded contexts' rows decompressed, the summary's
metrics; the contexts' first line states the setting's own token levels, as its config does): a
setting whose cell equals an earlier setting's could have been copied. Also counted: the cells
equal but for the states their context.status events name (a label the thresholds give a ratio,
not a decision). For each setting, the longest common prefix of its calls with a setting whose cell
differs (the calls before the first whose calls.jsonl row or events differ); and the calls a sweep
would still replay if equal cells were copied and each other one forked from the longest prefix it
shares with a setting replayed before it. Prints a line per transcript and the totals.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

CONTENT = ("calls.jsonl", "events.jsonl", "retention.jsonl", "op_snapshots.jsonl")


def content_digest(cell: Path, files: tuple[str, ...] = CONTENT, metrics_too: bool = True) -> str:
    """A digest of what the cell found (not of what names it: config, hash, overrides, time)."""
    digest = hashlib.sha256()
    for name in files:
        path = cell / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"-") + b"\0")
    contexts = cell / "contexts.jsonl.gz"
    # Its first line states the setting's own token levels (as the summary's config does): the rows follow.
    digest.update(gzip.decompress(contexts.read_bytes()).split(b"\n", 1)[-1] if contexts.exists() else b"-")
    if metrics_too:
        metrics = json.loads((cell / "summary.json").read_text("utf-8"))["metrics"]
        digest.update(json.dumps(metrics, sort_keys=True).encode())
    return digest.hexdigest()


def common_prefix(a: list[bytes], b: list[bytes]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def first_difference(a: Path, b: Path, calls: dict[Path, list[bytes]]) -> int:
    """The first call at which two cells differ: in its calls.jsonl row or in an event it emitted."""
    at = common_prefix(calls[a], calls[b])
    ea, eb = ((c / "events.jsonl").read_bytes().splitlines() for c in (a, b))
    n = common_prefix(ea, eb)
    if n < max(len(ea), len(eb)):
        row = ea[n] if n < len(ea) else eb[n]
        at = min(at, int(json.loads(row)["call"]))
    return at


def setting(cell: Path) -> str:
    overrides = json.loads((cell / "summary.json").read_text("utf-8"))["cell"]["overrides"]
    return " ".join(o.rsplit(".", 1)[-1] for o in overrides if o.startswith("strategy.params."))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: sweep_sharing.py SWEEP_RESULTS (the folder holding cells/)", file=sys.stderr)
        return 2
    by_transcript: dict[str, list[Path]] = defaultdict(list)
    for summary in sorted(Path(argv[0], "cells").rglob("summary.json")):
        transcript = json.loads(summary.read_text("utf-8"))["cell"]["transcript"]
        by_transcript[transcript].append(summary.parent)
    total = copies = calls_total = calls_shared = calls_copied = calls_forked = 0
    copies_but_events = calls_copied_but_events = 0
    for transcript, cells in sorted(by_transcript.items()):
        groups: dict[str, list[Path]] = defaultdict(list)
        for cell in cells:
            groups[content_digest(cell)].append(cell)
        rows = {cell: (cell / "calls.jsonl").read_bytes().splitlines() for cell in cells}
        group_of = {cell: key for key, group in groups.items() for cell in group}
        prefixes = []
        for cell in cells:  # against the settings whose cells differ from this one's
            others = [first_difference(cell, o, rows) for o in cells if group_of[o] != group_of[cell]]
            prefixes.append(max(others, default=0) / max(1, len(rows[cell])))
        n_calls = sum(len(r) for r in rows.values())
        # Forking: each setting in turn replays from the longest prefix it shares with one done before.
        done: list[Path] = []
        for cell in cells:
            if not any(group_of[d] == group_of[cell] for d in done):
                calls_forked += len(rows[cell]) - max((first_difference(cell, d, rows) for d in done), default=0)
            done.append(cell)
        calls_copied += sum(len(rows[c]) for g in groups.values() for c in g[1:])
        # The same but for events.jsonl: where settings differ only in the states their context.status
        # events name (a label from the thresholds, not a decision), the summary's metrics included.
        but_events: dict[str, list[Path]] = defaultdict(list)
        for cell in cells:
            but_events[content_digest(cell, tuple(f for f in CONTENT if f != "events.jsonl"))].append(cell)
        copies_but_events += len(cells) - len(but_events)
        calls_copied_but_events += sum(len(rows[c]) for g in but_events.values() for c in g[1:])
        shared = sum(round(p * len(rows[c])) for p, c in zip(prefixes, cells, strict=True))
        total += len(cells)
        copies += len(cells) - len(groups)
        calls_total += n_calls
        calls_shared += shared
        sizes = sorted((len(g) for g in groups.values()), reverse=True)
        print(
            f"{transcript}: {len(cells)} settings, {len(groups)} distinct cells (group sizes {sizes}); "
            f"{len(cells) - len(groups)} copies ({len(cells) - len(but_events)} but for events' states); "
            "longest common call prefix with a differing cell "
            f"min {min(prefixes):.0%} median {sorted(prefixes)[len(prefixes) // 2]:.0%}"
        )
    print(
        f"all: {total} cells, {total - copies} distinct ({copies} could be copies: {copies / max(1, total):.0%}, "
        f"their calls {calls_copied:,} of {calls_total:,}: {calls_copied / max(1, calls_total):.0%}); "
        f"but for events' states {total - copies_but_events} distinct ({copies_but_events} copies, "
        f"{calls_copied_but_events / max(1, calls_total):.0%} of the calls); "
        f"calls in a common prefix with a differing cell {calls_shared:,} of {calls_total:,} "
        f"({calls_shared / max(1, calls_total):.0%}); replayed with copies and forks at the first difference "
        f"{calls_forked:,} ({calls_forked / max(1, calls_total):.0%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
