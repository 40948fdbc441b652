"""The gold set's tables of docs/retention.md: per part (and the sub-parts labelled on different days)
needed facts, recall, probes and their verdicts; then recall / informative precision per type.

    python scripts/probe_gold_tables.py [TRANSCRIPTS_DIR]     # default ../shared/transcripts

Reads tests/data/probe_gold/ and extracts as a run does (ctxbench.probes.gold.score_folder)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

from ctxbench.probes.gold import Score, load_gold, score_folder

GOLD = Path(__file__).resolve().parent.parent / "tests" / "data" / "probe_gold"


def verdicts(score: Score) -> Counter[str]:
    total: Counter[str] = Counter()
    for counts in score.verdicts.values():
        total.update(counts)
    return total


def part_row(name: str, score: Score) -> str:
    v = verdicts(score)
    return (
        f"| {name} | {sum(score.needed.values())} | {score.recall():.1%} | {score.probes} | "
        f"{score.precision():.1%} | {v['trivial']} ({v['trivial'] / max(1, score.probes):.1%}) | "
        f"{v['wrong']} | {v['duplicate']} |"
    )


def sub_part(root: Path, part: str, labelled_later: bool) -> Score:
    """The transcripts of a part labelled at the start (no ``labelled`` field) or later, scored
    alone: a scratch gold folder holds only them (boilerplate is still found across all sources)."""
    with tempfile.TemporaryDirectory() as scratch:
        for path in GOLD.glob("*.json"):
            data = json.loads(path.read_text("utf-8"))
            if data.get("part") == part:
                data["transcripts"] = [e for e in data["transcripts"] if ("labelled" in e) == labelled_later]
            (Path(scratch) / path.name).write_text(json.dumps(data), "utf-8")
        return score_folder(Path(scratch), root, part)


def main(root: Path) -> None:
    scores = {part: score_folder(GOLD, root, part) for part in ("dev", "untuned")}
    print("| part | needed facts | recall | probes | informative precision | trivial | wrong | duplicate |")
    print("|---|---|---|---|---|---|---|---|")
    for part in ("untuned", "dev"):
        n = len(load_gold(GOLD, part))
        print(part_row(f"{part} (all {n})", scores[part]))
        for later in (False, True):
            sub = sub_part(root, part, later)
            print(part_row(f"{part}, {'labelled later' if later else 'first'} {sub.transcripts}", sub))
    print()
    types = sorted(set().union(*(set(s.needed) | set(s.verdicts) for s in scores.values())))
    print("| type | dev | untuned |")
    print("|---|---|---|")
    for label in [*types, None]:
        cells = []
        for part in ("dev", "untuned"):
            s = scores[part]
            needed = s.needed[label] if label else sum(s.needed.values())
            recall = f"{s.recall(label):.0%}" if needed else "-"
            labelled = s.labelled(label)
            precision = f"{s.precision(label):.0%} ({labelled})" if labelled else "-"
            unasked = f"{recall} / - ({needed} needed)" if needed else "-"
            cells.append(f"{recall} / {precision}" if labelled else unasked)
        print(f"| {label or '**all**'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else GOLD.parents[2].parent / "shared" / "transcripts")
