"""Provider prompt caching, simulated: for every accepted request, how many of its tokens the
provider serves from its prefix cache, how many it writes to it, and how many it bills in full.

Rules per provider (docs/cost.md, /work/shared/docs/reference.md section 8, as billed late 2026):

- ``openai``: automatic; a prompt of at least ``min_tokens`` (1,024) hits the longest cached prefix
  of an earlier prompt, counted in ``step_tokens`` (128) steps above the minimum.
- ``anthropic``: explicit breakpoints (``breakpoints``: ``system`` = after the leading system
  messages, ``last_message`` = at the end of the request; up to 4). A request reads the longest
  prefix written earlier that ends within ``lookback_blocks`` messages before one of its breakpoints,
  and writes the prefix up to its last breakpoint (if at least ``min_tokens``); writes are billed at
  ``write_price_per_mtok``, reads at ``read_price_per_mtok``. A hit refreshes the entry's TTL.
- ``deepseek``: automatic, in ``step_tokens`` (64) units; the previous request's reply is cached
  with it (``cache_reply``).

A TTL applies only where messages carry a ``timestamp`` (Claude Code imports do); without
recorded times nothing expires. The shared prefix is found at message boundaries by identity
(``common_prefix``: unchanged messages are the very same objects) and priced from running
token counts kept per cached request, so a request costs O(its changed messages) in Python,
never a re-tokenisation. Matching whole messages undercounts a hit by at most the part of the
first changed message that happens to be unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate, compress, count, islice
from operator import is_not
from typing import Annotated, Any

from ctxbench.core import Param
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.running import REPLACED_LIMIT, common_prefix, noted_changes

PROVIDERS = ("openai", "anthropic", "deepseek")
BREAKPOINTS = ("system", "last_message")
MAX_BREAKPOINTS = 4  # Anthropic's limit per request
CLOSING_TOKENS = 2  # a message's count includes its closing framing, which a grown copy moves past
MAX_ENTRIES = 4  # cached request chains kept; older ones are dropped (a compaction rarely returns to them)
SUMMED_LIMIT = 32  # up to this many messages after the shared part are summed at once (see _new_chain)


@dataclass(frozen=True)
class CacheRules:
    """One provider's caching rules and cache prices (USD per 1M tokens), from the model config."""

    provider: Annotated[str, Param("whose caching rules: openai, anthropic, deepseek, ...")]
    read_price_per_mtok: Annotated[float, Param("USD per 1M prompt tokens served from the cache", ge=0)]
    write_price_per_mtok: Annotated[
        float | None, Param("USD per 1M tokens written to the cache (null: the input price)", ge=0)
    ] = None
    min_tokens: Annotated[int, Param("the shortest prefix the provider caches", ge=0)] = 1024
    step_tokens: Annotated[int, Param("cached prefixes grow in steps of this many tokens", ge=1)] = 1
    ttl_seconds: Annotated[
        float | None, Param("a cached prefix expires after this long unused (null: never)", ge=0)
    ] = None
    breakpoints: Annotated[tuple[str, ...], Param("where cache breakpoints go (system, last_message, ...)")] = (
        "system",
        "last_message",
    )
    lookback_blocks: Annotated[int, Param("blocks the provider looks back for a cached prefix", ge=0)] = 20
    cache_reply: Annotated[bool, Param("the reply joins the cached prefix of the next call")] = False
    # What ``ctxbench calibrate --against provider`` fits from reported cache usage: the share of a
    # cacheable prefix the provider serves from its cache (OpenAI routes best-effort: a request may
    # land where its prefix is not cached), and what the fit was made on (None: never calibrated,
    # and ``ctxbench run`` says so).
    hit_rate: Annotated[
        float, Param("share of a cacheable prefix the provider serves (calibrate fits it)", ge=0, le=1)
    ] = 1.0
    calibrated: Annotated[str | None, Param("what hit_rate was fitted on (null: never calibrated)")] = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"cache.provider {self.provider!r}: choose from {', '.join(PROVIDERS)}")
        unknown = [b for b in self.breakpoints if b not in BREAKPOINTS]
        if unknown:
            raise ValueError(f"cache.breakpoints {unknown}: choose from {', '.join(BREAKPOINTS)}")
        if len(self.breakpoints) > MAX_BREAKPOINTS:
            raise ValueError(f"cache.breakpoints: at most {MAX_BREAKPOINTS}, got {len(self.breakpoints)}")
        if self.step_tokens < 1 or self.min_tokens < 0:
            raise ValueError("cache.step_tokens must be >= 1 and cache.min_tokens >= 0")
        if not 0.0 <= self.hit_rate <= 1.0:
            raise ValueError(f"cache.hit_rate must be within [0, 1], got {self.hit_rate}")

    @classmethod
    def from_config(cls, data: dict[str, Any] | None) -> CacheRules | None:
        """The ``cache`` block of a model config; None or ``enabled: false`` turns caching off."""
        if not data:
            return None
        data = dict(data)
        if not data.pop("enabled", True):
            return None
        if "breakpoints" in data:
            data["breakpoints"] = tuple(data["breakpoints"])
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"cache: {exc}") from None


