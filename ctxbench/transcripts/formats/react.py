"""DB-GPT style ReAct text: ``Thought:`` / ``Action:`` / ``Action Input:`` / ``Observation:`` blocks.

Text before the first step is the task (a user message; a leading ``System:`` block becomes the
system message). Each Thought/Action/Final Answer run is one assistant message; each
``Observation:`` block is a user message starting with ``Observation:``, which is how DB-GPT
stores it and how ``ctxbench.transcripts.rounds.dbgpt_rounds`` finds round ends. Actions stay text
(no tool calls): DB-GPT parses them from the text too.
"""

from __future__ import annotations

import re

from ctxbench.transcripts.formats._common import ParseContext, Source, finish
from ctxbench.transcripts.model import Message, Transcript

FORMAT = "react"
_LABEL = re.compile(r"^\s*(Thought|Action Input|Action|Observation|Final Answer|Question|System)\s*:", re.IGNORECASE)
_STEP_LABELS = {"thought", "action", "action input", "final answer"}


def _role_of(label: str, current: str) -> str:
    label = label.lower()
    if label == "observation":
        return "observation"
    if label in _STEP_LABELS:
        return "assistant"
    if label == "system" and current == "preamble":
        return "system"
    if label == "question":
        return "user"
    return current


def parse(source: Source, ctx: ParseContext) -> list[Transcript]:
    blocks: list[tuple[str, list[str]]] = [("preamble", [])]
    for line in source.text.splitlines():
        match = _LABEL.match(line)
        kind = blocks[-1][0]
        new = _role_of(match.group(1), kind) if match else kind
        # Action Input continues the assistant turn; any other label change starts a new block.
        if new != kind:
            blocks.append((new, []))
        blocks[-1][1].append(line)
    messages: list[Message] = []
    for kind, lines in blocks:
        text = "\n".join(lines).strip()
        if not text:
            continue
        if kind == "system":
            messages.append(Message("system", re.sub(r"^\s*System\s*:\s*", "", text, flags=re.IGNORECASE)))
        elif kind in ("preamble", "user", "observation"):
            messages.append(Message("user", text))
        else:
            action = re.search(r"^\s*Action\s*:\s*(.+)$", text, re.MULTILINE | re.IGNORECASE)
            metadata = {"react_action": action.group(1).strip()} if action else {}
            messages.append(Message("assistant", text, metadata=metadata))
    return [finish(ctx, source.path.stem, messages, ctx.source(None))]
