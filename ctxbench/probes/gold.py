"""Score probe extraction against the hand-labelled gold set (tests/data/probe_gold/).

Per transcript the gold lists the facts an engineer taking over would need (``needed``: type,
the fact in words, verbatim ``keys``) and labels of extracted probes (``probes``: informative,
trivial, wrong or duplicate, by the rubric of the folder's README). Two figures:

- needed-fact recall: a fact is covered when a probe holds one of its keys: its gold (or a
  specific part of one: a path inside "diff --git a/x b/x"), or its question, which names the
  fact's context (the command whose output the gold is);
- informative precision: the share of the extractor's probes labelled informative, over the
  probes that carry a label (unlabelled ones are listed, so a changed extractor gets relabelled).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.probes.boilerplate import find_boilerplate
from ctxbench.probes.extract import extract_probes
from ctxbench.transcripts.importer import import_file
from ctxbench.transcripts.model import Probe, Transcript

_SPACE = re.compile(r"\s+")
VERDICTS = ("informative", "trivial", "wrong", "duplicate")


def norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def holds(answer: str, key: str) -> bool:
    """Whether a probe's gold holds a needed fact's key: the key inside it, or the gold a specific
    part of the key (a path, or at least 10 characters, and a quarter of it at least)."""
    a, k = norm(answer), norm(key)
    specific = len(a) >= 10 or ("/" in a and len(a) >= 6)
    return bool(k) and (k in a or (specific and len(a) >= len(k) / 4 and a in k))


def covers(probe: Probe, key: str) -> bool:
    """A probe holds a fact's key in its gold, or in its question (``What did `python repro.py`
    print before the fix?`` holds the reproduction's command; its gold what it printed), or across
    the two: the key's start in the question, its end in the gold (``Which reservation did
    `cancel_reservation` act on?`` / ``NQNU5R`` holds "cancel_reservation NQNU5R")."""
    question = norm(probe.question)
    return holds(probe.answer, key) or norm(key) in question or _split(question, norm(probe.answer), norm(key))


def _split(question: str, answer: str, key: str) -> bool:
    """The key cut at a space into a head the question holds and a tail that starts the gold or
    ends it; both halves at least 4 characters, so a count ("1") and a word ("passed") apart
    never make "1 passed"."""
    for at in (i for i, ch in enumerate(key) if ch == " "):
        head, tail = key[:at].strip(" `'\""), key[at + 1 :].strip(" `'\"")
        if (
            len(head) >= 4
            and len(tail) >= 4
            and head in question
            and (answer.startswith(tail) or answer.endswith(tail))
        ):
            return True
    return False


@dataclass
class Score:
    needed: Counter[str] = field(default_factory=Counter)  # needed facts per type
    covered: Counter[str] = field(default_factory=Counter)
    covered_uncapped: Counter[str] = field(default_factory=Counter)  # by some candidate before the cap
    verdicts: dict[str, Counter[str]] = field(default_factory=dict)  # probe type -> verdict counts
    unlabelled: list[dict[str, Any]] = field(default_factory=list)
    misses: list[dict[str, Any]] = field(default_factory=list)
    probes: int = 0
    transcripts: int = 0

    def recall(self, label: str | None = None) -> float:
        got = self.covered[label] if label else sum(self.covered.values())
        of = self.needed[label] if label else sum(self.needed.values())
        return got / of if of else 1.0

    def precision(self, label: str | None = None) -> float:
        counts: Counter[str] = Counter()
        for lab, c in self.verdicts.items():
            if label is None or lab == label:
                counts.update(c)
        labelled = sum(counts.values())
        return counts["informative"] / labelled if labelled else 1.0

    def labelled(self, label: str | None = None) -> int:
        return sum(sum(c.values()) for lab, c in self.verdicts.items() if label is None or lab == label)

    def table(self) -> str:
        """Markdown: per type, needed facts and recall; probes labelled and informative precision."""
        types = sorted(set(self.needed) | set(self.verdicts))
        lines = ["| type | needed | recall | probes labelled | informative precision |", "|---|---|---|---|---|"]
        for label in [*types, None]:
            name = label or "**all**"
            needed = self.needed[label] if label else sum(self.needed.values())
            recall = f"{self.recall(label):.0%}" if needed else "-"
            labelled = self.labelled(label)
            precision = f"{self.precision(label):.0%}" if labelled else "-"
            lines.append(f"| {name} | {needed} | {recall} | {labelled} | {precision} |")
        return "\n".join(lines)


def load_gold(folder: Path, part: str | None = None) -> list[dict[str, Any]]:
    """Every labelled transcript of the gold files (``part``: only "dev" or "untuned")."""
    out = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        if part is not None and data.get("part") != part:
            continue
        out += [{**entry, "part": data.get("part"), "gold_file": path.name} for entry in data["transcripts"]]
    return out


def import_gold_transcripts(gold: list[dict[str, Any]], root: Path) -> dict[str, Transcript]:
    """The labelled transcripts, imported from the shared folder (each source file once)."""
    transcripts: dict[str, Transcript] = {}
    for rel in sorted({e["file"] for e in gold}):
        for t in import_file(root / rel):
            transcripts[t.id] = t
    missing = {e["transcript"] for e in gold} - transcripts.keys()
    if missing:
        raise KeyError(f"gold names transcripts not found in the sources: {sorted(missing)}")
    return transcripts


def score(gold: list[dict[str, Any]], selected: dict[str, list[Probe]], uncapped: dict[str, list[Probe]]) -> Score:
    result = Score()
    for entry in gold:
        tid = entry["transcript"]
        probes = selected[tid]
        result.transcripts += 1
        result.probes += len(probes)
        for fact in entry["needed"]:
            result.needed[fact["type"]] += 1
            if any(covers(p, k) for p in probes for k in fact["keys"]):
                result.covered[fact["type"]] += 1
            else:
                result.misses.append({"transcript": tid, **fact})
            if any(covers(p, k) for p in uncapped[tid] for k in fact["keys"]):
                result.covered_uncapped[fact["type"]] += 1
        labels = {(lab["type"], norm(lab["answer"])): lab["label"] for lab in entry.get("probes", [])}
        for p in probes:
            verdict = labels.get((p.label or "", norm(p.answer)))
            if verdict is None:
                result.unlabelled.append(
                    {"transcript": tid, "type": p.label, "answer": p.answer, "at": p.message_index}
                )
            else:
                result.verdicts.setdefault(p.label or "", Counter())[verdict] += 1
    return result


def score_folder(gold_dir: Path, transcripts_root: Path, part: str | None = None) -> Score:
    """Import the labelled sources, find boilerplate across them, extract as a run does, score."""
    gold = load_gold(gold_dir, part)
    transcripts = import_gold_transcripts(load_gold(gold_dir), transcripts_root)
    boilerplate = find_boilerplate(transcripts.values())
    wanted = {e["transcript"] for e in gold}
    selected = {tid: extract_probes(transcripts[tid], boilerplate=boilerplate) for tid in wanted}
    uncapped = {tid: extract_probes(transcripts[tid], 10**6, boilerplate) for tid in wanted}
    return score(gold, selected, uncapped)
