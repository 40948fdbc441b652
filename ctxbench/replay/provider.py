"""The simulated provider: counts the prompt with the model's real tokenizer and rejects
it, with the provider's own error text, when prompt + reserved output exceeds the window."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxbench.core import ContextOverflowError, ModelSpec
from ctxbench.replay.billing import LatencyModel
from ctxbench.replay.prefix_cache import CacheRules
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.reasoning import LoopReasoning
from ctxbench.transcripts.model import Message
from ctxbench.transcripts.running import REPLACED_LIMIT, cut_dropped_runs, noted_changes


def model_from_config(data: dict[str, Any]) -> ModelSpec:
    """A model config as a ``ModelSpec``: its ``cache`` and ``latency`` blocks become the provider's
    caching rules and the latency model (a bad block raises ``ValueError`` naming the key)."""
    data = dict(data)
    cache = CacheRules.from_config(data.pop("cache", None))
    latency = LatencyModel.from_config(data.pop("latency", None))
    return ModelSpec(**data, cache=cache, latency=latency)


# Error texts as real providers word them; strategies match them with their own patterns.
_ERROR_TEXTS = {
    "openai": (
        "Error code: 400 - This model's maximum context length is {window} tokens. However, you requested "
        "{requested} tokens ({prompt} in the messages, {reserved} in the completion). Please reduce the length "
        "of the messages or completion. (code: context_length_exceeded)"
    ),
    "anthropic": "Error code: 400 - prompt is too long: {prompt} tokens > {limit} maximum",
    "dbgpt": "LLM error: context_too_long ({prompt} prompt tokens, budget {limit})",
}


class SimulatedProvider:
    def __init__(self, model: ModelSpec, counter: TokenCounter, tools_tokens: int = 0) -> None:
        """``tools_tokens``: the agent's tool schemas, which every request carries (0 if unrecorded)."""
        if model.error_style not in _ERROR_TEXTS:
            raise ValueError(f"unknown error_style {model.error_style!r}; choose from {sorted(_ERROR_TEXTS)}")
        self.model = model
        self.counter = counter
        self._prompt = counter.running_prompt()  # follows the replay's working context
        self._reasoning = LoopReasoning(counter.tokenizer)  # likewise
        self.tools_tokens = tools_tokens

    def count(self, messages: Sequence[Message]) -> int:
        # Reasoning of the current tool loop is sent back and counted (ctxbench.tokens.reasoning).
        return self._prompt(messages) + self.tools_tokens + self._reasoning(messages)

    def send(self, messages: Sequence[Message]) -> int:
        """Return the prompt tokens the provider reports, or raise ``ContextOverflowError``."""
        prompt = self.count(messages)
        model = self.model
        if prompt + model.reserved_output_tokens > model.context_window:
            text = _ERROR_TEXTS[model.error_style].format(
                window=model.context_window,
                requested=prompt + model.reserved_output_tokens,
                prompt=prompt,
                reserved=model.reserved_output_tokens,
                limit=model.prompt_budget,
            )
            raise ContextOverflowError(text, prompt, model.prompt_budget)
        return prompt


def request_problems(messages: Sequence[Message]) -> list[str]:
    """What a real provider would reject in a request: tool results without their call,
    tool calls without their result (unless the call is the last message)."""
    problems: list[str] = []
    open_calls: dict[str, int] = {}
    for i, message in enumerate(messages):
        open_calls = _check_message(open_calls, i, message, problems)
    return problems


def _check_message(open_calls: dict[str, int], i: int, message: Message, problems: list[str]) -> dict[str, int]:
    """One step of ``request_problems``: appends message ``i``'s problems and returns the calls
    still open after it (a new dict when they change, so earlier states can be kept)."""
    if message.role == "tool":
        if message.tool_call_id not in open_calls:
            problems.append(f"message {i}: tool result {message.tool_call_id!r} has no preceding call")
        else:
            open_calls = {cid: j for cid, j in open_calls.items() if cid != message.tool_call_id}
    elif open_calls:
        problems.extend(f"message {j}: tool call {cid!r} has no result" for cid, j in open_calls.items())
        open_calls = {}
    if message.role == "assistant" and message.tool_calls:
        open_calls = {**open_calls, **{c.id: i for c in message.tool_calls}}
    return open_calls


class RequestProblemCount:
    """``len(request_problems(messages))`` for the replay's working context. Only the calls and
    results matter, so a replaced message with the same ones (compacted content, DB-GPT's
    system prompt) changes nothing; the check resumes from the first message that changed them
    (see ``ctxbench.transcripts.running``)."""

    def __init__(self) -> None:
        self._seen: list[Message] = []
        self._states: list[tuple[int, dict[str, int]]] = [(0, {})]  # before message k: (problems, open calls)
        self._given: Sequence[Message] | None = None  # the last list object (see ``DerivedList``)

    def __call__(self, messages: Sequence[Message]) -> int:
        seen, states = self._seen, self._states
        noted = noted_changes(self._given, len(seen), messages)
        self._given = messages
        changed = cut_dropped_runs(seen, messages, self._cut, noted)
        start = min(len(seen), len(messages))
        if len(changed) > REPLACED_LIMIT:
            start = changed[0]
        for i in changed[:REPLACED_LIMIT]:
            if _pairing(seen[i]) != _pairing(messages[i]):
                start = min(start, i)
                break
            seen[i] = messages[i]
        del seen[start:], states[start + 1 :]
        count, open_calls = states[-1]
        found: list[str] = []
        for i in range(start, len(messages)):
            open_calls = _check_message(open_calls, i, messages[i], found)
            states.append((count + len(found), open_calls))
        seen.extend(messages[start:])
        return count + len(found)

    def _cut(self, first: int, end: int) -> bool:
        """Drop ``seen[first:end]`` if it leaves the same calls open; its problems leave the later counts."""
        states = self._states
        (before, open_before), (after, open_after) = states[first], states[end]
        if open_before.keys() != open_after.keys():
            return False
        if after != before:
            states[end:] = [(count - (after - before), open_calls) for count, open_calls in states[end:]]
        del self._seen[first:end], states[first:end]
        return True


def _pairing(message: Message) -> tuple[str, str | None, tuple[str, ...]]:
    """What ``request_problems`` looks at in a message."""
    return message.role, message.tool_call_id, tuple(c.id for c in message.tool_calls)
