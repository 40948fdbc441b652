"""Probes extracted automatically from real transcripts (which carry no planted facts):
the task statement, files read or edited, commands run, error messages, failing tests,
identifiers in tool output, user constraints and stated decisions.

Each probe's gold value is taken from the first message that contains it (so the fact is
"stated" there) and, when the value shows up again later, ``needed_at`` is that later
message: the point where the agent used the fact again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ctxbench.transcripts.model import Message, Probe, Transcript

PATH = re.compile(r"(?<![\w/.-])((?:/|\./)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,5})(?![\w/])")
ERROR = re.compile(r"\b([A-Z]\w*(?:Error|Exception)): ([^\n]{8,90})")
FAILED_TEST = re.compile(r"\bFAILED ([\w/.-]+::[\w\[\]-]+)")
IDENTIFIER = re.compile(r"\b(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*\d)[A-Z0-9]{6,12}\b")
CONSTRAINT = re.compile(r"[^.\n]*\b(?:must|never|do not|don't|only|make sure|always)\b[^.\n]{10,120}", re.IGNORECASE)
DECISION = re.compile(r"[^.\n]*\b(?:because|decided|instead of|so that)\b[^.\n]{10,120}", re.IGNORECASE)
ACTION = re.compile(r"```[a-z]*\n(.*?)```|^Action(?: Input)?:\s*(.+)$", re.DOTALL | re.MULTILINE)
EDIT_TOOLS = re.compile(r"edit|write|create|replace|str_replace|patch|insert", re.IGNORECASE)
COMMAND_KEYS = ("command", "cmd")


@dataclass(frozen=True)
class Candidate:
    kind: str
    question: str
    answer: str
    message_index: int
    label: str


def _text(message: Message) -> str:
    return message.content + "".join(f"\n{c.name} {c.arguments}" for c in message.tool_calls)


def _command(arguments: str) -> str | None:
    try:
        data = json.loads(arguments)
    except ValueError:
        return None
    if isinstance(data, dict):
        for key in COMMAND_KEYS:
            if isinstance(data.get(key), str) and 4 <= len(data[key].strip()) <= 120:
                return data[key].strip().splitlines()[0]
    return None


def _candidates(transcript: Transcript) -> Iterator[Candidate]:
    messages = transcript.messages
    first_user = next((i for i, m in enumerate(messages) if m.role == "user" and m.content.strip()), None)
    if first_user is not None:
        sentence = re.split(r"(?<=[.!?])\s|\n", messages[first_user].content.strip(), maxsplit=1)[0][:100].strip()
        if len(sentence) >= 12:
            yield Candidate("recall", "What was the original task?", sentence, first_user, "task")
    for i, message in enumerate(messages):
        if message.role == "assistant":
            for call in message.tool_calls:
                for path in PATH.findall(call.arguments):
                    how = "edited" if EDIT_TOOLS.search(call.name) else "read or used"
                    yield Candidate(
                        "artifact", f"Which file did the agent say it {how} with {call.name}?", path, i, "path"
                    )
                command = _command(call.arguments)
                if command:
                    yield Candidate("continuation", "Which command did the agent run?", command, i, "command")
            # Text-only agents (SWE-agent, ReAct) put their action in a fenced block or an Action: line.
            for found in ACTION.finditer(message.content) if not message.tool_calls else ():
                block = (found.group(1) or found.group(2) or "").strip()
                action = block.splitlines()[0].strip() if block else ""
                for path in PATH.findall(action):
                    how = "edited" if EDIT_TOOLS.search(action.split()[0]) else "read or used"  # action is non-empty
                    yield Candidate("artifact", f"Which file did the agent say it {how}?", path, i, "path")
                if 4 <= len(action) <= 120:
                    yield Candidate("continuation", "Which command did the agent run?", action, i, "command")
            for match in DECISION.findall(message.content):
                yield Candidate("decision", "What did the agent decide, and why?", match.strip(), i, "decision")
        elif message.role in ("tool", "user"):
            text = message.content
            for error, detail in ERROR.findall(text):
                yield Candidate(
                    "recall", "Which error did the tool output report?", f"{error}: {detail.strip()}", i, "error"
                )
            for test in FAILED_TEST.findall(text):
                yield Candidate("recall", "Which test failed?", test, i, "failed_test")
            for ident in IDENTIFIER.findall(text):
                yield Candidate("recall", "Which identifier appeared in the tool output?", ident, i, "identifier")
            if message.role == "user" and i != first_user:
                for match in CONSTRAINT.findall(text):
                    yield Candidate("recall", "What constraint did the user state?", match.strip(), i, "constraint")


def extract_probes(transcript: Transcript, max_probes: int = 12) -> list[Probe]:
    """Deterministic probes for a transcript, balanced across labels, in transcript order."""
    texts = [_text(m) for m in transcript.messages]
    seen: set[str] = set()
    by_label: dict[str, list[Probe]] = {}
    for cand in _candidates(transcript):
        if cand.answer in seen:
            continue
        # A value must be first stated here; a file the agent acts on may have been listed before
        # (the artifact fact is the action, and agents find files before they touch them).
        if cand.label != "path" and any(cand.answer in t for t in texts[: cand.message_index]):
            continue
        seen.add(cand.answer)
        needed_at = _next_use(texts, cand.answer, cand.message_index)
        probe = Probe(
            id=f"{cand.label}-{cand.message_index}-{len(seen)}",
            question=cand.question,
            answer=cand.answer,
            kind=cand.kind,  # type: ignore[arg-type]
            message_index=cand.message_index,
            needed_at=needed_at,
            source="extracted",
        )
        by_label.setdefault(cand.label, []).append(probe)
    return _balanced(by_label, max_probes, key=lambda p: p.message_index)


def _next_use(texts: list[str], answer: str, after: int) -> int | None:
    return next((j for j in range(after + 1, len(texts)) if answer in texts[j]), None)


def _balanced(groups: dict[str, list[Probe]], limit: int, key: Callable[[Probe], int]) -> list[Probe]:
    """Round-robin over labels (each in order of preference: reused facts first), then sort."""
    queues = {
        label: sorted(probes, key=lambda p: (p.needed_at is None, p.message_index)) for label, probes in groups.items()
    }
    chosen: list[Probe] = []
    while len(chosen) < limit and any(queues.values()):
        for label in sorted(queues):
            if queues[label] and len(chosen) < limit:
                chosen.append(queues[label].pop(0))
    return sorted(chosen, key=key)
