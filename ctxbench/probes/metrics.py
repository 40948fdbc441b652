"""Retention metrics from judgment rows: overall, by probe type, by fact age, by number
of compactions, and the list of facts lost with the layer that dropped them."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

AGE_BUCKETS = ((0, 10), (10, 50), (50, 100), (100, 10**9))
COMPACTION_BUCKETS = ((0, 1), (1, 2), (2, 4), (4, 8), (8, 10**9))


REQUIRED: Any = object()  # a column's rows must hold the field (no default)


class RowTable:
    """Judgment rows as columns: ``column(key)`` is ``row[key]`` of every row, in order (``default``
    given: ``row.get(key, default)``), ``row(i)`` the i-th row's dict. The metrics read a few
    fields of every row and whole rows only for their lists (``dropped``, ``probe_outcomes``), so
    a table need not hold a dict per row (``ProbeObserver.table``: a masking cell has some 14,000)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def column(self, key: str, default: Any = REQUIRED) -> Sequence[Any]:
        raise NotImplementedError

    def row(self, index: int) -> Mapping[str, Any]:
        raise NotImplementedError


class DictRows(RowTable):
    """A table over rows as dicts. A column reads a row's field only when that row is read (as the
    metrics read plain rows: a row that is not informative need not have an age)."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, key: str, default: Any = REQUIRED) -> Sequence[Any]:
        return _Field(self.rows, key, default)

    def row(self, index: int) -> Mapping[str, Any]:
        return self.rows[index]


class _Field(Sequence[Any]):
    """``row[key]`` (or ``row.get(key, default)``) of each row, read when asked for."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], key: str, default: Any) -> None:
        self.rows, self.key, self.default = rows, key, default

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        row = self.rows[index]
        return row[self.key] if self.default is REQUIRED else row.get(self.key, self.default)


def _table(rows: Sequence[Mapping[str, Any]] | RowTable) -> RowTable:
    return rows if isinstance(rows, RowTable) else DictRows(rows)


def _rate(rows: Iterable[dict[str, Any]], status: str = "kept") -> float | None:
    rows = list(rows)
    return round(sum(r["status"] == status for r in rows) / len(rows), 4) if rows else None


def _rate_of(picked: Sequence[int], statuses: Sequence[str], status: str = "kept") -> float | None:
    """``_rate`` of the rows at ``picked``."""
    return round(sum(statuses[i] == status for i in picked) / len(picked), 4) if picked else None


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
    """``_rate`` of the rows in each group (of ``row[key]``, or of its bucket)."""
    return _grouped_of(range(len(rows)), [row[key] for row in rows], [row["status"] for row in rows], buckets)


def _grouped_of(
    picked: Sequence[int],
    values: Sequence[Any] | Mapping[int, Any],
    statuses: Sequence[str],
    buckets: Sequence[tuple[int, int]] | None,
) -> dict[str, float | None]:
    """``_grouped`` of the rows at ``picked``, their values in ``values``: counted in one pass, each
    distinct value's bucket named once (a masking cell has some 14,000 rows and few values)."""
    keys = [values[i] for i in picked]
    if buckets:
        names = {value: _bucket(value, buckets) for value in set(keys)}
        keys = list(map(names.__getitem__, keys))
    totals = Counter(keys)
    kept = Counter(key for key, i in zip(keys, picked) if statuses[i] == "kept")
    order = [_bucket(low, buckets) for low, _ in buckets] if buckets else sorted(totals)
    return {k: round(kept[k] / totals[k], 4) for k in order if k in totals}


def _by_probe(picked: Iterable[int], probes: Sequence[str]) -> dict[str, list[int]]:
    by_probe: dict[str, list[int]] = defaultdict(list)
    for i in picked:
        by_probe[probes[i]].append(i)
    return by_probe


def dropped_facts(rows: Sequence[dict[str, Any]], answers: dict[str, str]) -> list[dict[str, Any]]:
    """Each probe not kept at the end, with the first checkpoint where it was no longer
    kept and the layers that ran at that call."""
    return _dropped(DictRows(rows), range(len(rows)), answers)


def _dropped(table: RowTable, picked: Iterable[int], answers: dict[str, str]) -> list[dict[str, Any]]:
    statuses = table.column("status")
    out = []
    for probe, history in _by_probe(picked, table.column("probe")).items():
        if statuses[history[-1]] == "kept":
            continue
        first = table.row(next(i for i in history if statuses[i] != "kept"))
        out.append(
            {
                "probe": probe,
                "kind": first["kind"],
                "label": first.get("label"),
                "question": first.get("question"),
                "answer": answers.get(probe, first.get("gold")),
                "status": statuses[history[-1]],
                "first_missing_call": first["call"],
                "layers": first["layers"] or ["(not seen at a compaction checkpoint)"],
            }
        )
    return out


