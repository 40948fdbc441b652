"""The prompt-cache simulator: each provider's rules, invalidation by a rewrite, TTL, and its
use in the replay (cost with caching, the full-history baseline, O(total text))."""

import dataclasses
import random
from itertools import accumulate

import pytest

from ctxbench.replay.billing import CallBilling, LatencyModel
from ctxbench.replay.engine import replay
from ctxbench.replay.prefix_cache import CacheRules, PrefixCache
from ctxbench.replay.provider import model_from_config
from ctxbench.strategies.none import FullHistory
from ctxbench.tokens import ExactEstimator, TokenCounter, get_tokenizer
from ctxbench.transcripts.model import Message
from tests.helpers import coding_transcript

COUNTER = TokenCounter(get_tokenizer("cl100k_base"))
OPENAI = CacheRules("openai", read_price_per_mtok=1.25, min_tokens=1024, step_tokens=128)
ANTHROPIC = CacheRules("anthropic", read_price_per_mtok=0.3, write_price_per_mtok=3.75, ttl_seconds=300)
DEEPSEEK = CacheRules("deepseek", read_price_per_mtok=0.07, min_tokens=64, step_tokens=64, cache_reply=True)
# OpenAI's rules with a TTL and a hit rate: an extending request then reads its whole last one only untimed.
OPENAI_TTL = dataclasses.replace(OPENAI, ttl_seconds=250.0, hit_rate=0.75)


def conversation(rounds: int, words: int = 300, system: int = 40) -> list[Message]:
    messages = [Message("system", "You are an agent. " * system)]
    for i in range(rounds):
        messages.append(Message("user", f"observation {i}: " + " ".join(f"w{i}_{j}" for j in range(words))))
        messages.append(Message("assistant", f"reply {i}"))
    return messages


def send(cache: PrefixCache, messages: list[Message], now: float | None = None):
    return cache.request(messages, COUNTER.message, COUNTER.prompt(messages), now)


def tokens(messages: list[Message]) -> int:
    return sum(COUNTER.message(m) for m in messages)


def test_openai_hits_the_previous_prompt_in_128_token_steps_from_1024():
    history = conversation(6)
    cache = PrefixCache(OPENAI)
    first = send(cache, history[:3])
    assert first.cached_tokens == 0 and first.uncached_tokens == COUNTER.prompt(history[:3])
    second = send(cache, history[:5])
    shared = tokens(history[:3])
    assert shared >= 1024
    assert second.cached_tokens == shared - (shared - 1024) % 128
    assert 0 <= shared - second.cached_tokens < 128
    assert second.cached_tokens + second.uncached_tokens == COUNTER.prompt(history[:5])
    assert second.write_tokens == 0 and second.lost_tokens == 0


def test_openai_caches_nothing_under_1024_tokens():
    history = conversation(4, words=20)
    cache = PrefixCache(OPENAI)
    send(cache, history[:3])
    assert COUNTER.prompt(history[:5]) < 1024
    assert send(cache, history[:5]).cached_tokens == 0


def test_a_rewritten_message_invalidates_the_rest_of_the_prompt():
    history = conversation(8)
    cache = PrefixCache(OPENAI)
    send(cache, history[:13])
    masked = list(history[:15])
    masked[5] = masked[5].replace(content="[observation masked]")
    usage = send(cache, masked)
    kept = tokens(history[:5])
    assert usage.cached_tokens == kept - (kept - 1024) % 128
    assert usage.lost_tokens == tokens(history[5:13])
    assert usage.cached_tokens + usage.uncached_tokens == COUNTER.prompt(masked)


def test_anthropic_writes_at_the_breakpoint_then_reads_it():
    history = conversation(6)
    cache = PrefixCache(ANTHROPIC)
    first = send(cache, history[:3])
    assert first.cached_tokens == 0 and first.write_tokens == tokens(history[:3])
    assert first.uncached_tokens == COUNTER.tokenizer.per_request  # the framing after the last breakpoint
    second = send(cache, history[:5])
    assert second.cached_tokens == tokens(history[:3])
    assert second.write_tokens == tokens(history[3:5])