@dataclass(frozen=True)
class CacheUsage:
    """One request's prompt tokens, split as the provider bills them. ``lost_tokens``: tokens
    of the previous request that this one no longer starts with (a rewrite invalidated them)."""

    cached_tokens: int = 0
    write_tokens: int = 0
    uncached_tokens: int = 0
    lost_tokens: int = 0


class _Chain:
    """A request the provider processed: its messages, the tokens of all of them (``total``,
    with the prefix every request carries), running token counts as far as they were read
    (``cum[i]`` = tokens of ``messages[:i]`` for ``i < len(cum)``; see ``tokens``), and the cached
    prefix ends with their expiry (None: never)."""

    __slots__ = ("messages", "cum", "total", "ends", "seen")

    def __init__(self, messages: list[Message], cum: list[int], total: int, ends: dict[int, float | None]) -> None:
        self.messages, self.cum, self.total, self.ends = messages, cum, total, ends
        # (a request's list, how many messages it started with of these): see ``PrefixCache._shared``.
        self.seen: tuple[Sequence[Message], int] | None = None

    def copy(self) -> _Chain:
        twin = _Chain(list(self.messages), list(self.cum), self.total, dict(self.ends))
        twin.seen = self.seen
        return twin

    def tokens(self, end: int, sizes: Callable[[Iterable[Message]], Iterable[int]]) -> int:
        """Tokens of ``messages[:end]``. A request whose first message changed (DB-GPT's system
        prompt, every call) is read by later ones at a few positions only (its start, its total), so
        ``cum`` is extended only as far as a position is read."""
        cum = self.cum
        if end < len(cum):
            return cum[end]
        if end == len(self.messages):
            return self.total
        extend_running(cum, sizes(self.messages[len(cum) - 1 : end]))
        return cum[end]


def message_time(message: Message) -> float | None:
    """The message's recorded time (``metadata["timestamp"]``, ISO 8601 or epoch seconds)."""
    raw = message.metadata.get("timestamp")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


