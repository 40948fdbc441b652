"""Cache fidelity: the prefix-cache simulator against the cache usage providers reported.

For every transcript whose calls carry cache usage (Anthropic ``cache_read_input_tokens`` /
``cache_creation_input_tokens``, OpenAI ``cached_tokens``, DeepSeek ``prompt_cache_hit_tokens``),
the recorded history (as the agent sent it, no compaction) goes through the simulator with the
provider's rules from its shipped model config. Token positions are the provider's own: each call's
prompt is its reported ``prompt_tokens`` (the growth since the previous call is given to the new
messages), so what is measured is the caching rules (which prefix is hit, breakpoints, minimum,
steps, TTL from the recorded timestamps), not the tokenizer (``provider_fidelity.csv`` measures that).

A session's first call reads what earlier sessions cached (Claude Code's system prompt and tools),
which the transcript does not record: the read totals are compared over the calls after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ctxbench.atomic import write_csv_atomic
from ctxbench.calibration.sources import source_of
from ctxbench.replay.prefix_cache import CacheRules, PrefixCache, message_time
from ctxbench.transcripts.model import Message, Transcript

MODEL_CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "model"
# The shipped model config whose cache rules stand for each provider's.
PROVIDER_CONFIG = {"anthropic": "claude-sonnet-4", "openai": "gpt-4o", "deepseek": "deepseek-v3"}
HAIKU_MIN_TOKENS = 2048  # Anthropic's minimum cacheable prompt for Haiku models

COLUMNS = (
    "source",
    "model",
    "sessions",
    "calls",
    "reported_hit_share",
    "simulated_hit_share",
    "uncached_mape",
    "reported_reads",
    "simulated_reads",
    "reads_error",
)
SESSION_COLUMNS = ("source", "model", "transcript", "calls", "reported_reads", "simulated_reads", "reads_error")


@dataclass(frozen=True)
class CacheCall:
    """One call: the provider's reported split of its prompt and the simulator's."""

    prompt: int
    reported_cached: int
    simulated_cached: int
    simulated_written: int

    @property
    def reported_uncached(self) -> int:
        return self.prompt - self.reported_cached

    @property
    def simulated_uncached(self) -> int:
        return self.prompt - self.simulated_cached


def cache_provider(usage: dict[str, Any]) -> str | None:
    """Which provider's cache usage a call's ``usage`` carries, if any."""
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
        return "anthropic"
    if "prompt_cache_hit_tokens" in usage:
        return "deepseek"
    if "cached_tokens" in usage:
        return "openai"
    return None


def reported_cached(usage: dict[str, Any], provider: str) -> int:
    key = {"anthropic": "cache_read_input_tokens", "deepseek": "prompt_cache_hit_tokens", "openai": "cached_tokens"}
    return int(usage.get(key[provider]) or 0)


def provider_rules(provider: str, model: str | None = None) -> CacheRules:
    """The provider's rules from its shipped model config (Haiku: Anthropic's 2,048-token minimum)."""
    data = yaml.safe_load((MODEL_CONFIGS / f"{PROVIDER_CONFIG[provider]}.yaml").read_text("utf-8"))
    rules = CacheRules.from_config(data["cache"])
    assert rules is not None, f"{PROVIDER_CONFIG[provider]}.yaml has no cache block"
    # The rules alone: what they predict is measured, and what a calibration fitted is fitted again.
    rules = CacheRules(**{**rules.__dict__, "hit_rate": 1.0, "calibrated": None})
    if provider == "anthropic" and model and "haiku" in model.lower():
        rules = CacheRules(**{**rules.__dict__, "min_tokens": HAIKU_MIN_TOKENS})
    return rules


def _usage(message: Message) -> dict[str, Any] | None:
    usage = message.metadata.get("usage")
    if message.role != "assistant" or not isinstance(usage, dict) or not usage.get("prompt_tokens"):
        return None
    return usage


def simulate_transcript(transcript: Transcript, rules: CacheRules | None = None) -> list[CacheCall]:
    """The simulator on one recorded conversation, at the provider's reported prompt sizes."""
    messages = transcript.messages
    calls = [(i, u) for i, m in enumerate(messages) if (u := _usage(m)) and cache_provider(u)]
    if not calls:
        return []
    provider = cache_provider(calls[0][1])
    assert provider is not None
    rules = rules or provider_rules(provider, transcript.source.get("model"))
    cache = PrefixCache(rules)
    sizes: dict[int, int] = {}
    start = total = 0
    out: list[CacheCall] = []
    for at, usage in calls:
        prompt = int(usage["prompt_tokens"])
        segment = messages[start:at]
        for m in segment:  # a reply weighs what the provider generated; the rest of the growth is the inputs'
            sizes[id(m)] = int((_usage(m) or {}).get("completion_tokens") or 0)
        if segment:
            grown = sum(sizes[id(m)] for m in segment)
            sizes[id(segment[-1])] += max(0, prompt - total - grown)
            total += sum(sizes[id(m)] for m in segment)
        request = messages[:at]
        now = message_time(request[-1]) if request else None
        usage_sim = cache.request(request, lambda m: sizes[id(m)], prompt, now)
        out.append(CacheCall(prompt, reported_cached(usage, provider), usage_sim.cached_tokens, usage_sim.write_tokens))
        start = at
    return out


