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
    cached_tokens: int = 0,
    cached_input_price_per_mtok: float | None = None,
) -> float:
    """USD for one call. Config prices (per 1M tokens) win; otherwise litellm's shipped price map;
    a model it does not know (e.g. a local server's) costs 0. ``cached_tokens`` of the prompt, as
    the provider reported them served from its prompt cache, cost the cached price (config:
    ``cached_input_price_per_mtok``, else the plain input price; litellm: the model's cache-read price)."""
    cached_tokens = max(0, min(cached_tokens, prompt_tokens))
    if input_price_per_mtok is not None or output_price_per_mtok is not None:
        input_price = input_price_per_mtok or 0.0
        cached_price = input_price if cached_input_price_per_mtok is None else cached_input_price_per_mtok
        prompt_cost = (prompt_tokens - cached_tokens) * input_price + cached_tokens * cached_price
        return (prompt_cost + completion_tokens * (output_price_per_mtok or 0.0)) / 1e6
    import litellm  # ctxbench/__init__ set LITELLM_LOCAL_MODEL_COST_MAP, so this reads the shipped map

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cache_read_input_tokens=cached_tokens,
        )
    except Exception:  # litellm raises its own "not mapped" errors for unknown models
        return 0.0
    return float(prompt_cost) + float(completion_cost)


def supports_json_schema(model: str) -> bool:
    """Whether litellm's shipped model map says the provider enforces a JSON schema on replies."""
    import litellm

    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # unknown models raise in some litellm versions
        return False


def usage_totals(usage: list[dict[str, Any]]) -> dict[str, Any]:
    """Provider calls, cache hits (answers the run already had: not calls, not billed), retries,
    prompt/completion tokens, cost and faults by kind over a list of usage records."""
    faults = Counter(r["fault"] for r in usage if r.get("fault"))
    hits = sum(1 for r in usage if r.get("cached"))
    return {
        "calls": len(usage) - hits,
        "cache_hits": hits,
        "retries": sum(max(0, int(r.get("attempts") or 1) - 1) for r in usage if not r.get("cached")),
        "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in usage),
        "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in usage),
        "cached_prompt_tokens": sum(int(r.get("cached_prompt_tokens") or 0) for r in usage),
        "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in usage), 10),
        "faults": dict(sorted(faults.items())),
    }