def probe_outcomes(rows: Sequence[dict[str, Any]], trivial: set[str]) -> list[dict[str, Any]]:
    """Per probe: what was asked, the gold and where it was stated, its status at the end, and the
    first call where it was missing (with the layers that ran there)."""
    return _outcomes(DictRows(rows), range(len(rows)), trivial)


def _outcomes(table: RowTable, picked: Iterable[int], trivial: set[str]) -> list[dict[str, Any]]:
    statuses = table.column("status")
    out = []
    for probe, history in _by_probe(picked, table.column("probe")).items():
        last = table.row(history[-1])
        at = next((i for i in history if statuses[i] != "kept"), None)
        missing = table.row(at) if at is not None else None
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
    table = DictRows(rows)
    return _trivial(range(len(rows)), table.column("probe"), table.column("trivial", False))


def _trivial(picked: Iterable[int], probes: Sequence[str], trivial: Sequence[Any]) -> set[str]:
    verdicts: dict[str, bool] = {}
    for i in picked:
        verdicts[probes[i]] = verdicts.get(probes[i], True) and bool(trivial[i])
    return {probe for probe, flag in verdicts.items() if flag}


def at_need(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per probe: where the agent next needed the fact (its first "needed" checkpoint),
    else, for a fact never used again, the end. What it had when it mattered: a rejected last call
    decides only the facts nobody needed before it."""
    table = DictRows(rows)
    return [rows[i] for i in _at_need(range(len(rows)), table.column("checkpoint"), table.column("probe"))]


def _at_need(picked: Iterable[int], checkpoints: Sequence[str], probes: Sequence[str]) -> list[int]:
    needed: dict[str, int] = {}
    end: dict[str, int] = {}
    for i in picked:
        if checkpoints[i] == "needed":
            needed.setdefault(probes[i], i)
        elif checkpoints[i] == "end":
            end[probes[i]] = i
    return [needed[p] if p in needed else end[p] for p in dict.fromkeys([*needed, *end])]


def retention_metrics(rows: Sequence[dict[str, Any]] | RowTable, answers: dict[str, str]) -> dict[str, Any]:
    """``retention`` is on the informative probes (trivial ones apart, see ``trivial_probes``),
    each scored where it was next needed, else at the end (``at_need``); ``retention_end`` scores
    all of them at the end of the replay. A rejected call's checkpoint counts as lost. ``rows``:
    the rows as dicts, or as a table of columns (``RowTable``)."""
    table = _table(rows)
    if not len(table):
        return {}
    status, checkpoint, probe = table.column("status"), table.column("checkpoint"), table.column("probe")
    # A probe the judge could not grade says nothing about the context: counted, never "lost".
    unjudged = [i for i in range(len(table)) if status[i] == "unjudged"]
    unjudged_end = sum(1 for i in unjudged if checkpoint[i] == "end")
    judged = [i for i in range(len(table)) if status[i] != "unjudged"]
    trivial = _trivial(judged, probe, table.column("trivial", False))
    informative = [i for i in judged if probe[i] not in trivial]
    end_all = [i for i in judged if checkpoint[i] == "end"]
    end = [i for i in informative if checkpoint[i] == "end"]
    needed = [i for i in informative if checkpoint[i] == "needed"]
    accepted, kind, label = table.column("accepted", None), table.column("kind"), table.column("label", None)
    labels = {i: label[i] or kind[i] for i in end}
    return {
        "probes": len(end_all) + unjudged_end,
        "probes_informative": len(end),
        "probes_trivial": len(end_all) - len(end),
        "trivial_probes": sorted(trivial),
        "retention": _rate_of(_at_need(informative, checkpoint, probe), status),
        "retention_end": _rate_of(end, status),
        "retention_informative": _rate_of(end, status),
        "retention_all": _rate_of(end_all, status),
        "retention_trivial": _rate_of([i for i in end_all if probe[i] in trivial], status),
        "recoverable": _rate_of(end, status, "recoverable"),
        "retention_when_needed": _rate_of(needed, status),
        "checkpoints_rejected": sum(1 for i in judged if accepted[i] is False),
        "retention_by_kind": _grouped_of(end, kind, status, None),
        "retention_by_label": _grouped_of(end, labels, status, None),
        "retention_by_age_calls": _grouped_of(informative, table.column("age_calls"), status, AGE_BUCKETS),
        "retention_by_compactions": _grouped_of(informative, table.column("compactions"), status, COMPACTION_BUCKETS),
        "dropped": _dropped(table, judged, answers),
        "probe_outcomes": _outcomes(table, judged, trivial),
        "unjudged": len(unjudged),
        "unjudged_share": round(len(unjudged) / len(table), 4),
        "unjudged_at_end": unjudged_end,
    }