def test_anthropic_system_breakpoint_survives_a_rewrite_after_it():
    history = conversation(6, system=300)
    cache = PrefixCache(ANTHROPIC)
    send(cache, history[:9])
    rewritten = [history[0], Message("user", "summary of the earlier work " * 30), *history[9:11]]
    usage = send(cache, rewritten)
    assert usage.cached_tokens == tokens(history[:1])  # the system prompt alone was written (>= 1,024)


def test_anthropic_prefix_under_the_minimum_is_not_cached():
    short = [Message("user", "hello"), Message("assistant", "hi"), Message("user", "again")]
    cache = PrefixCache(ANTHROPIC)
    assert send(cache, short[:1]).write_tokens == 0
    assert send(cache, short).cached_tokens == 0


def test_ttl_expires_the_cache_between_recorded_timestamps_and_a_hit_refreshes_it():
    history = conversation(6)
    cache = PrefixCache(ANTHROPIC)
    send(cache, history[:3], now=0.0)
    assert send(cache, history[:5], now=290.0).cached_tokens > 0  # within 5 minutes
    assert send(cache, history[:7], now=580.0).cached_tokens > 0  # refreshed at 290 s
    late = send(cache, history[:9], now=1000.0)
    assert late.cached_tokens == 0 and late.write_tokens == tokens(history[:9])
    # Without recorded times nothing expires.
    cache = PrefixCache(ANTHROPIC)
    send(cache, history[:3])
    assert send(cache, history[:5]).cached_tokens == tokens(history[:3])


def test_deepseek_caches_the_reply_with_the_request_in_64_token_units():
    history = conversation(6)
    cache = PrefixCache(DEEPSEEK)
    send(cache, history[:2])
    usage = send(cache, history[:4])
    with_reply = tokens(history[:3])
    assert usage.cached_tokens == with_reply - with_reply % 64


def test_only_deepseek_caches_the_reply():
    history = conversation(6)
    for rules, cached in [(OPENAI, tokens(history[:2])), (DEEPSEEK, tokens(history[:3]))]:
        cache = PrefixCache(dataclasses.replace(rules, step_tokens=1))
        send(cache, history[:2])
        assert send(cache, history[:4]).cached_tokens == cached  # history[2] is the first request's reply


def test_rules_are_checked():
    with pytest.raises(ValueError, match="provider"):
        CacheRules("azure", read_price_per_mtok=1.0)
    with pytest.raises(ValueError, match="breakpoints"):
        CacheRules.from_config({"provider": "anthropic", "read_price_per_mtok": 0.3, "breakpoints": ["tools"]})
    assert CacheRules.from_config({"provider": "openai", "read_price_per_mtok": 1, "enabled": False}) is None
    with pytest.raises(ValueError, match="cache: "):
        CacheRules.from_config({"provider": "openai", "read_price": 1})


GPT4O = model_from_config(
    {
        "name": "gpt-4o-like",
        "context_window": 128_000,
        "reserved_output_tokens": 4_096,
        "tokenizer": "cl100k_base",
        "input_price_per_mtok": 2.5,
        "cache": {"provider": "openai", "read_price_per_mtok": 1.25, "min_tokens": 1024, "step_tokens": 128},
        "latency": {"uncached_prompt_token_s": 1e-4, "cached_prompt_token_s": 1e-5},
    }
)


def test_replay_prices_calls_with_caching_and_counts_each_message_once():
    t = coding_transcript(rounds=30)
    counter = TokenCounter(get_tokenizer("cl100k_base"))
    result = replay(t, FullHistory(), ExactEstimator("cl100k_base"), GPT4O, counter)
    s = result.summary
    assert counter.tokenized_chars == t.char_count  # the cache never re-tokenises
    assert 0.5 < s["cache_hit_share"] < 1
    assert s["agent_cost_usd"] < s["agent_cost_usd_uncached"]
    # The full history is what `none` sends: the baseline costs exactly the same.
    assert s["full_history_cost_usd"] == pytest.approx(s["agent_cost_usd"])
    assert s["cache_invalidations"] == 0 and s["added_latency_p50"] == pytest.approx(0)
    for call in result.calls:
        assert call["cached_tokens"] + call["uncached_tokens"] == call["tokens_sent"]


