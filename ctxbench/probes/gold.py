"""Score probe extraction against hand-labelled gold probes (tests/data/probe_gold/).

A gold file names source files of the dev transcripts, and per transcript the labels and which
probe types were labelled exhaustively (``complete``). Recall counts every gold label; precision
counts extracted probes of complete types only (elsewhere an unlabelled probe may be right).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.probes.boilerplate import find_boilerplate
from ctxbench.probes.extract import Candidate, extract_candidates, same_file
from ctxbench.transcripts.importer import import_file
from ctxbench.transcripts.model import Transcript

_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def matches(label: str, gold: str, answer: str) -> bool:
    """Whether an extracted answer is the labelled fact (per type: paths by tail, commands by
    prefix, sentences by containment)."""
    g, a = _norm(gold), _norm(answer)
    if label in ("file_edited", "file_read"):
        return same_file(gold, answer)
    if label == "command":
        return a == g or a.startswith(g) or (g.startswith(a) and len(a) >= 40)
    if label in ("task", "constraint", "final"):
        return g in a or (a in g and len(a) >= 12)
    return a == g


@dataclass
class Score:
    true_pos: Counter[str] = field(default_factory=Counter)  # extracted and labelled (complete types)
    false_pos: Counter[str] = field(default_factory=Counter)
    found: Counter[str] = field(default_factory=Counter)  # gold labels matched by some extracted probe
    gold: Counter[str] = field(default_factory=Counter)
    misses: list[dict[str, Any]] = field(default_factory=list)
    extras: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def _ratio(a: int, b: int) -> float:
        return a / b if b else 1.0

    def precision(self, label: str | None = None) -> float:
        tp = self.true_pos[label] if label else sum(self.true_pos.values())
        fp = self.false_pos[label] if label else sum(self.false_pos.values())
        return self._ratio(tp, tp + fp)

    def recall(self, label: str | None = None) -> float:
        found = self.found[label] if label else sum(self.found.values())
        gold = self.gold[label] if label else sum(self.gold.values())
        return self._ratio(found, gold)

    def table(self) -> str:
        labels = sorted(set(self.gold) | set(self.true_pos) | set(self.false_pos))
        lines = [f"{'type':12} {'gold':>5} {'recall':>7} {'extracted':>9} {'precision':>9}"]
        for label in [*labels, None]:
            extracted = (
                (self.true_pos[label] + self.false_pos[label])
                if label
                else sum((self.true_pos + self.false_pos).values())
            )
            gold = self.gold[label] if label else sum(self.gold.values())
            lines.append(
                f"{label or 'all':12} {gold:5d} {self.recall(label):7.1%} {extracted:9d} {self.precision(label):9.1%}"
            )
        return "\n".join(lines)


def load_gold(folder: Path) -> list[dict[str, Any]]:
    """Every labelled transcript of every gold file, in file order."""
    out = []
    for path in sorted(folder.glob("*.json")):
        for entry in json.loads(path.read_text("utf-8"))["transcripts"]:
            out.append({**entry, "gold_file": path.name})
    return out


def score(
    gold: Iterable[dict[str, Any]], transcripts: dict[str, Transcript], extracted: dict[str, list[Candidate]]
) -> Score:
    result = Score()
    for entry in gold:
        tid = entry["transcript"]
        cands = extracted[tid]
        complete = set(entry["complete"])
        labels = entry["probes"]
        for g in labels:
            result.gold[g["type"]] += 1
            if any(c.label == g["type"] and matches(g["type"], g["gold"], c.answer) for c in cands):
                result.found[g["type"]] += 1
            else:
                result.misses.append({"transcript": tid, **g})
        for c in cands:
            if c.label not in complete:
                continue
            if any(g["type"] == c.label and matches(c.label, g["gold"], c.answer) for g in labels):
                result.true_pos[c.label] += 1
            else:
                result.false_pos[c.label] += 1
                result.extras.append(
                    {"transcript": tid, "type": c.label, "answer": c.answer, "message": c.message_index}
                )
    return result


def score_folder(gold_dir: Path, transcripts_root: Path, held_out_only: bool = False) -> Score:
    """Import the labelled source files, find boilerplate across all of them, extract, score.
    ``held_out_only``: only the transcripts labelled after the extractor was written (``held_out``)."""
    gold = [e for e in load_gold(gold_dir) if e.get("held_out") or not held_out_only]
    files = sorted({e["file"] for e in gold})
    transcripts: dict[str, Transcript] = {}
    for rel in files:
        for t in import_file(transcripts_root / rel):
            transcripts[t.id] = t
    boilerplate = find_boilerplate(transcripts.values())
    wanted = {e["transcript"] for e in gold}
    missing = wanted - transcripts.keys()
    if missing:
        raise KeyError(f"gold names transcripts not found in the sources: {sorted(missing)}")
    extracted = {tid: extract_candidates(transcripts[tid], boilerplate) for tid in wanted}
    return score(gold, transcripts, extracted)
