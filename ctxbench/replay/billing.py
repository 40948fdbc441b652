"""What each replayed call costs with the provider's prompt caching, beside what the full
history would have cost with the same caching (the baseline of ``cost_savings_vs_none``),
and, with a latency model, the time the strategy adds or saves per call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from operator import is_not
from typing import Any

from ctxbench.replay.prefix_cache import CacheRules, CacheUsage, PrefixCache, message_time
from ctxbench.tokens.counting import TokenCounter
from ctxbench.transcripts.model import Message


@dataclass(frozen=True)
class LatencyModel:
    """Seconds per uncached prompt token (cache writes included), per cached prompt token, per
    output token, and per summariser call: the ``latency`` block of a model config."""

    uncached_prompt_token_s: float = 0.0
    cached_prompt_token_s: float = 0.0
    output_token_s: float = 0.0
    summariser_call_s: float = 0.0

    @classmethod
    def from_config(cls, data: dict[str, Any] | None) -> LatencyModel | None:
        if not data:
            return None
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"latency: {exc}") from None

    def seconds(self, usage: CacheUsage, output_tokens: int, summariser_calls: int = 0) -> float:
        return (
            (usage.uncached_tokens + usage.write_tokens) * self.uncached_prompt_token_s
            + usage.cached_tokens * self.cached_prompt_token_s
            + output_tokens * self.output_token_s
            + summariser_calls * self.summariser_call_s
        )


def prompt_cost(usage: CacheUsage, input_price: float, rules: CacheRules | None) -> float:
    """USD for a prompt billed as ``usage`` splits it (prices per 1M tokens)."""
    if rules is None:
        return (usage.cached_tokens + usage.write_tokens + usage.uncached_tokens) * input_price / 1e6
    write_price = input_price if rules.write_price_per_mtok is None else rules.write_price_per_mtok
    return (
        usage.uncached_tokens * input_price
        + usage.cached_tokens * rules.read_price_per_mtok
        + usage.write_tokens * write_price
    ) / 1e6


class CallBilling:
    """Prices every call of one replay: the strategy's request through its own prefix cache, and
    the uncompacted history (what ``none`` sends) through another."""

    def __init__(self, model: Any, counter: TokenCounter, summariser: Any = None, tools_tokens: int = 0) -> None:
        """``tools_tokens``: the tool schemas at the start of every request (cached like a prefix)."""
        self.model, self.counter, self.summariser = model, counter, summariser
        self.rules: CacheRules | None = model.cache
        self.latency: LatencyModel | None = model.latency
        self._sent_cache = PrefixCache(self.rules, tools_tokens) if self.rules else None
        # While every request so far was the full history itself (``none``'s always; another
        # strategy's until its first compaction), both caches saw the same requests: the full
        # history's is the strategy's own, priced once, and made its own copy when they part.
        self._full_cache: PrefixCache | None = None
        self._in_step = self._sent_cache is not None
        self._summariser_calls = 0
        # The full history of the last call: (the list it was read from, its length, a copy of that part).
        self._full_from: tuple[Sequence[Message], int, list[Message]] | None = None

    def bill(
        self,
        working: Sequence[Message],
        sent: int,
        accepted: bool,
        history: Sequence[Message],
        at: int,
        full: int,
        recorded: bool = False,
    ) -> dict[str, Any]:
        """Columns for call ``at`` (index of the recorded reply in ``history``): ``working`` was
        sent (``sent`` tokens, accepted or not); ``full`` tokens is the uncompacted history.
        ``recorded``: ``history`` is the transcript's own list, never changed during the replay, so
        a later call's full history extends an earlier one's read from the same list."""
        now = message_time(working[-1]) if working else None
        last = self._full_from
        extends = recorded and last is not None and last[0] is history and last[1] <= at
        past: Sequence[Message]
        if extends:
            assert last is not None  # ``extends`` says so
            # The last call's list, grown: a fresh copy of the whole history would touch every
            # message object again, each call (its reference counts), for nothing.
            grown = last[2]
            grown.extend(history[len(grown) : at])
            past = grown
        else:
            past = history[:at]
        # The transcript's list is a list, so its slice is one that later calls can grow.
        self._full_from = (history, at, past) if recorded and isinstance(past, list) else None
        if self._in_step and accepted and sent == full and _same_messages(working, past):
            # In step every request so far was the full history, billed: this one extends the last.
            usage = full_usage = self._bill(self._sent_cache, working, sent, now, extends)
        else:
            if self._in_step:  # they part here: the full history's cache is as the strategy's was
                assert self._sent_cache is not None  # in step only with caching on
                self._full_cache, self._in_step = self._sent_cache.copy(), False
            # A rejected request is neither billed nor cached.
            usage = self._bill(self._sent_cache, working, sent, now) if accepted else CacheUsage()
            full_time = message_time(past[-1]) if past else None
            full_usage = self._bill(self._full_cache, past, full, full_time, extends)
        price = self.model.input_price_per_mtok
        record: dict[str, Any] = {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.write_tokens,
            "uncached_tokens": usage.uncached_tokens,
            "cache_lost_tokens": usage.lost_tokens,
            "cost_usd": prompt_cost(usage, price, self.rules),
            "cost_usd_uncached": sent * price / 1e6 if accepted else 0.0,
            "cost_usd_full": prompt_cost(full_usage, price, self.rules),
        }
        if self.latency is not None:
            calls = len(getattr(self.summariser, "usage", None) or ())
            summariser_calls, self._summariser_calls = calls - self._summariser_calls, calls
            output = self.counter.message(history[at]) if at < len(history) else 0
            seconds = self.latency.seconds(usage, output, summariser_calls) if accepted else 0.0
            record["latency_s"] = seconds
            record["added_latency_s"] = seconds - self.latency.seconds(full_usage, output) if accepted else 0.0
        return record

    def _bill(
        self,
        cache: PrefixCache | None,
        messages: Sequence[Message],
        prompt: int,
        now: float | None,
        extends_last: bool = False,
    ) -> CacheUsage:
        if cache is None:
            return CacheUsage(uncached_tokens=prompt)
        return cache.request(
            messages, self.counter.message, prompt, now, sizes=self.counter.sizes, extends_last=extends_last
        )


def _same_messages(a: Sequence[Message], b: Sequence[Message]) -> bool:
    """Whether two requests are the same message objects (compared in C)."""
    return len(a) == len(b) and not any(map(is_not, a, b))


def cost_summary(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Cell totals of the billing columns (present only when calls carry them)."""
    if not calls or "cached_tokens" not in calls[0]:
        return {}
    cached = sum(c["cached_tokens"] for c in calls)
    billed = sum(c["cached_tokens"] + c["cache_write_tokens"] + c["uncached_tokens"] for c in calls)
    invalidated = [c for c in calls if c["cache_lost_tokens"]]
    by_layer = Counter("+".join(c["layers"]) or "(none)" for c in invalidated)
    out: dict[str, Any] = {
        "cached_tokens_total": cached,
        "cache_write_tokens_total": sum(c["cache_write_tokens"] for c in calls),
        "uncached_tokens_total": sum(c["uncached_tokens"] for c in calls),
        "cache_hit_share": round(cached / billed, 6) if billed else 0.0,
        "cache_invalidations": len(invalidated),
        "cache_lost_tokens_total": sum(c["cache_lost_tokens"] for c in invalidated),
        "cache_invalidations_by_layer": dict(sorted(by_layer.items())),
        "agent_cost_usd": round(sum(c["cost_usd"] for c in calls), 6),
        "agent_cost_usd_uncached": round(sum(c["cost_usd_uncached"] for c in calls), 6),
        "full_history_cost_usd": round(sum(c["cost_usd_full"] for c in calls), 6),
        # The baseline of cost_savings_vs_none: the full history on the calls the strategy got
        # through (a rejected call is not billed, and not a saving either).
        "full_history_cost_usd_served": round(sum(c["cost_usd_full"] for c in calls if c["accepted"]), 6),
    }
    if "added_latency_s" in calls[0]:
        added = sorted(c["added_latency_s"] for c in calls if c["accepted"])
        out["added_latency_p50"] = round(_quantile(added, 0.5), 6)
        out["added_latency_p95"] = round(_quantile(added, 0.95), 6)
    return out


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of sorted ``values`` (0 when empty)."""
    if not values:
        return 0.0
    pos = (len(values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)