def _session_row(calls: Sequence[CacheCall]) -> tuple[int, int]:
    """Reported and simulated reads over the calls after the session's first."""
    later = calls[1:]
    return sum(c.reported_cached for c in later), sum(c.simulated_cached for c in later)


def _error(simulated: int, reported: int) -> float | None:
    return round(simulated / reported - 1, 6) if reported else None


def fidelity_rows(transcripts: Sequence[Transcript]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per (source, model) rows and per-session rows (``COLUMNS``, ``SESSION_COLUMNS``)."""
    groups: dict[tuple[str, str], list[tuple[str, list[CacheCall]]]] = {}
    for transcript in transcripts:
        calls = simulate_transcript(transcript)
        if calls:
            groups.setdefault(source_of(transcript), []).append((transcript.id, calls))
    rows, sessions = [], []
    for (source, model), group in sorted(groups.items()):
        every = [c for _, calls in group for c in calls]
        prompt = sum(c.prompt for c in every)
        errors = [
            abs(c.simulated_uncached - c.reported_uncached) / c.reported_uncached for c in every if c.reported_uncached
        ]
        reads = [_session_row(calls) for _, calls in group]
        reported, simulated = sum(r for r, _ in reads), sum(s for _, s in reads)
        rows.append(
            {
                "source": source,
                "model": model,
                "sessions": len(group),
                "calls": len(every),
                "reported_hit_share": round(sum(c.reported_cached for c in every) / prompt, 6),
                "simulated_hit_share": round(sum(c.simulated_cached for c in every) / prompt, 6),
                "uncached_mape": round(sum(errors) / len(errors), 6) if errors else None,
                "reported_reads": reported,
                "simulated_reads": simulated,
                "reads_error": _error(simulated, reported),
            }
        )
        for (tid, calls), (rep, sim) in zip(group, reads, strict=True):
            sessions.append(
                {
                    "source": source,
                    "model": model,
                    "transcript": tid,
                    "calls": len(calls),
                    "reported_reads": rep,
                    "simulated_reads": sim,
                    "reads_error": _error(sim, rep),
                }
            )
    return rows, sessions


CALIBRATION_COLUMNS = (
    "model_config",
    "provider",
    "sessions",
    "fit_calls",
    "scored_calls",
    "hit_rate",
    "ttl_seconds",
    "reported_hit_share",
    "simulated_hit_share_before",
    "simulated_hit_share_after",
)


Group = Sequence[tuple[Transcript, list[CacheCall]]]  # the sessions of one provider, simulated


def _split(group: Group) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(session, call) positions to fit on and to score on: every other call after each session's
    first (which reads what earlier sessions cached), alternating across the sessions."""
    later = [(s, k) for s, (_, calls) in enumerate(group) for k in range(1, len(calls))]
    return later[0::2], later[1::2]


def _share(group: Group, at: Sequence[tuple[int, int]], simulated: bool) -> float:
    calls = [group[s][1][k] for s, k in at]
    prompt = sum(c.prompt for c in calls)
    cached = sum(c.simulated_cached if simulated else c.reported_cached for c in calls)
    return round(cached / prompt, 6) if prompt else 0.0


TTL_CANDIDATES = (None, 300.0, 600.0, 1800.0, 3600.0)  # seconds; None: nothing expires


def _with(rules: CacheRules, **changes: Any) -> CacheRules:
    return CacheRules(**{**rules.__dict__, **changes})


def _fit_rate(group: Group, fit: Sequence[tuple[int, int]]) -> tuple[float, float]:
    """(hit_rate, error): reported reads / simulated reads on the fit calls, and the reads it then
    misses, summed per call."""
    calls = [group[s][1][k] for s, k in fit]
    simulated, reported = sum(c.simulated_cached for c in calls), sum(c.reported_cached for c in calls)
    rate = round(min(1.0, reported / simulated), 4) if simulated else 1.0
    return rate, sum(abs(rate * c.simulated_cached - c.reported_cached) for c in calls)


def _simulate(group: Group, provider: str, **changes: Any) -> list[tuple[Transcript, list[CacheCall]]]:
    out = []
    for transcript, _ in group:
        base = provider_rules(provider, transcript.source.get("model"))
        out.append((transcript, simulate_transcript(transcript, _with(base, **changes))))
    return out


def calibrate_cache(transcripts: Sequence[Transcript]) -> list[dict[str, Any]]:
    """Per shipped model config whose provider the transcripts' cache usage comes from, what the rules
    cannot know, fitted on half the calls and scored on the others by simulating again: ``hit_rate``,
    the share of the simulated reads the provider served (reported / simulated reads), and, where the
    messages carry the times they were sent, ``ttl_seconds``, the lifetime (of ``TTL_CANDIDATES`` and
    the configured one) after which the fitted reads miss the fewest tokens."""
    groups: dict[str, list[tuple[Transcript, list[CacheCall]]]] = {}
    for transcript in transcripts:
        calls = simulate_transcript(transcript)
        if calls:
            usage = next(u for m in transcript.messages if (u := _usage(m)) and cache_provider(u))
            groups.setdefault(str(cache_provider(usage)), []).append((transcript, calls))
    rows = []
    for provider, group in sorted(groups.items()):
        fit, score = _split(group)
        configured = provider_rules(provider).ttl_seconds
        timed = any(message_time(m) is not None for t, _ in group for m in t.messages)
        best = (*_fit_rate(group, fit), configured)
        if timed:
            for ttl in dict.fromkeys((configured, *TTL_CANDIDATES)):
                rate, error = _fit_rate(_simulate(group, provider, ttl_seconds=ttl), fit)
                if error < best[1]:
                    best = (rate, error, ttl)
        rate, _, ttl = best
        refit = _simulate(group, provider, hit_rate=rate, ttl_seconds=ttl)
        rows.append(
            {
                "model_config": PROVIDER_CONFIG[provider],
                "provider": provider,
                "sessions": len(group),
                "fit_calls": len(fit),
                "scored_calls": len(score),
                "hit_rate": rate,
                "ttl_seconds": ttl if timed else "not fitted (no recorded times)",
                "reported_hit_share": _share(group, score, simulated=False),
                "simulated_hit_share_before": _share(group, score, simulated=True),
                "simulated_hit_share_after": _share(refit, score, simulated=True),
            }
        )
    return rows


def calibration_yaml(rows: Sequence[dict[str, Any]]) -> str:
    """The fitted settings, per model config, as ``model.cache`` keys ``ctxbench run`` reads."""
    settings = {
        r["model_config"]: {
            "hit_rate": r["hit_rate"],
            **({"ttl_seconds": r["ttl_seconds"]} if not isinstance(r["ttl_seconds"], str) else {}),
            "calibrated": f"{r['provider']} cache usage, {r['fit_calls']} calls of {r['sessions']} sessions",
        }
        for r in rows
    }
    head = "# ctxbench calibrate --against provider: model.cache settings fitted on reported cache usage\n"
    return head + yaml.safe_dump(settings, sort_keys=True)


def run_overrides(row: dict[str, Any]) -> str:
    """The ``ctxbench run`` overrides that use one fitted row."""
    calibrated = f"{row['provider']} cache usage, {row['fit_calls']} calls of {row['sessions']} sessions"
    ttl = row["ttl_seconds"]
    fitted_ttl = "" if isinstance(ttl, str) else f"model.cache.ttl_seconds={'null' if ttl is None else ttl} "
    return (
        f"model={row['model_config']} model.cache.hit_rate={row['hit_rate']} {fitted_ttl}"
        f"'model.cache.calibrated=\"{calibrated}\"'"
    )


def write_cache_fidelity(transcripts: Sequence[Transcript], out_dir: Path) -> list[dict[str, Any]]:
    """Write cache_fidelity.csv, cache_fidelity_sessions.csv, cache_calibration.csv and
    cache_calibration.yaml; return the per-source rows."""
    from ctxbench.atomic import write_text_atomic

    rows, sessions = fidelity_rows(transcripts)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(out_dir / "cache_fidelity.csv", rows, COLUMNS)
    write_csv_atomic(out_dir / "cache_fidelity_sessions.csv", sessions, SESSION_COLUMNS)
    fitted = calibrate_cache(transcripts)
    write_csv_atomic(out_dir / "cache_calibration.csv", fitted, CALIBRATION_COLUMNS)
    write_text_atomic(out_dir / "cache_calibration.yaml", calibration_yaml(fitted))
    return rows
