"""LLM-written probes (Factory's method, as an option): a model reads the run, chunk by chunk, and
writes recall / artifact / continuation / decision probes with golds. A gold that is not verbatim in
the message it cites is dropped (counted as malformed), so the deterministic judge can still check
every probe kept. Calls go through the LLM client, so they are recorded in and replayed from
cassettes like every other role; the deterministic extractor stays the default."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from ctxbench.core import SummariserError
from ctxbench.probes.actions import probe_text
from ctxbench.transcripts.model import Probe, ProbeKind, Transcript

PROMPT = "probe_writer_v1.txt"
KINDS: tuple[ProbeKind, ...] = ("recall", "artifact", "continuation", "decision")
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "probes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": list(KINDS)},
                    "question": {"type": "string"},
                    "gold": {"type": "string"},
                    "message": {"type": "integer"},
                },
                "required": ["type", "question", "gold", "message"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["probes"],
    "additionalProperties": False,
}
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def render_run(transcript: Transcript, start: int, stop: int, per_message: int) -> str:
    """Messages ``start:stop`` numbered as the transcript numbers them, each clipped to ``per_message`` chars."""
    blocks = []
    for i in range(start, stop):
        m = transcript.messages[i]
        text = probe_text(m)
        if len(text) > per_message:
            text = text[: per_message // 2] + "\n[...]\n" + text[-per_message // 2 :]
        blocks.append(f"[{i}] {m.role}:\n{text}")
    return "\n\n".join(blocks)


def chunks(transcript: Transcript, chunk_chars: int, per_message: int) -> list[tuple[int, int]]:
    """Consecutive message ranges whose rendering stays near ``chunk_chars``."""
    out: list[tuple[int, int]] = []
    start, size = 0, 0
    for i, m in enumerate(transcript.messages):
        length = min(len(probe_text(m)), per_message) + 16
        if size and size + length > chunk_chars:
            out.append((start, i))
            start, size = i, 0
        size += length
    if start < len(transcript.messages):
        out.append((start, len(transcript.messages)))
    return out


def parse_written(text: str, transcript: Transcript, span: tuple[int, int]) -> tuple[list[dict[str, Any]], int]:
    """The reply's valid probes (gold verbatim in the cited message, inside the chunk) and how many were not."""
    try:
        start = text.index("{")
        data = json.loads(text[start : text.rindex("}") + 1])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a parser goes
        return [], 1
    items = data.get("probes") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return [], 1
    valid, bad = [], 0
    for item in items:
        ok = isinstance(item, dict) and item.get("type") in KINDS and isinstance(item.get("message"), int)
        gold = str(item.get("gold") or "").strip() if isinstance(item, dict) else ""
        question = str(item.get("question") or "").strip() if isinstance(item, dict) else ""
        at = item.get("message") if ok else -1
        if not ok or not gold or not question or len(gold) > 200 or not span[0] <= at < span[1]:
            bad += 1
            continue
        if _norm(gold) not in _norm(probe_text(transcript.messages[at])):
            bad += 1  # not verbatim where it says: the judge could never find it
            continue
        valid.append({"type": item["type"], "question": question, "gold": gold, "message": at})
    return valid, bad


def write_probes(
    transcript: Transcript,
    client: Any,
    max_probes: int = 16,
    chunk_chars: int = 12000,
    per_message: int = 2000,
) -> tuple[list[Probe], dict[str, int]]:
    """Probes written by ``client`` (an LLMClient) over the run, and counts: calls, failed, malformed."""
    template = resources.files("ctxbench.prompts").joinpath(PROMPT).read_text("utf-8")
    ranges = [r for r in chunks(transcript, chunk_chars, per_message) if r[0] < _last_call(transcript)]
    per_chunk = max(1, -(-max_probes // max(1, len(ranges))))
    written: list[dict[str, Any]] = []
    stats = {"calls": 0, "failed": 0, "malformed": 0}
    for span in ranges:
        prompt = template.format(max_probes=per_chunk, run=render_run(transcript, *span, per_message))
        stats["calls"] += 1
        try:
            reply = client.reply([{"role": "user", "content": prompt}], purpose="probe_writer", schema=SCHEMA)
        except SummariserError:
            stats["failed"] += 1
            continue
        valid, bad = parse_written(reply.text, transcript, span)
        stats["malformed"] += bad
        written += valid[:per_chunk]
    return _as_probes(written[:max_probes], transcript), stats


def _last_call(transcript: Transcript) -> int:
    calls = transcript.call_indices
    return calls[-1] if calls else len(transcript.messages)


def _as_probes(items: Sequence[dict[str, Any]], transcript: Transcript) -> list[Probe]:
    texts = [probe_text(m) for m in transcript.messages]
    out = []
    for n, item in enumerate(items, 1):
        at = item["message"]
        if at >= _last_call(transcript):
            continue  # stated after the last call: no context of the replay holds it
        found = texts[at].find(item["gold"])
        needed = next((j for j in range(at + 1, len(texts)) if item["gold"] in texts[j]), None)
        out.append(
            Probe(
                id=f"written-{at}-{n}",
                question=item["question"],
                answer=item["gold"],
                kind=item["type"],
                message_index=at,
                needed_at=needed,
                source="llm-written",
                label=f"written_{item['type']}",
                span=(found, found + len(item["gold"])) if found >= 0 else None,
            )
        )
    return out