def test_billing_marks_the_layer_that_invalidated_the_cache():
    history = conversation(8)
    billing = CallBilling(GPT4O, COUNTER)
    billing.bill(history[:13], COUNTER.prompt(history[:13]), True, history, 13, COUNTER.prompt(history[:13]))
    masked = list(history[:15])
    masked[5] = masked[5].replace(content="[masked]")
    record = billing.bill(masked, COUNTER.prompt(masked), True, history, 15, COUNTER.prompt(history[:15]))
    assert record["cache_lost_tokens"] == tokens(history[5:13])
    assert record["cost_usd"] > record["cost_usd_full"] * COUNTER.prompt(masked) / COUNTER.prompt(history[:15])
    assert record["added_latency_s"] > 0  # the rewrite re-reads most of the prompt uncached


def test_latency_model_adds_its_parts():
    model = LatencyModel(1.0, 0.1, 2.0, 5.0)
    from ctxbench.replay.prefix_cache import CacheUsage

    assert model.seconds(CacheUsage(cached_tokens=10, write_tokens=1, uncached_tokens=2), 3, 1) == pytest.approx(
        3 + 1 + 6 + 5
    )


def test_a_message_grown_from_the_same_text_keeps_its_start_cached():
    # DB-GPT rewrites its system prompt every call by appending a new progress block to a fixed head.
    head = Message("system", "You are a data agent. " * 400)
    history = conversation(4)[1:]
    cache = PrefixCache(OPENAI)
    send(cache, [head.with_appended("\nprogress: step 1"), *history[:3]])
    usage = send(cache, [head.with_appended("\nprogress: step 2"), *history[:5]])
    start = COUNTER.message(head) - 2
    assert usage.cached_tokens == start - (start - 1024) % 128
    # Anthropic reads only whole prefixes written at breakpoints: the changed system prompt misses.
    cache = PrefixCache(ANTHROPIC)
    send(cache, [head.with_appended("\nprogress: step 1"), *history[:3]])
    assert send(cache, [head.with_appended("\nprogress: step 2"), *history[:5]]).cached_tokens == 0


def test_cost_savings_baseline_is_the_full_history_on_the_calls_served():
    from ctxbench.layers.mask_observations import MaskObservations
    from ctxbench.report.tables import comparison_frame, format_table
    from ctxbench.run_app import compaction_cost
    from ctxbench.strategies.pipeline import LayeredStrategy

    small = model_from_config(
        {**GPT4O.__dict__, "cache": GPT4O.cache.__dict__, "latency": None} | {"context_window": 20000}
    )
    t = coding_transcript(rounds=30)
    counter = TokenCounter(get_tokenizer("cl100k_base"))
    summaries = []
    for name, strategy in [
        ("none", FullHistory()),
        ("masking", LayeredStrategy(proactive=[{"layer": MaskObservations(n=3)}])),
    ]:
        s = replay(t, strategy, ExactEstimator("cl100k_base"), small, counter).summary
        metrics = {**s, **compaction_cost(None, s)}
        summaries.append({"cell": {"transcript": t.id, "strategy": name, "model": small.name}, "metrics": metrics})
    none, masking = (x["metrics"] for x in summaries)
    assert none["failed_calls"] > 0 and none["full_history_cost_usd"] > none["agent_cost_usd"]
    assert none["cost_savings_vs_none"] == pytest.approx(0)  # a rejected call is not a saving
    assert masking["failed_calls"] == 0 and masking["cache_invalidations_by_layer"]["mask_observations"] > 0
    table = comparison_frame(summaries).set_index("strategy")
    assert table.loc["masking", "cost_savings_vs_none"] < table.loc["masking", "savings_vs_none"]
    assert table.loc["masking", "cache_hit_share"] < table.loc["none", "cache_hit_share"]
    assert "cost_savings_vs_none" in format_table(comparison_frame(summaries))


