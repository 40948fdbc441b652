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

from ctxbench.layers.base import Layer, compacted
from ctxbench.strategies.base import StrategyContext
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.rounds import is_observation

# SWE-agent's text, verbatim (sweagent/agent/history_processors.py, LastNObservations).
SWE_AGENT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"


class MaskObservations(Layer):
    """Mask all but the last ``n`` observations.

    Observations are tool results and, with ``text_observations``, DB-GPT-style user messages
    starting with ``Observation:``. The first user message (the task; SWE-agent never masks its
    first observation, the instance template, for the same reason) and pinned messages are
    never masked. With ``only_if_shorter`` an observation whose placeholder would not be
    smaller (by the strategy's estimator) is left as is, so masking never grows the prompt.
    """

    def __init__(
        self,
        n: int = 10,
        polling: int = 1,
        text_observations: bool = True,
        only_if_shorter: bool = True,
        placeholder: str = SWE_AGENT_PLACEHOLDER,
        name: str = "mask_observations",
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

    def _is_observation(self, message: Message) -> bool:
        if message.pinned:
            return False
        return message.role == "tool" or (self.text_observations and is_observation(message))

    @staticmethod
    def _is_masked(message: Message) -> bool:
        return "masked_lines" in message.metadata  # by any masking layer: never mask a placeholder again

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        observations = [i for i, m in enumerate(messages) if i != first_user and self._is_observation(m)]
        # SWE-agent: last_removed_idx = max(0, (len(obs) // polling) * polling - n).
        last_removed = max(0, (len(observations) // self.polling) * self.polling - self.n)
        out: list[Message] | None = None
        masked = lines_omitted = 0
        for i in observations[:last_removed]:
            message = messages[i]
            if self._is_masked(message) or id(message) in self._too_small:
                continue
            lines = len(message.content.splitlines())
            replacement = compacted(message, self.placeholder.format(lines=lines), self.name)
            replacement.metadata["masked_lines"] = lines
            if self.only_if_shorter and ctx.estimator.message(replacement) >= ctx.estimator.message(message):
                self._too_small[id(message)] = message
                continue
            if out is None:
                out = list(messages)
            out[i] = replacement
            masked += 1
            lines_omitted += lines
        if out is None:
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
        return out
