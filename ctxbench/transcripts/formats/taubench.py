"""tau-bench trajectory lists: ``[{task_id, reward, info, traj, trial}]``, ``traj`` an OpenAI message list.

One transcript per entry, id ``<file stem>#task<task_id>.trial<trial>``; the same task appears once
per trial in historical files, so the trial is part of the id.
"""

from __future__ import annotations

from typing import Any

from ctxbench.transcripts.formats._common import ParseContext, Source, finish, unique_ids
from ctxbench.transcripts.formats.openai import convert_messages
from ctxbench.transcripts.model import Transcript

FORMAT = "tau-bench"


def _model_from_stem(stem: str) -> str | None:
    """Historical files are named ``<model>-<domain>.json`` (e.g. gpt-4o-airline)."""
    for domain in ("-airline", "-retail"):
        if stem.endswith(domain):
            return stem.removesuffix(domain)
    return None


def _entry(entry: dict[str, Any], stem: str, ctx: ParseContext, prefix: str) -> Transcript:
    task_id, trial = entry.get("task_id"), entry.get("trial")
    messages, model = convert_messages(entry.get("traj") or [], ctx, f"{prefix}.traj")
    name = f"task{task_id}" + (f".trial{trial}" if trial is not None else "")
    reward = entry.get("reward")
    source = ctx.source(model or _model_from_stem(stem), task_id=str(task_id), trial=trial)
    return finish(
        ctx,
        f"{stem}#{name}",
        messages,
        source,
        reward=float(reward) if isinstance(reward, int | float) else None,
    )


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    stem = source.path.stem
    if source.kind == "json":
        entries = source.data if isinstance(source.data, list) else [source.data]
        out = [_entry(e, stem, ctx, f"$[{i}]") for i, e in enumerate(entries) if isinstance(e, dict)]
    else:
        out = [_entry(e, stem, ctx, f"line {n}:$") for n, e in source.data if isinstance(e, dict)]
    return unique_ids(out)