def test_cells_without_the_cost_baseline_count_in_neither_sum():
    from ctxbench.layers.mask_observations import MaskObservations
    from ctxbench.report.tables import comparison_frame
    from ctxbench.run_app import compaction_cost
    from ctxbench.strategies.pipeline import LayeredStrategy

    counter = TokenCounter(get_tokenizer("cl100k_base"))
    summaries = []
    for seed in (0, 1):
        t = coding_transcript(rounds=20, seed=seed, tid=f"t{seed}")
        strategy = LayeredStrategy([{"layer": MaskObservations(n=3)}])
        s = replay(t, strategy, ExactEstimator("cl100k_base"), GPT4O, counter).summary
        summaries.append(
            {"cell": {"transcript": t.id, "strategy": "m", "model": "x"}, "metrics": {**s, **compaction_cost(None, s)}}
        )
    alone = comparison_frame(summaries[:1]).loc[0, "cost_savings_vs_none"]
    del summaries[1]["metrics"]["full_history_cost_usd_served"]  # a cell written before the baseline existed
    assert comparison_frame(summaries).loc[0, "cost_savings_vs_none"] == pytest.approx(alone)


def test_every_shipped_model_config_parses_and_caches_where_its_provider_does():
    from pathlib import Path

    import yaml

    folder = Path(__file__).resolve().parent.parent / "ctxbench" / "configs" / "model"
    providers = {}
    for path in sorted(folder.glob("*.yaml")):
        model = model_from_config(yaml.safe_load(path.read_text()))
        providers[model.name] = model.cache.provider if model.cache else None
        if model.cache:  # a cached token never costs more than an uncached one
            assert model.cache.read_price_per_mtok < model.input_price_per_mtok
    assert providers["gpt-4o"] == providers["gpt-4.1"] == "openai"
    assert providers["claude-sonnet-4"] == "anthropic" and providers["deepseek-v3"] == "deepseek"
    assert providers["gpt-4-32k"] is None


def test_a_request_that_extends_the_last_bills_as_a_rebuilt_cache_would():
    """Extending the cached request in place (the full-history baseline does it every call) must
    bill what a cache holding only the previous request bills, and must leave the extended
    request cached whole."""
    history = conversation(10)
    grown = PrefixCache(OPENAI)
    send(grown, history[:3])
    for end in range(5, len(history) + 1, 2):
        rebuilt = PrefixCache(OPENAI)
        send(rebuilt, history[: end - 2])
        assert send(grown, history[:end]) == send(rebuilt, history[:end])
    assert send(grown, history[:3]).lost_tokens == tokens(history[3:])


@pytest.mark.parametrize(
    "rules", [OPENAI, OPENAI_TTL, ANTHROPIC, DEEPSEEK], ids=["openai", "openai_ttl", "anthropic", "deepseek"]
)
def test_the_recorded_full_history_bills_as_when_every_prefix_is_compared(rules):
    """The engine passes the transcript's own list as the full history: each call's extends the
    last one's, which the billing then takes without comparing. The bills must be the same."""
    history = conversation(10)
    model = dataclasses.replace(GPT4O, cache=rules)
    compared, taken = CallBilling(model, COUNTER), CallBilling(model, COUNTER)
    for at in range(3, len(history), 2):
        full = COUNTER.prompt(history[:at])
        working = history[max(0, at - 6) : at]  # a window: the sent cache is compared as before
        expected = compared.bill(working, COUNTER.prompt(working), True, list(history), at, full)
        assert taken.bill(working, COUNTER.prompt(working), True, history, at, full, recorded=True) == expected


class EagerCounts(PrefixCache):
    """The reference for the counts the cache keeps: every request's running counts and total
    summed in full from its own messages, as soon as it is cached."""

    def _new_chain(self, best, shared, messages, size, sizes, extended, last_k):
        chain = super()._new_chain(best, shared, messages, size, sizes, extended, last_k)
        chain.cum = list(accumulate(map(size, chain.messages), initial=self.prefix_tokens))
        chain.total = chain.cum[-1]
        return chain


