"""Dataset rows -> canonical transcripts, through the file importers' format detection and parsers.

A row holds one run: a column with its message list (``messages``, ``trajectory``, ``history``, or
``--column``) and scalar columns (instance id, model, exit status). The row becomes one document of a
shape the file importers know (a chat ``messages`` list, an OpenHands ``history`` event stream,
SWE-agent ``trajectory`` steps) and is parsed like a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxbench.errors import InputError
from ctxbench.transcripts.detect import detect_source
from ctxbench.transcripts.formats import PARSERS, ParseContext
from ctxbench.transcripts.formats._common import Source
from ctxbench.transcripts.formats.sweagent import fenced_action, mark_observations
from ctxbench.transcripts.model import Transcript

MESSAGE_COLUMNS = ("messages", "trajectory", "history")
_ROLE_ALIASES = {"ai": "assistant", "gpt": "assistant", "bot": "assistant", "model": "assistant", "human": "user"}
TEXT_ACTIONS = "_swe_agent_text_actions"  # set by row_document, taken off before the document is parsed
_METADATA_MAX_CHARS = 256  # scalar columns kept as transcript metadata; patches and logs are left out


def _as_list(value: Any) -> Any:
    """A JSON string column is parsed; a ``Sequence(dict)`` column (dict of lists) is turned into rows."""
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        lengths = {len(v) for v in value.values()}
        if len(lengths) == 1:
            keys = list(value)
            return [dict(zip(keys, items, strict=True)) for items in zip(*value.values(), strict=True)]
    return value


def _is_chat(item: Any) -> bool:
    return isinstance(item, dict) and (isinstance(item.get("role"), str) or isinstance(item.get("from"), str))


def _chat_message(item: dict[str, Any]) -> dict[str, Any]:
    """Chat-message spellings of public datasets in OpenAI form.

    nebius/SWE-agent-trajectories: ``role`` in {system, user, ai}, the text in ``text``, the system
    prompt in ``system_prompt``; ShareGPT: ``from``/``value``. Other keys are kept as they are.
    """
    if "role" in item and item.get("content") is not None and item["role"] not in _ROLE_ALIASES:
        return item  # already OpenAI-shaped: no copy
    msg = dict(item)
    role = msg.get("role") if isinstance(msg.get("role"), str) else msg.pop("from", None)
    role = _ROLE_ALIASES.get(str(role), role)
    msg["role"] = role
    if msg.get("content") is None:
        system_prompt = msg.get("system_prompt") if role == "system" else None
        msg["content"] = system_prompt or msg.get("text") or msg.get("value") or ""
    return msg


def _swe_agent_text_rows(items: list[Any]) -> bool:
    """nebius/SWE-agent-trajectories' spelling (``role: ai`` with ``text``): SWE-agent runs whose commands
    are text and whose outputs are user messages."""
    return any(isinstance(x, dict) and x.get("role") == "ai" and "text" in x for x in items)


def _is_event(item: Any) -> bool:
    """An OpenHands event (``source`` plus ``action`` or ``observation``); SWE-agent steps have no ``source``."""
    return isinstance(item, dict) and ("action" in item or "observation" in item) and "source" in item


def row_document(row: dict[str, Any], column: str) -> dict[str, Any]:
    """One dataset row as a document the file importers understand."""
    items = _as_list(row.get(column))
    if not isinstance(items, list):
        raise ValueError(f"column {column!r} holds {type(items).__name__}, not a list of messages")
    doc = {k: v for k, v in row.items() if k != column and k not in ("messages", "history", "trajectory")}
    model = row.get("model") or row.get("model_name")
    if isinstance(model, str):
        doc["model"] = model
    present = [x for x in items if x is not None]
    for k, x in enumerate(present):  # ints, strings or role-less shapes would import as empty runs
        if not isinstance(x, dict):
            raise ValueError(f"item {k} is {type(x).__name__}, not a message object")
        if "role" in x and not isinstance(x["role"], str) and not isinstance(x.get("from"), str):
            raise ValueError(f"item {k}: role is {type(x['role']).__name__}, not a string")
    if column == "history" or (present and _is_event(present[0])):
        doc["history"] = items  # OpenHands events, or a SWE-agent .traj history
    elif present and all(_is_chat(x) for x in present):
        if _swe_agent_text_rows(present):
            doc[TEXT_ACTIONS] = True
        doc["messages"] = [_chat_message(x) for x in present]
    else:
        doc["trajectory"] = items  # SWE-agent steps (response / observation)
    return doc


def choose_column(features: Any, wanted: str | None, given: str) -> str:
    names = list(features) if features else []
    if wanted:
        if names and wanted not in names:
            raise InputError(given, None, f"no column {wanted!r} (columns: {', '.join(names)})")
        return wanted
    for name in MESSAGE_COLUMNS:
        if name in names:
            return name
    raise InputError(
        given,
        None,
        f"no message column ({', '.join(MESSAGE_COLUMNS)}); columns: {', '.join(names) or 'none'}; pass --column NAME",
    )


def _scalar_metadata(row: dict[str, Any], column: str) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in row.items():
        if key in (column, *MESSAGE_COLUMNS):
            continue
        if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= _METADATA_MAX_CHARS):
            kept[key] = value
    return kept


def row_transcripts(row: dict[str, Any], index: int, column: str, fmt: str, label: str, place: str) -> list[Transcript]:
    """The transcript(s) of one row; ``InputError`` naming the row when it cannot be read."""
    where = f"{place}:row {index}"
    try:
        doc = row_document(row, column)
    except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
        raise InputError(where, None, f"column {column!r}: {exc}") from None
    text_actions = doc.pop(TEXT_ACTIONS, False)
    source = Source(Path(where), "", "json", doc)
    chosen = detect_source(source) if fmt == "auto" else fmt
    ctx = ParseContext(path=Path(where), fmt=chosen)
    try:
        transcripts = PARSERS[chosen](source, ctx)
    except (AttributeError, KeyError, TypeError, IndexError) as exc:
        raise InputError(where, None, f"cannot read as {chosen} ({type(exc).__name__}: {exc})") from None
    ctx.flush()
    transcripts = [t for t in transcripts if t.messages]
    if not transcripts:
        raise InputError(where, None, f"column {column!r}: no message could be read")
    instance = doc.get("instance_id") or doc.get("id") or doc.get("trajectory_id")
    base = f"{label}#{index}" + (f"-{instance}" if isinstance(instance, str | int) and instance != "" else "")
    metadata = _scalar_metadata(row, column)
    for k, t in enumerate(transcripts):
        if text_actions:  # each output marked as the observation of its command (five_layer reads them as results)
            t.messages = mark_observations(t.messages, lambda m: fenced_action(m.content))
        t.id = base if len(transcripts) == 1 else f"{base}.{k}"
        t.source = {**t.source, "dataset": place, "row": index}
        t.metadata = {**metadata, **t.metadata}
    return transcripts
