"""DB-GPT Layer 1, observation micro-compaction: cut old tool observations short.

Rounds are DB-GPT's (``dbgpt_rounds``). A round is old when its index is below
``current_round - max_observation_age_rounds``, where ``current_round`` is the number of
rounds in the context, so the last ``max_observation_age_rounds`` rounds stay whole (the
seed: "Recent rounds are preserved in full"). In an old round, an observation (an
``Observation:`` user message or a tool result) longer than ``max_chars + 30`` becomes its
first ``max_chars`` characters (the ``Observation:`` prefix included, as DB-GPT counts
it) plus ``... [truncated, full detail at: <snapshot>]``, or ``... [truncated]`` when the
message has no snapshot. Deterministic, no LLM.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress, count
from operator import is_not
from typing import Annotated

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.layers.llm_full_compression import breaker_open
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import DbgptRoundsCache, is_observation, last_result_of_turn
from ctxbench.transcripts.running import DerivedList

SLACK_CHARS = 30  # DB-GPT only cuts observations longer than max_chars + 30


def is_observation_like(messages: Sequence[Message], i: int) -> bool:
    """DB-GPT's observation (the message that closes a round), extended to function-calling
    transcripts: a tool result that ends its turn. In a parallel batch only the last result closes
    the round; the others are left whole, as DB-GPT's own code does with that extension
    (ctxbench.upstream.differences)."""
    message = messages[i]
    return is_observation(message) or (message.role == "tool" and last_result_of_turn(messages, i))


def truncated(content: str, max_chars: int, snapshot: str | None) -> tuple[str, str]:
    """The cut observation as its kept start (with ``...``) and the notice after it: the notice
    starts with a space after a non-space character, so a tokenizer counts it apart
    (``ctxbench.tokens.line_starts``), its constant words and folders remembered."""
    notice = f" [truncated, full detail at: {snapshot}]" if snapshot else " [truncated]"
    return f"{content[:max_chars]}...", notice


class ObservationMicroCompact(Layer):
    def __init__(
        self,
        max_observation_age_rounds: Annotated[int, Param("the newest rounds whose observations stay whole", ge=0)] = 5,
        truncated_observation_max_chars: Annotated[int, Param("characters kept of an older observation", ge=0)] = 200,
        slack_chars: Annotated[
            int, Param("an observation is cut only when longer than the kept characters plus this", ge=0)
        ] = SLACK_CHARS,
        stop_when_breaker_open: Annotated[
            bool, Param("stop once Layer 3's circuit breaker is open (DB-GPT then stops compacting)")
        ] = True,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "layer1",
    ) -> None:
        self.max_age = int(max_observation_age_rounds)
        self.max_chars = int(truncated_observation_max_chars)
        self.slack = int(slack_chars)
        self.stop_when_breaker_open = stop_when_breaker_open
        self.name = name
        self.ran = True  # whether the last apply ran (the pipeline reports only layers that ran)
        # original -> its cut copy. A view strategy cuts the same old observations of its whole
        # history on every call: the same copy each time keeps its token count cached and the
        # prompt's running sums unchanged (id keys; the original is kept alive beside it).
        self._cut: dict[int, tuple[Message, Message]] = {}
        # Resuming where the last call stopped: rounds examined then and unchanged since keep
        # their result (a view strategy's history only grows), so each round is examined once.
        self._rounds = DbgptRoundsCache()
        self._done = 0  # rounds examined on the last call
        self._cuts: list[int] = []  # positions cut on the last call, ascending
        self._out: list[Message] = []  # the last call's output

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        # DB-GPT's manage_context returns before its layers once the breaker tripped.
        self.ran = not (self.stop_when_breaker_open and breaker_open(ctx))
        if not self.ran:
            return messages
        rounds = self._rounds(messages)
        cutoff = max(0, len(rounds) - self.max_age)
        # Rounds that ended before the first change were examined last time (up to ``_done``).
        done = min(self._done, bisect_left(self._rounds.ends, self._rounds.first_change), cutoff)
        resume = rounds[done][0] if done < len(rounds) else len(messages)
        cuts = self._cuts  # cut back in place: the positions before ``resume`` stay
        del cuts[bisect_left(cuts, resume) :]
        reused = len(cuts)
        for indices in rounds[done:cutoff]:
            for i in indices:
                message = messages[i]
                if len(message.content) <= self.max_chars + self.slack or not is_observation_like(messages, i):
                    continue
                cached = self._cut.get(id(message))
                if cached is None or cached[0] is not message:
                    kept, notice = truncated(message.content, self.max_chars, message.metadata.get("snapshot"))
                    if kept + notice == message.content:  # already cut on an earlier call
                        continue
                    cut = compacted(message, kept, self.name).with_appended(notice)
                    cached = self._cut[id(message)] = (message, cut)
                cuts.append(i)
        self._done, self._cuts = cutoff, cuts
        if not cuts:
            self._out = messages
            return messages
        swapped = [i for i in self._rounds.swapped if i < resume]
        if not reused:
            out = list(messages)
            for i in cuts:
                out[i] = self._cut[id(messages[i])][1]
            self._out = out
            return out
        # The unchanged prefix comes from the last output (its cuts in place), then the rest. The
        # replay sizes this copy right away, and the last one the call before: say what changed
        # since the last one (before ``resume`` only the swapped system messages). The rest is cut
        # apart and compared first, so the long prefix is copied once. The last output's tail is
        # sliced, not skipped to (islice would take and drop a reference on every message before
        # ``resume``: the whole history touched, every call).
        last = self._out
        rest = messages[resume:]
        for i in cuts[reused:]:
            rest[i - resume] = self._cut[id(messages[i])][1]
        tail = compress(count(resume), map(is_not, last[resume:], rest))
        changed = [*(i for i in swapped if messages[i] is not last[i]), *tail]
        out = DerivedList((), last, changed)
        out += last
        del out[resume:]
        out += rest
        for i in swapped:
            out[i] = messages[i]
        self._out = out
        return out