def agent_requests(seed: int, calls: int = 40) -> list[list[Message]]:
    """Requests as DB-GPT's view sends them: a system prompt rebuilt every call, a few old
    observations cut, new messages appended, sometimes a run of rounds pruned or many messages
    rewritten at once, sometimes a short request, sometimes the same system prompt again."""
    rng = random.Random(seed)
    head = Message("system", "You are a data agent. " * 40)
    history = conversation(calls * 2, words=20)[1:]
    cut: dict[int, Message] = {}
    requests, end = [], 40
    for call in range(calls):
        end += rng.choice((1, 2, 2, 3))
        for i in rng.sample(range(end - 4), rng.choice((0, 1, 2, 3))):
            cut[i] = history[i].replace(content=f"[cut {call}]")
        body = [cut.get(i, history[i]) for i in range(end)]
        shape = rng.random()
        if shape < 0.15:
            start = rng.randrange(2, 20)
            body = body[:start] + body[start + rng.randrange(18, 30) :]  # a pruned run: everything after shifts
        elif shape < 0.25:
            body = [m.replace(content=m.content[:40]) for m in body[:20]] + body[20:]  # many rewritten
        elif shape < 0.3:
            body = body[: rng.randrange(5, 30)]  # short: under the limit summed at once
        if not requests or rng.random() < 0.7:
            system = head.with_appended(f"\nprogress: step {call}")  # else the last one's: a longer prefix shared
        requests.append([system, *body])
    return requests


@pytest.mark.parametrize("rules", [OPENAI, ANTHROPIC, DEEPSEEK], ids=["openai", "anthropic", "deepseek"])
@pytest.mark.parametrize("timed", [False, True], ids=["untimed", "ttl"])
def test_counts_read_as_needed_bill_as_counts_summed_in_full(rules, timed):
    """A request's running counts are extended only as far as later requests read them, and its
    total is taken from the previous request's when they differ in a few messages: every bill must
    be what counts summed in full at once give, on DB-GPT-like requests and with expiring entries."""
    for seed in range(3):
        lazy, eager = PrefixCache(rules, prefix_tokens=37), EagerCounts(rules, prefix_tokens=37)
        partly_read = 0
        for call, messages in enumerate(agent_requests(seed)):
            now = call * 120.0 + (400.0 if call % 7 == 6 else 0.0) if timed else None  # a gap expires entries
            prompt = COUNTER.prompt(messages) + 37
            assert lazy.request(messages, COUNTER.message, prompt, now, sizes=COUNTER.sizes) == eager.request(
                messages, COUNTER.message, prompt, now
            ), (seed, call)
            partly_read += sum(len(c.cum) <= len(c.messages) for c in lazy._chains)
        assert partly_read  # the counts were not all summed at once


def test_anthropic_reads_only_ends_within_the_lookback_of_a_breakpoint():
    """A chain grown call after call holds an end per call (more than the lookback window around
    the breakpoints: looked up by position); a request reads the longest one within
    ``lookback_blocks`` before one of its breakpoints, never one further back."""
    rules = dataclasses.replace(ANTHROPIC, lookback_blocks=2, ttl_seconds=None)
    history = conversation(12)
    filler = [Message("user", f"new question {i}") for i in range(4)]
    cache = PrefixCache(rules)
    for end in range(3, 19, 2):
        send(cache, history[:end])
    assert len(cache._last.ends) > (2 + 1) * 2
    assert send(cache, [*history[:9], *filler]).cached_tokens == 0  # 9 is 4 blocks before the last breakpoint
    assert send(cache, [*history[:11], filler[0]]).cached_tokens == tokens(history[:11])


