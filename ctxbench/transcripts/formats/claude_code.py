"""Claude Code session JSONL: one entry per line (``type`` user/assistant/summary/system/...).

Only ``user`` and ``assistant`` entries are messages. Claude Code writes one API response as several
``assistant`` lines (one per content block, same ``message.id``): they are merged back into one
assistant message, i.e. one recorded call, with the usage of the last line. ``tool_result`` blocks
in user lines become ``tool`` messages. When a session was rewound, ``parentUuid`` links form a tree:
the branch ending at the last message is kept (``logicalParentUuid`` bridges a compaction boundary).
Sidechain (sub-agent) entries form their own transcript per ``agentId``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ctxbench.transcripts.formats._common import ParseContext, Source, as_str, finish
from ctxbench.transcripts.formats.anthropic import assistant_message, user_messages
from ctxbench.transcripts.model import Message, Transcript

FORMAT = "claude-code"
# Every record type of a session file; only user and assistant records hold messages.
RECORD_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "progress", "queue-operation"}
Entry = tuple[int, dict[str, Any]]


def _active_branch(group: list[Entry], by_uuid: dict[str, dict[str, Any]], ctx: ParseContext, tid: str) -> list[Entry]:
    """The entries on the path from the root to the group's last message, in file order."""
    if not all(as_str(e.get("uuid")) for _, e in group):
        return group
    on_path: set[str] = set()
    node: dict[str, Any] | None = group[-1][1]
    while node is not None and node.get("uuid") not in on_path:
        on_path.add(node["uuid"])
        parent = as_str(node.get("parentUuid")) or as_str(node.get("logicalParentUuid"))
        node = by_uuid.get(parent) if parent else None
    kept = [(n, e) for n, e in group if e["uuid"] in on_path]
    if len(kept) < len(group):
        ctx.warn(tid, f"{len(group) - len(kept)} message line(s) off the active branch (rewound) skipped")
    return kept


def _timestamp(entry: dict[str, Any]) -> dict[str, str]:
    """The entry's recorded time, kept so the prompt-cache simulator can expire entries by TTL."""
    stamp = as_str(entry.get("timestamp"))
    return {"timestamp": stamp} if stamp else {}


def _api_message(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's API message, or {} when it has none."""
    message = entry.get("message")
    return message if isinstance(message, dict) else {}


def _messages(entries: list[Entry], ctx: ParseContext) -> tuple[list[Message], Counter[str]]:
    messages: list[Message] = []
    models: Counter[str] = Counter()
    i = 0
    while i < len(entries):
        line, entry = entries[i]
        message = _api_message(entry)
        where = f"line {line}"
        if entry["type"] == "assistant":
            blocks: list[Any] = []
            usage = None
            msg_id = as_str(message.get("id"))
            j = i
            while j < len(entries):  # merge the lines of one API response
                _, other = entries[j]
                other_msg = _api_message(other)
                if j > i and (other["type"] != "assistant" or not msg_id or other_msg.get("id") != msg_id):
                    break
                content = other_msg.get("content")
                blocks.extend(content if isinstance(content, list) else [{"type": "text", "text": content or ""}])
                usage = other_msg.get("usage") or usage
                j += 1
            model = as_str(message.get("model"))
            if model and model != "<synthetic>":
                models[model] += 1
            converted = assistant_message(blocks, ctx, where, usage if model != "<synthetic>" else None)
            meta = {**converted.metadata, "uuid": entry.get("uuid"), **_timestamp(entry)}
            if model == "<synthetic>":
                meta["synthetic"] = True
            messages.append(converted.replace(metadata=meta))
            i = j
            continue
        for m in user_messages(message.get("content"), ctx, where):
            meta = {**m.metadata, "uuid": entry.get("uuid"), **_timestamp(entry)}
            if entry.get("isMeta"):
                meta["is_meta"] = True
            if entry.get("isCompactSummary"):
                meta["compact_summary"] = True
            messages.append(m.replace(metadata=meta))
        i += 1
    return messages, models


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    rows: list[Entry] = [(n, v) for n, v in source.data if isinstance(v, dict)]
    by_uuid = {e["uuid"]: e for _, e in rows if as_str(e.get("uuid"))}
    summaries = [str(e.get("summary")) for _, e in rows if e.get("type") == "summary" and e.get("summary")]
    groups: dict[str, list[Entry]] = {}
    dropped: list[tuple[int, str]] = [(n, "not a JSON object") for n, v in source.data if not isinstance(v, dict)]
    for n, e in rows:
        kind = e.get("type")
        if kind not in ("user", "assistant"):
            if kind not in RECORD_TYPES:  # the known others hold no message: not a loss
                dropped.append((n, f"unknown type {str(kind)[:40]!r}"))
            continue
        if not isinstance(e.get("message"), dict):
            dropped.append((n, f"{kind} record without a message object"))
            continue
        key = f"sidechain-{e.get('agentId') or 'agent'}" if e.get("isSidechain") else "main"
        groups.setdefault(key, []).append((n, e))
    if dropped:
        dropped.sort()
        reasons = Counter(reason for _, reason in dropped)
        summary = ", ".join(f"{k} x{v}" for k, v in sorted(reasons.items()))
        ctx.warn(f"line {dropped[0][0]}", f"{len(dropped)} record(s) dropped (first one here): {summary}")
    stem = source.path.stem
    out: list[Transcript] = []
    for key, group in groups.items():
        tid = stem if len(groups) == 1 else f"{stem}#{key}"
        entries = _active_branch(group, by_uuid, ctx, tid)
        messages, models = _messages(entries, ctx)
        first = group[0][1]
        source_info = ctx.source(
            models.most_common(1)[0][0] if models else None, session_id=as_str(first.get("sessionId"))
        )
        metadata: dict[str, Any] = {"sidechain": key != "main", "agent_id": as_str(first.get("agentId"))}
        if key == "main" and summaries:
            metadata["summary"] = summaries[-1]
        out.append(finish(ctx, tid, messages, source_info, **metadata))
    if not out:
        out.append(finish(ctx, stem, [], ctx.source(None)))
    return out