class PrefixCache:
    """The provider's prefix cache for one conversation (one replay)."""

    def __init__(self, rules: CacheRules, prefix_tokens: int = 0) -> None:
        """``prefix_tokens``: what every request carries before its messages (the tool schemas:
        OpenAI and Anthropic put them first), so a hit on any prefix includes them."""
        self.rules = rules
        self.prefix_tokens = prefix_tokens
        self._chains: list[_Chain] = []
        self._last: _Chain | None = None
        self._request: tuple[Sequence[Message], int] | None = None  # the last request's list and its length
        self._noted: list[int] | None = None  # this request's changes against the last one, from its note

    def copy(self) -> PrefixCache:
        """A cache in this one's state that goes its own way: the same requests' chains, each with
        its own lists (a chain's lists grow in place), the same messages."""
        twin = PrefixCache(self.rules, self.prefix_tokens)
        chains = {id(c): c.copy() for c in self._chains}
        twin._chains = list(chains.values())
        last = self._last
        twin._last = None if last is None else chains[id(last)] if id(last) in chains else last.copy()
        twin._request = self._request
        return twin

    def request(
        self,
        messages: Sequence[Message],
        size: Callable[[Message], int],
        prompt_tokens: int,
        now: float | None = None,
        sizes: Callable[[Iterable[Message]], Iterable[int]] | None = None,
        extends_last: bool = False,
    ) -> CacheUsage:
        """Bill one accepted request of ``prompt_tokens`` (its messages plus request framing, which
        is never cached) and remember what it cached. ``size`` gives a message's tokens; ``sizes``,
        if given, the same for many messages at once (faster; default ``map(size, ...)``).
        ``extends_last``: the caller knows ``messages`` starts with all of the previous request's
        (the full history, read from the recorded transcript), so that prefix is not compared."""
        rules = self.rules
        if extends_last and self._extends_alone(now):
            return self._extend_last(messages, prompt_tokens, sizes or functools.partial(map, size))
        # Without a time nothing expires (see ``_alive``).
        live = list(self._chains) if now is None else _live(self._chains, now)
        sizes = sizes or functools.partial(map, size)
        best, shared, read_end, read = None, 0, 0, 0
        last, last_k = self._last, None  # last_k: how many messages this request shares with the previous one
        stops = self._breakpoints(messages)
        grown_from: _GrownFrom | None = None  # made when a grown message is first compared
        first = messages[0] if messages else None
        since_last = self._since_last(messages)
        for chain in live:
            if chain is last and extends_last:
                k = last_k = len(chain.messages)
            else:
                # The first message differs from every cached one's when a view rewrites it each call.
                kept = chain.messages
                k = 0 if kept and kept[0] is not first else self._shared(chain, messages, since_last)
                if chain is last:
                    last_k = k
            chain.seen = (messages, k)
            end = self._readable_end(chain, k, messages, stops, now)
            if end is None:
                continue
            # Past the chain's end only by DeepSeek's reply, which this request carries as message ``end - 1``.
            tokens = chain.tokens(end, sizes) if end <= len(chain.messages) else chain.total + size(messages[end - 1])
            if end == k < len(chain.messages) and k < len(messages) and rules.provider != "anthropic":
                old = chain.messages[k]
                # Two different messages neither grown from another share no start (most do not:
                # a masked or compacted result is a fresh message), so their ancestors are not walked.
                if old.appended_to is not None or messages[k].appended_to is not None:
                    if grown_from is None:
                        grown_from = _GrownFrom(messages)
                    tokens += _shared_start(old, grown_from(k), size)
            if tokens > read or best is None:
                best, shared, read_end, read = chain, k, end, tokens
        lost = 0
        if last is not None:
            if last_k is None:
                last_k = self._shared(last, messages, since_last)
            if last_k < len(last.messages):
                lost = last.total - last.tokens(last_k, sizes)
        # A request that extends a whole cached one replaces it: its lists grow into the new chain's
        # (a request costs O(its new messages), not a copy of the whole history each time).
        extended = best is not None and shared >= len(best.messages)
        chain = self._new_chain(best, shared, messages, size, sizes, extended, last_k)
        # The expected read when the provider serves only a share of the hits it could (hit_rate).
        served = read if rules.hit_rate >= 1.0 else int(read * rules.hit_rate)
        billable = self._billable_read(served, prompt_tokens)
        cached = billable if billable < prompt_tokens else prompt_tokens
        write = 0
        expiry = now + rules.ttl_seconds if now is not None and rules.ttl_seconds is not None else None
        if rules.provider == "anthropic":
            if best is not None and cached:
                best.ends[read_end] = expiry  # a hit refreshes the entry's lifetime
            write = self._write_at_stops(chain, best, shared, stops, cached, prompt_tokens, expiry, sizes)
        else:
            chain.ends = {len(messages): expiry}
            if rules.cache_reply:
                chain.ends[len(messages) + 1] = expiry  # the reply, if the next request carries it unchanged
        uncached = max(0, prompt_tokens - cached - write)
        chain.seen = self._request = (messages, len(messages))
        self._remember(chain, best, extended)
        return CacheUsage(cached, write, uncached, lost)

    def _write_at_stops(
        self,
        chain: _Chain,
        best: _Chain | None,
        shared: int,
        stops: list[int],
        cached: int,
        prompt_tokens: int,
        expiry: float | None,
        sizes: Callable[[Iterable[Message]], Iterable[int]],
    ) -> int:
        """Anthropic: the new chain's ends (best's up to the shared part, and the breakpoints it
        writes), and the tokens written. Apart from ``request`` (as are ``_near_ends``) because a
        comprehension's variables are cells, made at every call of the function holding them."""
        earlier = best.ends if best is not None else {}
        # Copied whole in C when the request extends the chain (which holds an end per call before it).
        if earlier and max(earlier) > shared:
            earlier = {e: t for e, t in earlier.items() if e <= shared}
        chain.ends = dict(earlier)
        at_stops = [(b, chain.tokens(b, sizes)) for b in stops]
        written = [(b, t) for b, t in at_stops if t >= self.rules.min_tokens and t > cached]
        if not written:
            return 0
        chain.ends.update(dict.fromkeys((b for b, _ in written), expiry))
        return min(written[-1][1], prompt_tokens) - cached

    def _extends_alone(self, now: float | None) -> bool:
        """Whether a request that extends the last one (``extends_last``) can only read all of it:
        the last request is the one cached chain, of an automatic cache (OpenAI's rules, no reply
        cached), whose one end is its whole length and never expires. The full history's cache is
        so from its first call on (a request extending the whole of the last replaces it)."""
        last, rules = self._last, self.rules
        chains = self._chains
        if (
            last is None
            or len(chains) != 1
            or chains[0] is not last
            or rules.provider == "anthropic"
            or rules.cache_reply
        ):
            return False
        ends = last.ends
        return (now is None or rules.ttl_seconds is None) and len(ends) == 1 and ends.get(len(last.messages), 0) is None

    def _extend_last(
        self, messages: Sequence[Message], prompt_tokens: int, sizes: Callable[[Iterable[Message]], Iterable[int]]
    ) -> CacheUsage:
        """``request`` when ``_extends_alone``: what the general walk does with one chain that the
        request extends (it reads the whole chain, loses nothing, writes nothing), with the chain
        grown in place instead of a new one made of its lists."""
        rules, chain = self.rules, self._last
        assert chain is not None  # ``_extends_alone`` says so
        kept = chain.messages
        read = chain.tokens(len(kept), sizes)
        new = messages[len(kept) :]  # a slice, not islice: skipping the kept part would touch every message
        chain.total += sum(sizes(new))
        kept.extend(new)
        chain.ends = {len(messages): None}
        chain.seen = self._request = (messages, len(messages))
        served = read if rules.hit_rate >= 1.0 else int(read * rules.hit_rate)
        cached = min(self._billable_read(served, prompt_tokens), prompt_tokens)
        return CacheUsage(cached, 0, max(0, prompt_tokens - cached), 0)

    def _since_last(self, messages: Sequence[Message]) -> int | None:
        """How many messages this request starts with of the last one, when its list says so
        without comparing (the same list grown, or one a layer noted as derived from it:
        ``noted_changes``); None otherwise."""
        if self._request is None:
            return None
        given, given_len = self._request
        changed = self._noted = noted_changes(given, given_len, messages)
        if changed is None:
            return None
        return changed[0] if changed else min(given_len, len(messages))

    def _shared(self, chain: _Chain, messages: Sequence[Message], since_last: int | None) -> int:
        """``common_prefix(chain.messages, messages)``; without comparing them when it follows from
        what the chain shared with the last request and what this one shares with it (``since_last``)."""
        seen = chain.seen
        if since_last is not None and seen is not None and self._request is not None and seen[0] is self._request[0]:
            before = seen[1]
            if before != since_last or before == len(chain.messages):
                return before if before < since_last else since_last
        return common_prefix(chain.messages, messages)

    def _breakpoints(self, messages: Sequence[Message]) -> list[int]:
        """Message positions after which the request puts a cache breakpoint (Anthropic)."""
        if self.rules.provider != "anthropic":
            return []
        stops = set()
        if "system" in self.rules.breakpoints:
            n = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
            if n:
                stops.add(n)
        if "last_message" in self.rules.breakpoints and messages:
            stops.add(len(messages))
        return sorted(stops)

    def _readable_end(
        self, chain: _Chain, k: int, messages: Sequence[Message], stops: list[int], now: float | None
    ) -> int | None:
        """The longest prefix of ``chain`` that this request can read (message count), or None."""
        if self.rules.provider == "anthropic":
            return _anthropic_end(chain.ends, self.rules.lookback_blocks, k, stops, now)
        ends = chain.ends
        end, expiry = next(iter(ends.items()))
        if not _alive(expiry, now):
            return None
        if k == end < len(messages) and len(ends) > 1 and messages[k].role == "assistant":
            return k + 1  # DeepSeek: the previous request plus its reply, which this request repeats
        return k if k < end else end

    def _billable_read(self, read: int, prompt_tokens: int) -> int:
        """Cached tokens as the provider counts them: nothing under the minimum, whole steps."""
        rules = self.rules
        if rules.provider == "anthropic":
            return read if read >= rules.min_tokens else 0
        if prompt_tokens < rules.min_tokens or read < rules.min_tokens:
            return 0
        base = rules.min_tokens if rules.provider == "openai" else 0
        return read - (read - base) % rules.step_tokens

    def _new_chain(
        self,
        best: _Chain | None,
        shared: int,
        messages: Sequence[Message],
        size: Callable[[Message], int],
        sizes: Callable[[Iterable[Message]], Iterable[int]],
        extended: bool,
        last_k: int | None,
    ) -> _Chain:
        """The chain of the new request: the running counts of the shared part copied as far as
        they were read (or, when the request ``extended`` all of ``best``, best's own lists grown
        in place), and its total: when many messages follow the shared part, from the previous
        request's if it can (``_total_from_last``), else by a plain sum, leaving ``cum`` to be
        extended when it is read (``_Chain.tokens``)."""
        if extended:
            assert best is not None
            kept = best.messages
            # Slices, not islice: skipping the kept part would touch every message again, each call.
            new = messages[len(kept) :]
            total = best.total + sum(sizes(new))
            kept.extend(new)
            return _Chain(kept, best.cum, total, {})
        if best is None:
            cum = [self.prefix_tokens]
        else:
            best.tokens(shared, sizes)  # the shared part's running counts: the new chain starts with them
            cum = best.cum[: shared + 1]
        if len(messages) - shared <= SUMMED_LIMIT:
            extend_running(cum, sizes(messages[shared:]))  # few: later requests will read them
            return _Chain(_copy(messages), cum, cum[-1], {})
        known = self._total_from_last(messages, size, sizes, last_k)
        total = cum[-1] + sum(sizes(messages[shared:])) if known is None else known
        return _Chain(_copy(messages), cum, total, {})

    def _total_from_last(
        self,
        messages: Sequence[Message],
        size: Callable[[Message], int],
        sizes: Callable[[Iterable[Message]], Iterable[int]],
        last_k: int | None,
    ) -> int | None:
        """Tokens of a request from the previous request's total, when this one is that one (its
        first ``last_k`` messages the same) with a few messages replaced and more appended
        (DB-GPT's system prompt and its cut observations, every call): comparing the two lists by
        identity in C costs less than looking up every message's count again. None otherwise."""
        last = self._last
        if last is None or last_k is None or len(messages) < len(last.messages):
            return None
        old = last.messages
        if last_k < len(old):
            noted = self._noted  # the positions this request's note names against the last one
            if noted and noted[0] == last_k:
                changed = noted  # from the note: no slices of the two lists (a compacted early result: most of them)
            else:
                after = old[last_k + 1 :], messages[last_k + 1 :]
                changed = [last_k, *islice(compress(count(last_k + 1), map(is_not, *after)), REPLACED_LIMIT)]
            if len(changed) > REPLACED_LIMIT:
                return None
            replaced = 0
            for i in changed:  # a loop, not a generator: its variables would be cells, made every call
                replaced += size(messages[i]) - size(old[i])
        else:
            replaced = 0
        return last.total + replaced + sum(sizes(messages[len(old) :]))

    def _remember(self, chain: _Chain, best: _Chain | None, extended: bool) -> None:
        """Keep the new request; the chain it fully extends is replaced (its prefixes are in the new one)."""
        if extended and best is not None:
            self._chains.remove(best)
        self._chains.append(chain)
        del self._chains[:-MAX_ENTRIES]
        self._last = chain