def rewrite_requests(seed: int, calls: int = 50):
    """Requests as a rewrite strategy sends them: its last prompt grown in place, or a copy that a
    layer (or two) noted as derived from it with a few messages replaced (``DerivedList``), or an
    unnoted copy with a run of rounds dropped or a message replaced."""
    from ctxbench.transcripts.running import DerivedList

    rng = random.Random(seed)
    working = conversation(6, words=40)
    for call in range(calls):
        working.extend(conversation(rng.choice((1, 1, 2)), words=30)[1:])  # the engine appends in place
        for _ in range(rng.choice((0, 1, 1, 2))):  # each a layer of the call
            shape = rng.random()
            picks = sorted(rng.sample(range(len(working)), min(len(working), rng.choice((1, 2, 3)))))
            if shape < 0.7:
                out = list(working)
                for i in picks:
                    out[i] = out[i].replace(content=f"[masked {call}]")
                working = DerivedList(out, working, picks) if shape < 0.6 else out
            elif len(working) > 12:
                start = rng.randrange(1, len(working) - 8)
                working = working[:start] + working[start + rng.randrange(2, 6) :]  # a dropped run: no note
        yield working


@pytest.mark.parametrize("rules", [OPENAI, ANTHROPIC, DEEPSEEK], ids=["openai", "anthropic", "deepseek"])
@pytest.mark.parametrize("timed", [False, True], ids=["untimed", "ttl"])
def test_requests_noted_as_derived_bill_as_when_every_prefix_is_compared(rules, timed, monkeypatch):
    """A request that is the last one grown, or noted as derived from it, is matched with the cached
    chains from the note and from what each chain shared with the last request, without comparing
    the lists: every bill must be what comparing every chain with a plain copy of it gives."""
    import ctxbench.replay.prefix_cache as prefix_cache

    compared: list[int] = []
    original = prefix_cache.common_prefix
    monkeypatch.setattr(prefix_cache, "common_prefix", lambda a, b: compared.append(1) or original(a, b))
    for seed in range(4):
        noted, plain = PrefixCache(rules, prefix_tokens=11), PrefixCache(rules, prefix_tokens=11)
        without_notes = with_notes = 0
        for call, messages in enumerate(rewrite_requests(seed)):
            now = call * 100.0 + (400.0 if call % 9 == 8 else 0.0) if timed else None
            prompt = COUNTER.prompt(messages) + 11
            compared.clear()
            expected = plain.request(list(messages), COUNTER.message, prompt, now, sizes=COUNTER.sizes)
            without_notes += len(compared)
            compared.clear()
            assert noted.request(messages, COUNTER.message, prompt, now, sizes=COUNTER.sizes) == expected, (seed, call)
            with_notes += len(compared)
            messages.append(Message("assistant", f"reply {call}"))  # the engine appends the reply in place
        assert with_notes < without_notes / 2, (with_notes, without_notes)


class TwoCaches(CallBilling):
    """The reference: the full history priced through a cache of its own from the first call."""

    def __init__(self, model, counter):
        super().__init__(model, counter)
        self._full_cache, self._in_step = PrefixCache(self.rules), False


@pytest.mark.parametrize(
    "rules", [OPENAI, OPENAI_TTL, ANTHROPIC, DEEPSEEK], ids=["openai", "openai_ttl", "anthropic", "deepseek"]
)
@pytest.mark.parametrize("parting", ["window", "rejected", "never"])
def test_the_full_history_priced_with_the_requests_bills_as_its_own_cache_would(rules, parting):
    """While a strategy sends the full history itself, both are priced once; from the call where
    they part (a compaction, a rejected call) on, the full history's cache goes on from the state
    both had. Every bill must be what two caches fed from the first call give."""
    history = [m.replace(metadata={"timestamp": 100.0 * i}) if i % 3 else m for i, m in enumerate(conversation(14))]
    model = dataclasses.replace(GPT4O, cache=rules)
    shared, reference = CallBilling(model, COUNTER), TwoCaches(model, COUNTER)
    for at in range(3, len(history), 2):
        full = COUNTER.prompt(history[:at])
        working, accepted = history[:at], True
        if parting == "window" and at > 12:
            working = history[:1] + history[at - 6 : at]  # a compaction: from here on they differ
        if parting == "rejected" and at == 9:
            accepted = False
        sent = COUNTER.prompt(working)
        expected = reference.bill(working, sent, accepted, history, at, full, recorded=True)
        assert shared.bill(working, sent, accepted, history, at, full, recorded=True) == expected, at
    assert shared._in_step == (parting == "never")
