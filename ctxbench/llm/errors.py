"""Classify provider failures into SummariserError kinds, from litellm's exception types and
the error texts real providers and agents match (reference.md 1b)."""

from __future__ import annotations

import re

# Texts that mean "the prompt does not fit"; rate-limit texts ("Request too large ... tokens per min") must not match.
OVERFLOW_TEXTS: tuple[str, ...] = (
    "request_too_large",
    "request exceeds the maximum size",
    "context length exceeded",
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "exceeds model context window",
    "context overflow",
    "context_too_long",
)
SIZE_EXCEEDS_PATTERN = r"request size exceeds.*context (window|length)"
_SIZE_EXCEEDS = re.compile(SIZE_EXCEEDS_PATTERN, re.S)


def is_overflow_text(text: str, status: int | None = None) -> bool:
    """True when an error text (and optional HTTP status) says the request is over the context window."""
    low = text.lower()
    if any(t in low for t in OVERFLOW_TEXTS) or _SIZE_EXCEEDS.search(low):
        return True
    return status == 413 and "too large" in low


def classify_exception(exc: BaseException) -> str:
    """The SummariserError kind for an exception raised by ``litellm.completion``."""
    import litellm  # already imported by whoever raised a litellm exception

    status = getattr(exc, "status_code", None)
    text = str(exc)
    if isinstance(exc, litellm.Timeout) or "timed out" in text.lower() or "timeout" in type(exc).__name__.lower():
        return "timeout"
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return "rate_limit"
    if isinstance(exc, litellm.ContextWindowExceededError) or is_overflow_text(text, status):
        return "overflow"
    return "error"