class _GrownFrom:
    """The messages each message of a request was grown from (``Message.appended_to``, itself
    included), by id, found once per position however many cached chains are compared with it."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self._found: dict[int, set[int]] = {}

    def __call__(self, k: int) -> set[int]:
        found = self._found.get(k)
        if found is None:
            found = self._found[k] = set()
            node: Message | None = self.messages[k]
            while node is not None:
                found.add(id(node))
                node = node.appended_to
        return found


def _shared_start(old: Message, new_grown_from: set[int], size: Callable[[Message], int]) -> int:
    """Tokens at the start of two versions of a message that an automatic cache still matches:
    those of the message both were grown from (``with_appended``, e.g. DB-GPT's system prompt
    with its progress block), less its closing framing and a token that may merge across the join.
    ``new_grown_from``: the new version's ancestors (``_GrownFrom``). The nearest common ancestor
    is the same whether found from the old version or the new one (each has one parent)."""
    node: Message | None = old
    while node is not None and id(node) not in new_grown_from:
        node = node.appended_to
    return max(0, size(node) - CLOSING_TOKENS) if node is not None else 0


def _copy(messages: Sequence[Message]) -> list[Message]:
    """``list(messages)``; a list's subclass (``DerivedList``) copied by slicing, in one step in C
    (``list()`` iterates over a subclass's items one by one)."""
    return messages[:] if isinstance(messages, list) else list(messages)


def extend_running(cum: list[int], counts: Iterable[int]) -> None:
    """Append the running sums of ``counts`` to ``cum`` (from its last value)."""
    rest = accumulate(counts, initial=cum[-1])
    next(rest)  # the initial value: already the last of ``cum``
    cum.extend(rest)


def _anthropic_end(
    ends: dict[int, float | None], lookback: int, k: int, stops: list[int], now: float | None
) -> int | None:
    """``PrefixCache._readable_end`` with Anthropic's rules: the longest live end within
    ``lookback`` blocks before a breakpoint, at most ``k``."""
    if len(ends) > (lookback + 1) * len(stops):
        # A chain grown call after call keeps an end per call: look up the few positions a
        # breakpoint can read instead of testing every end (O(calls) per request).
        near = {e for b in stops for e in range(max(0, b - lookback), min(b, k) + 1) if e in ends}
    else:
        near = {e for e in ends if e <= k and any(b - lookback <= e <= b for b in stops)}
    ok = [e for e in near if _alive(ends[e], now)]
    return max(ok) if ok else None


def _alive(expiry: float | None, now: float | None) -> bool:
    return expiry is None or now is None or now <= expiry


def _live(chains: list[_Chain], now: float) -> list[_Chain]:
    """The chains with an end not expired at ``now``."""
    return [c for c in chains if not _expired_all(c, now)]


def _expired_all(chain: _Chain, now: float | None) -> bool:
    return bool(chain.ends) and not any(_alive(t, now) for t in chain.ends.values())
