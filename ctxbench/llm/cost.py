"""Price LLM calls (config prices first, else litellm's local cost map) and total usage records."""

from __future__ import annotations

from collections import Counter
from typing import Any


def call_cost(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    input_price_per_mtok: float | None = None,
    output_price_per_mtok: float | None = None,
) -> float:
    """USD for one call. Config prices (per 1M tokens) win; otherwise litellm's shipped price map;
    a model it does not know (e.g. a local server's) costs 0."""
    if input_price_per_mtok is not None or output_price_per_mtok is not None:
        prompt_cost = prompt_tokens * (input_price_per_mtok or 0.0)
        return (prompt_cost + completion_tokens * (output_price_per_mtok or 0.0)) / 1e6
    import litellm  # ctxbench/__init__ set LITELLM_LOCAL_MODEL_COST_MAP, so this reads the shipped map

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # litellm raises its own "not mapped" errors for unknown models
        return 0.0
    return float(prompt_cost) + float(completion_cost)


def usage_totals(usage: list[dict[str, Any]]) -> dict[str, Any]:
    """calls, prompt/completion tokens, cost and faults by kind over a list of usage records."""
    faults = Counter(r["fault"] for r in usage if r.get("fault"))
    return {
        "calls": len(usage),
        "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in usage),
        "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in usage),
        "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in usage), 10),
        "faults": dict(sorted(faults.items())),
    }
