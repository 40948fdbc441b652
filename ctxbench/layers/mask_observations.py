"""Observation masking: SWE-agent's ``LastNObservations(n)`` history processor.

Every tool observation older than the last ``n`` is replaced by
``Old environment output: (N lines omitted)``; the agent's own messages stay whole. SWE-agent
applies it on every call, with no trigger (the JetBrains "Complexity Trap" study found it
matches LLM summarisation at about half the cost). ``polling`` is SWE-agent's knob that masks
in steps of ``polling`` observations so the prompt prefix (and a provider's cache) changes
less often.

Cheap by construction: an observation, once masked, stays masked (the working list keeps the
masked copy), so each call changes only the observation that just aged out of the window;
untouched messages keep their cached token counts.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Annotated

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.transcripts.model import Message, is_tool_result
from ctxbench.transcripts.rounds import is_observation
from ctxbench.transcripts.running import DerivedList, SeenPrefix

# SWE-agent's text, verbatim (sweagent/agent/history_processors.py, LastNObservations).
SWE_AGENT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
_ASCII_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")  # where else splitlines splits ASCII text


def line_count(text: str) -> int:
    """``len(text.splitlines())`` without building the lines (about 2.5x faster on observations)."""
    if not text.isascii() or any(brk in text for brk in _ASCII_BREAKS):
        return len(text.splitlines())
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


class MaskObservations(Layer):
    """Mask all but the last ``n`` observations.

    Observations are tool results (and user messages the importer marked as one: older SWE-agent
    runs) and, with ``text_observations``, DB-GPT-style user messages
    starting with ``Observation:``. The first user message (the task; SWE-agent never masks its
    first observation, the instance template, for the same reason) and pinned messages are
    never masked. With ``only_if_shorter`` an observation whose placeholder would not be
    smaller (by the strategy's estimator) is left as is, so masking never grows the prompt.
    """

    def __init__(
        self,
        n: Annotated[int, Param("observations kept whole, the newest", ge=0)] = 10,
        polling: Annotated[
            int, Param("mask in steps of this many observations (the prompt prefix changes less often)", ge=1)
        ] = 1,
        text_observations: Annotated[bool, Param("user messages starting 'Observation:' are observations too")] = True,
        only_if_shorter: Annotated[bool, Param("mask an observation only when the placeholder is shorter")] = True,
        placeholder: Annotated[str, Param("the text that replaces an observation")] = SWE_AGENT_PLACEHOLDER,
        name: Annotated[str, Param("the layer's name in calls.jsonl and its events")] = "mask_observations",
    ) -> None:
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if polling < 1:
            raise ValueError(f"polling must be >= 1, got {polling}")
        self.n = n
        self.polling = polling
        self.text_observations = text_observations
        self.only_if_shorter = only_if_shorter
        self.placeholder = placeholder
        self.name = name
        # Observations judged too small to mask, held by reference so their ids stay unique;
        # without this each call would re-tokenize every small old observation's placeholder.
        self._too_small: dict[int, Message] = {}
        # What the last call returned, for the next call to skip (see ctxbench.transcripts.running).
        self._seen = SeenPrefix()
        self._first_user: int | None = None
        self._obs: list[int] = []
        self._settled = 0  # leading observations already masked or too small

    def _is_observation(self, message: Message) -> bool:
        if message.pinned:
            return False
        # A tool result, or a user message the importer marked as one (older SWE-agent runs send
        # their observations as user messages; SWE-agent masks them all the same).
        return is_tool_result(message) or (self.text_observations and is_observation(message))

    @staticmethod
    def _is_masked(message: Message) -> bool:
        return "masked_lines" in message.metadata  # by any masking layer: never mask a placeholder again

    def _observations(self, messages: list[Message]) -> tuple[int | None, list[int], int]:
        """The first user message, the observations' indices and how many leading observations
        are settled (masked or too small), reusing what the last call found for the messages
        it returned, which are the same objects up to the first change."""
        same = self._seen.unchanged(messages)
        first_user = self._first_user
        if first_user is None or first_user >= same:
            first_user = next((i for i in range(same, len(messages)) if messages[i].role == "user"), None)
        kept = bisect_left(self._obs, same)
        # The last call's list, grown in place when nothing before it changed (it is replaced below).
        observations = self._obs if kept == len(self._obs) else self._obs[:kept]
        observations.extend(
            i for i in range(same, len(messages)) if i != first_user and self._is_observation(messages[i])
        )
        return first_user, observations, min(self._settled, kept)

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        first_user, observations, settled = self._observations(messages)
        # SWE-agent: last_removed_idx = max(0, (len(obs) // polling) * polling - n).
        last_removed = max(0, (len(observations) // self.polling) * self.polling - self.n)
        replaced: list[int] = []
        replacements: list[Message] = []
        lines_omitted = 0
        size = ctx.estimator.message
        for i in observations[settled:last_removed]:
            message = messages[i]
            if "masked_lines" in message.metadata or id(message) in self._too_small:  # _is_masked
                continue
            lines = line_count(message.content)
            replacement = compacted(message, self.placeholder.format(lines=lines), self.name)
            replacement.metadata["masked_lines"] = lines
            if self.only_if_shorter and size(replacement) >= size(message):
                self._too_small[id(message)] = message
                continue
            replaced.append(i)
            replacements.append(replacement)
            lines_omitted += lines
        masked = len(replaced)
        result = messages
        if replaced:
            # A copy that says what changed: the followers (running sums, the request check) take it
            # from the note. The only copy of the list: the replacements go into it.
            result = DerivedList(messages, messages, replaced)
            for i, replacement in zip(replaced, replacements, strict=True):
                result[i] = replacement
        settled, still = max(settled, last_removed), observations
        if replaced and self.text_observations:
            # A masked text observation no longer reads "Observation: ..." and stops counting as one.
            gone = {i for i in replaced if not self._is_observation(result[i])}
            if gone:
                settled -= len(gone)
                still = [i for i in observations if i not in gone]
        self._seen.remember(result)
        self._first_user, self._obs, self._settled = first_user, still, settled
        if result is messages:
            return messages
        ctx.emit(
            {
                "type": "mask_observations",
                "masked": masked,
                "lines_omitted": lines_omitted,
                "observations": len(observations),
                "window": self.n,
            }
        )
        return result
