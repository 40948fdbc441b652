"""Which source a transcript with provider usage comes from, and the usage of its calls: what both
the replay's and the prompt cache's fidelity group and score by."""

from __future__ import annotations

from ctxbench.transcripts.model import Message, Transcript


def source_of(transcript: Transcript) -> tuple[str, str]:
    """(source, model): the format, with sub-agents apart (their system prompt and tools differ)."""
    src = transcript.source or {}
    fmt = str(src.get("format") or "?")
    if transcript.metadata.get("sidechain"):
        fmt += "/sidechain"
    return fmt, str(src.get("model") or transcript.metadata.get("model") or "?")


def reported_prompt(message: Message) -> int | None:
    value = (message.metadata.get("usage") or {}).get("prompt_tokens")
    return int(value) if isinstance(value, int | float) and value > 0 else None


def has_usage(transcript: Transcript) -> bool:
    return any(m.role == "assistant" and reported_prompt(m) for m in transcript.messages)
