"""Per-cell LLM accounting for summary.json: calls, cache hits, retries, cost and failures by
role and kind, the degradation the failures caused (circuit-breaker trips, five_layer summary
levels) and how far the judge can be trusted (control answers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ctxbench.llm.cost import usage_totals

# Event types the compaction layers emit when a summary failed or degraded.
BREAKER_EVENT = "circuit_breaker.open"
LEVELS_EVENT = "five_layer.summary"
SUMMARY_EVENTS = ("compaction.summary", "anchored_summary")  # a summary written (DB-GPT Layer 3, anchored)


def failures_by_role(usage: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{role: {kind: count}} over usage records (one record per LLM call, with its fault)."""
    counts: dict[str, Counter] = {}
    for record in usage:
        if record.get("fault"):
            counts.setdefault(record.get("role") or "?", Counter())[record["fault"]] += 1
    return {role: dict(sorted(c.items())) for role, c in sorted(counts.items())}


def degradation_metrics(events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Summaries written, and how often compaction fell back: circuit-breaker trips and five_layer
    summary levels (1 full, 2 oversized messages left out, 3 bare notice; "failed": no level reached)."""
    trips = sum(1 for e in events if e.get("type") == BREAKER_EVENT)
    summaries = sum(
        1
        for e in events
        if e.get("type") in SUMMARY_EVENTS or (e.get("type") == LEVELS_EVENT and e.get("level") in (1, 2))
    )
    levels = Counter(str(e.get("level") or "failed") for e in events if e.get("type") == LEVELS_EVENT)
    out: dict[str, Any] = {"circuit_breaker_trips": trips, "summaries": summaries}
    if levels:
        out["summary_levels"] = dict(sorted(levels.items()))
        out["degraded_summaries"] = sum(n for level, n in levels.items() if level != "1")
    return out


def llm_metrics(
    summariser_usage: Sequence[dict[str, Any]],
    judge_usage: Sequence[dict[str, Any]],
    events: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The LLM side of a cell: compaction (summariser) and judge (answerer + grader) calls, cache hits,
    retries and cost; failures by role and kind; ``llm_cost_usd`` = compaction + judge."""
    compaction, judging = usage_totals(list(summariser_usage)), usage_totals(list(judge_usage))
    failures = failures_by_role([*summariser_usage, *judge_usage])
    llm_cost = round(compaction["cost_usd"] + judging["cost_usd"], 6)
    metrics: dict[str, Any] = {
        "compaction_calls": compaction["calls"],
        "compaction_cache_hits": compaction["cache_hits"],
        "compaction_retries": compaction["retries"],
        "compaction_cost_usd": round(compaction["cost_usd"], 6),
        "judge_calls": judging["calls"],
        "judge_cache_hits": judging["cache_hits"],
        "judge_retries": judging["retries"],
        "judge_cost_usd": round(judging["cost_usd"], 6),
        "llm_cost_usd": llm_cost,
        "llm_failures": failures,
        "llm_failures_total": sum(n for kinds in failures.values() for n in kinds.values()),
        "summariser_failures": sum(failures.get("summariser", {}).values()),
    }
    metrics.update(degradation_metrics(events))
    return metrics
