"""A blind A/B of the probes two extractor versions select on runs in no gold file (issue 23).

    .venv/bin/python scripts/probe_ab_dump.py select -o runs.json              # the fixed set of runs
    .venv/bin/python scripts/probe_ab_dump.py dump runs.json -o new.json       # this tree's extractor
    .venv/bin/python scripts/probe_ab_dump.py dump runs.json -o old.json --tree /work/wt/old
    .venv/bin/python scripts/probe_ab_dump.py diff old.json new.json -o ab.json  # groups + blind sample
    .venv/bin/python scripts/probe_ab_dump.py score ab.json labels.json        # after labelling

``select``: mini-swe-agent DeepSeek runs of /work/nongold/output (no deepseek_reasoner run: their assistant text is
empty; no instance of a gold file) and tau-bench trials of no gold file, drawn with a fixed seed; with ``--others``,
also every SWE-agent and OpenHands run of OTHERS in no gold file. ``dump`` imports the runs (a file that cannot be
read, such as an empty one, is skipped with a one-line warning naming it) and
extracts as a run does (boilerplate found across the runs given) with the ctxbench of ``--tree`` (run in a child
process with PYTHONPATH set; the dump records which ctxbench it used). ``diff``: a probe is the same on both sides
when its run, type and normalised answer are (the gold files' key, the run for the transcript: a rerun has the same
id); it writes the old-only, new-only and common groups and which side each sampled id is on to ``-o``, and the
blind sample alone (old-only and new-only shuffled together, then common; sorted by a hash, no side) to ``-o``'s
``.blind.json``, for labelling by the rubric of tests/data/probe_gold/README.md as a JSON object {id: verdict}.
``score`` unblinds: per side, the informative and trivial share with 95% Wilson intervals, the common group weighted
by its size. Only ids, questions and answers are written, never transcripts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "tests" / "data" / "probe_gold"
NONGOLD = Path("/work/nongold/output")
# Runs of other agents than mini-swe-agent and tau-bench (issue 23's held-out kinds), taken with --others.
OTHERS = [Path("/work/nongold/swe-agent"), Path("/work/nongold/openhands-nunu/output.jsonl")]
TAU = ROOT.parent / "shared" / "transcripts" / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
VERDICTS = ("informative", "trivial", "wrong", "duplicate")


def gold_names() -> tuple[set[str], set[str]]:
    """Instances (a run's folder name) and transcript ids of every gold file."""
    instances: set[str] = set()
    ids: set[str] = set()
    for part in GOLD.glob("*.json"):
        for entry in json.loads(part.read_text())["transcripts"]:
            instances.add(Path(entry["file"]).parent.name)
            ids.add(entry["transcript"])
    return instances, ids


def select(mini: int, tau: int, seed: int, others: bool = False) -> list[dict[str, str]]:
    instances, ids = gold_names()
    runs = sorted(
        p
        for p in NONGOLD.glob("*/*/*.traj.json")
        if p.parts[-3] != "deepseek_reasoner_dev" and p.parent.name not in instances
    )
    rng = random.Random(seed)
    chosen = [{"path": str(p), "transcript": ""} for p in rng.sample(runs, min(mini, len(runs)))]
    trials = sorted(t for t in _transcript_ids(TAU) if t not in ids)
    chosen += [{"path": str(TAU), "transcript": t} for t in rng.sample(trials, min(tau, len(trials)))]
    if others:  # after the draws above, so that the runs they draw do not change
        chosen += _others(ids)
    return chosen


def _others(ids: set[str]) -> list[dict[str, str]]:
    """Every SWE-agent .traj and OpenHands run of OTHERS in no gold file."""
    files = sorted(f for o in OTHERS for f in (sorted(o.glob("*.traj")) if o.is_dir() else [o]) if f.exists())
    return [{"path": str(f), "transcript": t} for f in files for t in _transcript_ids(f) if t not in ids]


def _transcript_ids(path: Path) -> list[str]:
    from ctxbench.transcripts.importer import import_file

    return [t.id for t in import_file(path)]


def dump(runs: list[dict[str, str]]) -> dict[str, Any]:
    """The probes this process's ctxbench selects on the runs."""
    import ctxbench
    from ctxbench.errors import InputError
    from ctxbench.probes.boilerplate import find_boilerplate
    from ctxbench.probes.extract import extract_probes
    from ctxbench.transcripts.importer import import_file

    transcripts = []
    for path in sorted({r["path"] for r in runs}):
        wanted = {r["transcript"] for r in runs if r["path"] == path}
        try:
            read = import_file(Path(path))
        except InputError as exc:  # one bad run (an empty file) must not stop the batch; its message names the file
            print(f"warning: skipped {exc}", file=sys.stderr)
            continue
        # A rerun of an instance has the same transcript id: the run is its file and id.
        transcripts += [(f"{path}#{t.id}", t) for t in read if "" in wanted or t.id in wanted]
    boilerplate = find_boilerplate(t for _, t in transcripts)
    probes = [
        {
            "run": run,
            "transcript": t.id,
            "type": p.label,
            "question": p.question,
            "answer": p.answer,
            "at": p.message_index,
        }
        for run, t in transcripts
        for p in extract_probes(t, boilerplate=boilerplate)
    ]
    return {"ctxbench": ctxbench.__file__, "transcripts": len(transcripts), "probes": probes}


def _key(probe: dict[str, Any]) -> tuple[str, str, str]:
    # The gold files' identity of a probe (ctxbench.probes.gold.norm: case and whitespace folded).
    return probe["run"], probe["type"] or "", re.sub(r"\s+", " ", probe["answer"]).strip().lower()


def diff(old: dict[str, Any], new: dict[str, Any], seed: int, differing: int, common: int) -> dict[str, Any]:
    old_keys = {_key(p): p for p in old["probes"]}
    new_keys = {_key(p): p for p in new["probes"]}
    groups = {
        "old_only": [p for k, p in old_keys.items() if k not in new_keys],
        "new_only": [p for k, p in new_keys.items() if k not in old_keys],
        "common": [p for k, p in new_keys.items() if k in old_keys],
    }
    rng = random.Random(seed)
    mixed = [("old_only", p) for p in groups["old_only"]] + [("new_only", p) for p in groups["new_only"]]
    rng.shuffle(mixed)
    same = rng.sample(groups["common"], min(common, len(groups["common"])))
    picked = mixed[:differing] + [("common", p) for p in same]
    # Blind ids hide the side: a hash of the probe, not of its group.
    sample = [{"id": hashlib.md5(repr(_key(p)).encode()).hexdigest()[:8], **p} for _, p in picked]
    side = {s["id"]: g for s, (g, _) in zip(sample, picked, strict=True)}
    sizes = {g: len(v) for g, v in groups.items()}
    return {"sizes": sizes, "groups": groups, "blind": sorted(sample, key=lambda s: s["id"]), "side": side}


def score(ab: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """Per side: the shares over its groups (common + its own), each group weighted by its size; the
    interval's n is the stratified sample's effective size, 1 / sum(w_g^2 / n_g)."""
    from ctxbench.report.intervals import wilson  # here: `dump --tree` runs this script with another ctxbench

    by_group: dict[str, Counter[str]] = {g: Counter() for g in ab["sizes"]}
    types: dict[str, Counter[str]] = {g: Counter() for g in ab["sizes"]}
    for s in ab["blind"]:
        group = ab["side"][s["id"]]
        by_group[group][labels[s["id"]]] += 1
        types[group][f"{s['type']}:{labels[s['id']]}"] += 1
    labelled = {g: sum(c.values()) for g, c in by_group.items()}
    lines = [f"sizes {ab['sizes']}; labelled {labelled}"]
    for side in ("old_only", "new_only"):
        parts = [g for g in (side, "common") if sum(by_group[g].values())]
        total = sum(ab["sizes"][g] for g in parts)
        for verdict in ("informative", "trivial"):
            p = sum(ab["sizes"][g] / total * by_group[g][verdict] / sum(by_group[g].values()) for g in parts)
            n_eff = 1 / sum((ab["sizes"][g] / total) ** 2 / sum(by_group[g].values()) for g in parts)
            lo, hi = wilson(p, n_eff)
            lines.append(f"{side.split('_')[0]} {verdict} {p:.1%} [{lo:.1%}, {hi:.1%}] (n_eff {n_eff:.1f})")
    for g, c in by_group.items():
        lines.append(f"{g}: {dict(c)}")
    for g in ("old_only", "new_only"):
        lines.append(f"{g} by type:verdict: {dict(sorted(types[g].items()))}")
        lines.append(f"{g} all by type: {dict(Counter(p['type'] for p in ab['groups'][g]))}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("--mini", type=int, default=40)
    s.add_argument("--tau", type=int, default=15)
    s.add_argument("--seed", type=int, default=23)
    s.add_argument("--others", action="store_true", help="add the SWE-agent and OpenHands runs of OTHERS")
    s.add_argument("-o", type=Path, required=True)
    d = sub.add_parser("dump")
    d.add_argument("runs", type=Path)
    d.add_argument("-o", type=Path, required=True)
    d.add_argument("--tree", type=Path, help="source tree whose ctxbench extracts (default: this process's)")
    f = sub.add_parser("diff")
    f.add_argument("old", type=Path)
    f.add_argument("new", type=Path)
    f.add_argument("-o", type=Path, required=True)
    f.add_argument("--seed", type=int, default=23)
    f.add_argument("--differing", type=int, default=50)
    f.add_argument("--common", type=int, default=30)
    c = sub.add_parser("score")
    c.add_argument("ab", type=Path)
    c.add_argument("labels", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "select":
        args.o.write_text(json.dumps(select(args.mini, args.tau, args.seed, args.others), indent=1))
    elif args.cmd == "dump" and args.tree is not None:
        env = {**os.environ, "PYTHONPATH": str(args.tree.resolve())}
        return subprocess.call([sys.executable, __file__, "dump", str(args.runs), "-o", str(args.o)], env=env)
    elif args.cmd == "dump":
        args.o.write_text(json.dumps(dump(json.loads(args.runs.read_text())), indent=1))
    elif args.cmd == "diff":
        old, new = (json.loads(p.read_text()) for p in (args.old, args.new))
        ab = diff(old, new, args.seed, args.differing, args.common)
        args.o.write_text(json.dumps(ab, indent=1))
        args.o.with_suffix(".blind.json").write_text(json.dumps(ab["blind"], indent=1))
        print(ab["sizes"])
    else:
        print("\n".join(score(json.loads(args.ab.read_text()), json.loads(args.labels.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
