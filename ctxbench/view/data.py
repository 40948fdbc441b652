"""What the viewer shows of a cell, read from its files: the calls as columns, its events by call,
the thresholds its strategy acted at, the recorded prompts (``contexts.jsonl.gz``, kept compact: the
page rebuilds each prompt) and each probe's story (stated, needed, lost at which call, by which
layer) from ``retention.jsonl``."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ctxbench.errors import InputError
from ctxbench.replay.contexts import FILE as CONTEXTS_FILE
from ctxbench.replay.contexts import READ as CONTEXTS_READ
from ctxbench.replay.contexts import decoded, expand

METRICS = (
    "calls",
    "tokens_sent_total",
    "tokens_sent_peak",
    "tokens_uncompacted_total",
    "savings",
    "overflow_errors",
    "retries",
    "failed_calls",
    "retention",
    "agent_cost_usd",
    "cache_hit_share",
)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's rows ([] when absent); a bad line is an error naming the file and line."""
    if not path.exists():
        return []
    rows = []
    number = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8") as handle:
            for line in handle:
                number += 1
                if line.strip():
                    rows.append(json.loads(line))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {number}", f"not valid JSON ({exc.msg})") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # a cut or corrupt gzip file, bad bytes
        raise InputError(path, f"line {number + 1}", f"unreadable ({exc})") from None
    return rows


def read_contexts(cell_dir: Path) -> dict[str, Any] | None:
    """The cell's recorded prompts: ``{"header": ..., "rows": [...]}``, each entry in version 1's form
    (``replay.contexts.decoded``: what the page rebuilds prompts from), or None if not recorded."""
    path = cell_dir / CONTEXTS_FILE
    rows = read_rows(path)
    if not rows:
        return None
    if rows[0].get("format") not in CONTEXTS_READ:
        wanted = " or ".join(CONTEXTS_READ)
        raise InputError(path, "line 1", f"not a {wanted} file (format {rows[0].get('format')!r})")
    rows = decoded(rows)
    return {"header": rows[0], "rows": rows[1:]}


def prompt_of(contexts: dict[str, Any], call: int) -> list[dict[str, Any]]:
    """The messages call ``call`` sent, each its stored entry with ``text`` made whole."""
    table: dict[str, dict[str, Any]] = {}
    refs: list[str] = []
    for row in contexts["rows"]:
        table.update(row.get("new") or {})
        if row.get("call") is None:
            continue
        refs = expand(row["refs"], refs)
        if row["call"] == call:
            break
    else:
        raise KeyError(call)
    by_index = {e["index"]: e for e in table.values() if "index" in e}
    out = []
    for ref in refs:
        entry = dict(table[ref])
        if "origin" in entry:
            entry["text"] = by_index[entry["origin"]]["text"][: entry["same"]] + entry["text"]
        out.append(entry)
    return out


def probe_stories(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per probe: the question and gold, where it was stated and needed, its verdict when needed and
    at the end, and the first call it was missing with the layers that ran there."""
    by_probe: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_probe[str(row.get("probe"))].append(row)
    out = []
    for probe, history in by_probe.items():
        last = history[-1]
        missing = next((r for r in history if r.get("status") != "kept"), None)
        needed = next((r for r in history if r.get("checkpoint") == "needed"), None)
        out.append(
            {
                "probe": probe,
                "question": last.get("question"),
                "gold": last.get("gold"),
                "stated_at": last.get("stated_at"),
                "needed_at": last.get("needed_at"),
                "when_needed": needed.get("status") if needed else None,
                "status": last.get("status"),
                "first_missing_call": missing.get("call") if missing else None,
                "layers": (missing.get("layers") or []) if missing else [],
            }
        )
    return sorted(out, key=lambda p: (p["stated_at"] if isinstance(p["stated_at"], int) else -1, p["probe"]))


def cell_data(cell_dir: Path, summary: dict[str, Any], name: str) -> dict[str, Any]:
    """Everything one cell's page shows (JSON-able)."""
    calls = read_rows(cell_dir / "calls.jsonl")
    events = read_rows(cell_dir / "events.jsonl")
    contexts = read_contexts(cell_dir)
    cell = summary.get("cell", {})
    metrics = summary.get("metrics", {})
    columns: dict[str, list[Any]] = {
        "call": [c.get("call") for c in calls],
        "sent": [c.get("tokens_sent") for c in calls],
        "full": [c.get("tokens_uncompacted") for c in calls],
        "estimated": [c.get("tokens_estimated") for c in calls],
        "accepted": [bool(c.get("accepted", True)) for c in calls],
        "layers": [list(c.get("layers") or []) for c in calls],
        "state": [c.get("state") for c in calls],
        "cached": [c.get("cached_tokens") for c in calls],
        "cost": [c.get("cost_usd") for c in calls],
        "message_index": [c.get("message_index") for c in calls],
    }
    events_by_call: dict[int, list[dict[str, Any]]] = defaultdict(list)
    status_used: list[int | None] = [None] * len(calls)
    for event in events:
        call = event.get("call")
        if not isinstance(call, int):
            continue
        events_by_call[call].append(event)
        # The strategy's count before its layers ran: what its thresholds compare against.
        first = 0 <= call < len(calls) and status_used[call] is None
        if first and event.get("type") == "context.status" and event.get("compact_layer") is None:
            status_used[call] = event.get("used")
    thresholds = list(contexts["header"].get("thresholds") or []) if contexts else []
    budgets = sorted({e["budget"] for e in events if e.get("type") == "context.status" and "budget" in e})
    if thresholds:
        note = (
            "Thresholds: each proactive step's ratio times the budget it applies to, in the strategy's own estimate "
            f"(its events' budget: {', '.join(f'{b:,}' for b in budgets) or 'none reported'})."
        )
    elif budgets:
        note = f"This cell's events report a budget of {', '.join(f'{b:,}' for b in budgets)} tokens."
    else:
        note = "This strategy reports no thresholds."
    first_call = next((i for i, layers in enumerate(columns["layers"]) if layers), 0)
    return {
        "name": name,
        "cell": {
            "transcript": cell.get("transcript"),
            "strategy": cell.get("strategy"),
            "model": cell.get("model"),
            "overrides": cell.get("overrides") or [],
            "context_window": cell.get("context_window"),
            "config_hash": cell.get("config_hash"),
            "path": str(cell_dir),
        },
        "metrics": {k: metrics.get(k) for k in METRICS},
        "calls": columns,
        "events_by_call": {str(k): v for k, v in events_by_call.items()},
        "status_used": status_used if any(v is not None for v in status_used) else None,
        "thresholds": thresholds,
        "threshold_note": note,
        "contexts": contexts,
        "probes": probe_stories(read_rows(cell_dir / "retention.jsonl")),
        "first_call": first_call,
    }
