"""Retention metrics from judgment rows: overall, by probe type, by fact age, by number
of compactions, and the list of facts lost with the layer that dropped them."""

from __future__ import annotations

from collections import defaultdict
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


def _grouped(rows: Sequence[dict[str, Any]], key: str, buckets: Sequence[tuple[int, int]] | None) -> dict[str, float]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[_bucket(row[key], buckets) if buckets else row[key]].append(row)
    order = [_bucket(low, buckets) for low, _ in buckets] if buckets else sorted(groups)
    return {k: _rate(groups[k]) for k in order if k in groups}


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
                "answer": answers.get(probe),
                "status": history[-1]["status"],
                "first_missing_call": first["call"],
                "layers": first["layers"] or ["(not seen at a compaction checkpoint)"],
            }
        )
    return out


def retention_metrics(rows: Sequence[dict[str, Any]], answers: dict[str, str]) -> dict[str, Any]:
    if not rows:
        return {}
    end = [r for r in rows if r["checkpoint"] == "end"]
    needed = [r for r in rows if r["checkpoint"] == "needed"]
    return {
        "probes": len(end),
        "retention": _rate(end),
        "recoverable": _rate(end, "recoverable"),
        "retention_when_needed": _rate(needed),
        "retention_by_kind": _grouped(end, "kind", None),
        "retention_by_age_calls": _grouped(rows, "age_calls", AGE_BUCKETS),
        "retention_by_compactions": _grouped(rows, "compactions", COMPACTION_BUCKETS),
        "dropped": dropped_facts(rows, answers),
    }
