"""Retention metrics from judgment rows: overall, by probe type, by fact age, by number
of compactions, and the list of facts lost with the layer that dropped them."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

AGE_BUCKETS = ((0, 10), (10, 50), (50, 100), (100, 10**9))
COMPACTION_BUCKETS = ((0, 1), (1, 2), (2, 4), (4, 8), (8, 10**9))


def _rate(rows: Iterable[dict[str, Any]], status: str = "kept") -> float | None:
    rows = list(rows)
    return round(sum(r["status"] == status for r in rows) / len(rows), 4) if rows else None


def _bucket(value: int, buckets: Sequence[tuple[int, int]]) -> str:
    for low, high in buckets:
        if low <= value < high:
            if high >= 10**9:
                return f"{low}+"
            return str(low) if high - 1 == low else f"{low}-{high - 1}"
    return "?"


def _grouped(
    rows: Sequence[dict[str, Any]], key: str, buckets: Sequence[tuple[int, int]] | None
) -> dict[str, float | None]:
    """``_rate`` of the rows in each group (of ``row[key]``, or of its bucket): counted in one pass,
    each distinct value's bucket named once (a masking cell has some 14,000 rows and few values)."""
    values = [row[key] for row in rows]
    if buckets:
        names = {value: _bucket(value, buckets) for value in set(values)}
        values = list(map(names.__getitem__, values))
    totals = Counter(values)
    kept = Counter(value for value, row in zip(values, rows) if row["status"] == "kept")
    order = [_bucket(low, buckets) for low, _ in buckets] if buckets else sorted(totals)
    return {k: round(kept[k] / totals[k], 4) for k in order if k in totals}


def dropped_facts(rows: Sequence[dict[str, Any]], answers: dict[str, str]) -> list[dict[str, Any]]:
    """Each probe not kept at the end, with the first checkpoint where it was no longer
    kept and the layers that ran at that call."""
    by_probe: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_probe[row["probe"]].append(row)
    out = []
    for probe, history in by_probe.items():
        if history[-1]["status"] == "kept":
            continue
        first = next(r for r in history if r["status"] != "kept")
        out.append(
            {
                "probe": probe,
                "kind": first["kind"],
                "label": first.get("label"),
                "question": first.get("question"),
                "answer": answers.get(probe, first.get("gold")),
                "status": history[-1]["status"],
                "first_missing_call": first["call"],
                "layers": first["layers"] or ["(not seen at a compaction checkpoint)"],
            }
        )
    return out


def probe_outcomes(rows: Sequence[dict[str, Any]], trivial: set[str]) -> list[dict[str, Any]]:
    """Per probe: what was asked, the gold and where it was stated, its status at the end, and the
    first call where it was missing (with the layers that ran there)."""
    by_probe: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_probe[row["probe"]].append(row)
    out = []
    for probe, history in by_probe.items():
        last = history[-1]
        missing = next((r for r in history if r["status"] != "kept"), None)
        out.append(
            {
                "probe": probe,
                "label": last.get("label") or last["kind"],
                "question": last.get("question"),
                "gold": last.get("gold"),
                "stated_at": last.get("stated_at"),
                "used_again": last.get("used_again"),
                "trivial": probe in trivial,
                "status": last["status"] if last["checkpoint"] == "end" else "not judged at the end",
                "first_missing_call": missing["call"] if missing else None,
                "layers": (missing["layers"] or []) if missing else [],
                "rejected": bool(missing and missing.get("accepted") is False),
            }
        )
    return out


def trivial_probes(rows: Sequence[dict[str, Any]]) -> set[str]:
    """Probes every strategy keeps trivially: trivial at every checkpoint they were judged at
    (stated in the system prompt or first user message, or always within the last two rounds)."""
    verdicts: dict[str, bool] = {}
    for row in rows:
        verdicts[row["probe"]] = verdicts.get(row["probe"], True) and bool(row.get("trivial", False))
    return {probe for probe, trivial in verdicts.items() if trivial}


def at_need(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per probe: where the agent next needed the fact (its first "needed" checkpoint),
    else, for a fact never used again, the end. What it had when it mattered: a rejected last call
    decides only the facts nobody needed before it."""
    needed: dict[str, dict[str, Any]] = {}
    end: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["checkpoint"] == "needed":
            needed.setdefault(row["probe"], row)
        elif row["checkpoint"] == "end":
            end[row["probe"]] = row
    return [needed.get(p) or end[p] for p in dict.fromkeys([*needed, *end]) if p in needed or p in end]


def retention_metrics(rows: Sequence[dict[str, Any]], answers: dict[str, str]) -> dict[str, Any]:
    """``retention`` is on the informative probes (trivial ones apart, see ``trivial_probes``),
    each scored where it was next needed, else at the end (``at_need``); ``retention_end`` scores
    all of them at the end of the replay. A rejected call's checkpoint counts as lost."""
    if not rows:
        return {}
    # A probe the judge could not grade says nothing about the context: counted, never "lost".
    unjudged = [r for r in rows if r["status"] == "unjudged"]
    unjudged_end = sum(1 for r in unjudged if r["checkpoint"] == "end")
    rows = [r for r in rows if r["status"] != "unjudged"]
    trivial = trivial_probes(rows)
    informative = [r for r in rows if r["probe"] not in trivial]
    end_all = [r for r in rows if r["checkpoint"] == "end"]
    end = [r for r in informative if r["checkpoint"] == "end"]
    needed = [r for r in informative if r["checkpoint"] == "needed"]
    return {
        "probes": len(end_all) + unjudged_end,
        "probes_informative": len(end),
        "probes_trivial": len(end_all) - len(end),
        "trivial_probes": sorted(trivial),
        "retention": _rate(at_need(informative)),
        "retention_end": _rate(end),
        "retention_informative": _rate(end),
        "retention_all": _rate(end_all),
        "retention_trivial": _rate(r for r in end_all if r["probe"] in trivial),
        "recoverable": _rate(end, "recoverable"),
        "retention_when_needed": _rate(needed),
        "checkpoints_rejected": sum(1 for r in rows if r.get("accepted") is False),
        "retention_by_kind": _grouped(end, "kind", None),
        "retention_by_label": _grouped([{**r, "label": r.get("label") or r["kind"]} for r in end], "label", None),
        "retention_by_age_calls": _grouped(informative, "age_calls", AGE_BUCKETS),
        "retention_by_compactions": _grouped(informative, "compactions", COMPACTION_BUCKETS),
        "dropped": dropped_facts(rows, answers),
        "probe_outcomes": probe_outcomes(rows, trivial),
        "unjudged": len(unjudged),
        "unjudged_share": round(len(unjudged) / (len(rows) + len(unjudged)), 4),
        "unjudged_at_end": unjudged_end,
    }
