"""A fault injector (a fake, used only for failures a real server cannot be made to produce on
demand): deterministically from the seed, the stream (the transcript) and the call number, a call
fails with a chosen kind. Each transcript draws its own faults: with the call number alone, every
transcript of a run failed at the same calls."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace
from typing import Annotated, Any

from ctxbench.core import Param
from ctxbench.errors import ConfigError
from ctxbench.llm.base import SummariserError, SummaryRequest

# Draw order of the rates; fixed so a seed always maps a call number to the same kind.
_RATE_KINDS = ("error", "timeout", "rate_limit", "empty", "malformed", "overflow")

# What each injected failure says; worded as real providers word them.
FAULT_MESSAGES = {
    "error": "injected fault: Error code: 500 - The server had an error while processing your request",
    "timeout": "injected fault: Request timed out",
    "rate_limit": "injected fault: Error code: 429 - Rate limit reached for requests",
    "overflow": "injected fault: Error code: 400 - This model's maximum context length is exceeded "
    "(code: context_length_exceeded)",
}
MALFORMED_TEXT = "I have reviewed the conversation and everything looks fine so far."


@dataclass(frozen=True)
class FaultConfig:
    seed: Annotated[int, Param("seed of the fault draws", ge=0)] = 0
    error_rate: Annotated[float, Param("share of calls that fail with a server error", ge=0, le=1)] = 0.0
    timeout_rate: Annotated[float, Param("share of calls that time out", ge=0, le=1)] = 0.0
    rate_limit_rate: Annotated[float, Param("share of calls rejected with 429", ge=0, le=1)] = 0.0
    empty_rate: Annotated[float, Param("share of calls answered with nothing", ge=0, le=1)] = 0.0
    malformed_rate: Annotated[float, Param("share of calls answered with malformed text", ge=0, le=1)] = 0.0
    overflow_rate: Annotated[float, Param("share of calls rejected as too long", ge=0, le=1)] = 0.0
    fail_first_n: Annotated[int, Param("the first N calls fail with an error (to trip a circuit breaker)", ge=0)] = 0
    # Whose calls these are (the transcript's id; set by the run, not by a config): drawn into the
    # hash, so each transcript fails at its own calls. "" keys by the seed and call number only.
    stream: Annotated[str, Param("whose calls these are (set by the run: the transcript's id)")] = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, where: str = "llm.faults") -> FaultConfig:
        data = dict(data or {})
        known = {f.name for f in fields(cls)} - {"stream"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
        config = cls(**data)
        rates = [getattr(config, f"{k}_rate") for k in _RATE_KINDS]
        if any(r < 0 for r in rates) or sum(rates) > 1.0 + 1e-9:
            raise ConfigError(f"{where}: rates must be >= 0 and sum to at most 1 (got {sum(rates):g})")
        return config

    @property
    def active(self) -> bool:
        return self.fail_first_n > 0 or any(getattr(self, f"{k}_rate") > 0 for k in _RATE_KINDS)

    def in_stream(self, stream: str) -> FaultConfig:
        """The same faults drawn for ``stream`` (a transcript id): its own pattern of failures."""
        return replace(self, stream=stream)

    def draw(self, call_number: int) -> str | None:
        """The fault kind for call ``call_number`` (0-based), or None for a normal call."""
        if call_number < self.fail_first_n:
            return "error"
        key = f"{self.seed}:{self.stream}:{call_number}" if self.stream else f"{self.seed}:{call_number}"
        digest = hashlib.sha256(key.encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        edge = 0.0
        for kind in _RATE_KINDS:
            edge += getattr(self, f"{kind}_rate")
            if u < edge:
                return kind
        return None


def raise_or_text(kind: str) -> str:
    """Raise the error kinds; return the bad text for "empty" and "malformed"."""
    if kind == "empty":
        return ""
    if kind == "malformed":
        return MALFORMED_TEXT
    raise SummariserError(kind, FAULT_MESSAGES[kind])


class FaultInjectingSummariser:
    """Wraps a summariser; faulty calls never reach it. "empty"/"malformed" faults return the bad
    text (as an unvalidated LLM would) so layers' own checks are exercised; the rest raise."""

    def __init__(self, inner: Any, faults: FaultConfig, role: str = "summariser") -> None:
        self.inner = inner
        self.faults = faults
        self.role = role
        self.name = f"{inner.name}+faults(seed={faults.seed})"
        self.calls = 0
        self.usage: list[dict[str, Any]] = []  # the inner summariser's records and the injected faults, in call order
        self.on_event: Any = None  # set by the replay (``ctx.emit``): injected failures become events

    def attach(self, emit: Any) -> None:
        self.on_event = emit
        if hasattr(self.inner, "attach"):
            self.inner.attach(emit)

    def summarise(self, request: SummaryRequest) -> str:
        number = self.calls
        self.calls += 1
        kind = self.faults.draw(number)
        if kind is None:
            before = len(self.inner.usage)
            try:
                return self.inner.summarise(request)
            finally:
                self.usage.extend(self.inner.usage[before:])
        self.usage.append(
            {
                "role": self.role,
                "model": getattr(self.inner, "model", self.inner.name),
                "purpose": request.purpose,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "cost_usd": 0.0,
                "cached": False,
                "fault": kind,
                "injected": True,
            }
        )
        if self.on_event is not None:
            self.on_event(
                {"type": "llm.failure", "role": self.role, "kind": kind, "purpose": request.purpose, "injected": True}
            )
        return raise_or_text(kind)
