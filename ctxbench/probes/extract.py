"""Probes extracted from real transcripts (which carry no planted facts), read the way agents
actually work: the task from the issue text (not its wrapper), files edited vs only viewed from
the editor command and its arguments, shell commands (not editor subcommands), constraints the
user wrote (not framework boilerplate), identifiers the agent reuses (not timestamps or hashes),
tests that failed and later passed, and the final answer or patch.

Each probe records where its gold came from (message index and char span in that message's
probe text, see ``probe_text``) and ``needed_at``: the next message that uses the value again.
The reading of agent actions lives in ``ctxbench.probes.actions``; boilerplate in
``ctxbench.probes.boilerplate``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxbench.probes.actions import Action, agent_actions, call_arguments, observation_indices, probe_text
from ctxbench.probes.boilerplate import Boilerplate, is_framework_message, sentences
from ctxbench.transcripts.model import Message, Probe, ProbeKind, Transcript
from ctxbench.transcripts.tool_schemas import tool_schemas

LABELS = ("task", "file_edited", "file_read", "command", "constraint", "identifier", "test_fixed", "final")
QUESTIONS = {
    "task": "What was the original task?",
    "file_edited": "Which file did the agent edit?",
    "file_read": "Which file did the agent open or read (without editing it)?",
    "command": "Which shell command did the agent run?",
    "constraint": "What constraint did the user state?",
    "identifier": "Which identifier from a tool or user message did the agent use again later?",
    "test_fixed": "Which test failed and later passed?",
    "final": "What final answer or patch did the agent submit?",
}
KINDS: dict[str, ProbeKind] = {
    "task": "recall",
    "file_edited": "artifact",
    "file_read": "artifact",
    "command": "continuation",
    "constraint": "recall",
    "identifier": "recall",
    "test_fixed": "recall",
    "final": "continuation",
}
# Formats whose user-role messages after the first are the environment's observations, not a person.
OBSERVATIONS_AS_USER = {"swe-agent"}
TASK_TAGS = re.compile(r"<(issue_description|pr_description|issue|task)>\s*(.*?)\s*</\1>", re.DOTALL | re.IGNORECASE)
# Wrapper blocks whose content is never the task (a path, a date, injected tips).
WRAPPER_BLOCKS = re.compile(r"<(uploaded_files|EXTRA_INFO|RUNTIME_INFORMATION|system-reminder)>.*?</\1>", re.DOTALL)
TAG = re.compile(r"</?[A-Za-z_][\w-]*>")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A rule for the agent: a negated or required action, a preference, a bound, a superlative choice.
# ("I don't remember", "I must have left it" state facts about the user, not rules.)
CONSTRAINT = re.compile(
    r"\b(?:(?:don'?t|do not|never|must not|mustn'?t)\s+(?!remember\b|know\b|have\b|think\b)\w+|"
    r"must (?!have\b)\w+|only|always|make sure|prefer|want to use|at least|at most|no more than|without|"
    r"rather than|instead of|earliest|latest|fastest|quickest|cheapest|smallest|largest|before \d+|after \d+)\b",
    re.IGNORECASE,
)
MIN_SENTENCE = 12
# Identifiers: IDs with letters and digits (HAT069, 2FBBAH), snake_case names (credit_card_4421486,
# make_pattern_type) and CamelCase names (CommandParser).
IDENT = re.compile(
    r"(?<![\w.-])(?:(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*\d)[A-Z0-9]{5,12}"
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
    r"|_[a-z][a-z0-9]*(?:_[a-z0-9]+)*"
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)(?![\w-])"
)
ID_VALUE = re.compile(r'"(?:\w+_)?id"\s*:\s*"([A-Za-z0-9_-]{4,40})"')
JSON_KEY = re.compile(r'"([A-Za-z_]\w*)"\s*:')
HEXLIKE = re.compile(r"[0-9a-fA-F]+|\d+[A-Za-z]?|[A-Za-z]?\d+")
FAILED_TEST = re.compile(
    r"\bFAILED ([\w/.-]+::[\w\[\]./-]+)|^([\w/.-]+::[\w\[\]./-]+) FAILED|^FAIL: (\w+ \([\w.]+\))", re.M
)
PASSED_TEST = r"(?:{t} PASSED|PASSED {t}|{t} \.\.\. ok|ok: {t})"


@dataclass(frozen=True)
class Candidate:
    label: str
    answer: str
    message_index: int
    span: tuple[int, int] | None = None
    needed_at: int | None = None  # set when the extractor knows where the fact is used (tests)


def _span(text: str, value: str) -> tuple[int, int] | None:
    at = text.find(value)
    return (at, at + len(value)) if at >= 0 else None


def _sentences(text: str) -> Iterator[tuple[str, int]]:
    """Sentences with their offsets: split on lines, then on sentence ends."""
    offset = 0
    for line in text.splitlines(keepends=True):
        start = 0
        for part in SENTENCE_END.split(line):
            at = line.find(part, start)
            start = at + len(part)
            if part.strip():
                yield part, offset + at
        offset += len(line)


def _first_user(messages: list[Message], boilerplate: Boilerplate) -> int | None:
    for i, m in enumerate(messages):
        if m.role == "user" and m.content.strip() and not is_framework_message(m.content, boilerplate):
            return i
    return None


def _task(messages: list[Message], boilerplate: Boilerplate) -> Candidate | None:
    """The first sentence of the user's own request: inside the issue tags when there are any,
    else the first message's first sentence that is neither a framework lead-in nor a greeting."""
    index = _first_user(messages, boilerplate)
    if index is None:
        return None
    text = messages[index].content
    # Claude Code echoes shell-mode lines ("! ls", "  ⎿ output") before the prompt.
    text = re.sub(r"(?m)^\s*[!⎿].*$", lambda m: " " * len(m.group(0)), text)
    tagged = TASK_TAGS.search(text)
    body, base = (tagged.group(2), tagged.start(2)) if tagged else (WRAPPER_BLOCKS.sub(_blank, text), 0)
    for sentence, at in _sentences(TAG.sub(_blank, body)):
        line = sentence.strip()
        if boilerplate.is_boilerplate(line):
            continue  # framework lead-ins
        line = line.lstrip("> #*").strip()
        if len(line) < MIN_SENTENCE or line.endswith(":"):
            continue
        answer = _clip(line.rstrip(".!?"), 160)
        start = text.find(answer, base + at) if base + at < len(text) else -1
        return Candidate("task", answer, index, (start, start + len(answer)) if start >= 0 else None)
    return None


def same_file(a: str, b: str) -> bool:
    """Two spellings of one path: equal, or one is the other's tail after a "/"."""
    a, b = a.removeprefix("./"), b.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))  # keep offsets


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def _user_written(transcript: Transcript, boilerplate: Boilerplate, first_user: int | None) -> Iterator[int]:
    observations = transcript.source.get("format") in OBSERVATIONS_AS_USER
    answers = observation_indices(transcript)
    for i, m in enumerate(transcript.messages):
        if m.role != "user" or i in answers or is_framework_message(m.content, boilerplate):
            continue
        if observations and i != first_user:
            continue
        if i == first_user and (
            TASK_TAGS.search(m.content) or any(map(boilerplate.is_boilerplate, sentences(m.content)))
        ):
            continue  # a framework template around an issue: the issue states the problem, the template its rules
        yield i


def _constraints(transcript: Transcript, boilerplate: Boilerplate, task: Candidate | None) -> Iterator[Candidate]:
    first = task.message_index if task else None
    for i in _user_written(transcript, boilerplate, first):
        text = transcript.messages[i].content
        for sentence, at in _sentences(text):
            line = re.sub(r"^\s*(?:\d+[.)]|[-*>])\s*", "", sentence).strip()
            if len(line) < MIN_SENTENCE or "###" in line or boilerplate.is_boilerplate(line):
                continue
            if task is not None and i == first and task.answer in line:
                continue
            if CONSTRAINT.search(line):
                answer = _clip(line, 200)
                start = text.find(answer, at)
                yield Candidate("constraint", answer, i, (start, start + len(answer)) if start >= 0 else None)


def tool_vocabulary(transcript: Transcript) -> set[str]:
    """The words of the agent's tool interface: tool names, argument names, and the short word values
    of its arguments (editor subcommands), from its calls and its recorded tool schemas. They recur
    in every later call whatever the task, so they are never a fact to remember."""
    words: set[str] = set()

    def add_schema(value: Any) -> None:  # every key and name of a recorded schema
        if isinstance(value, dict):
            words.update(k for k in value if isinstance(k, str))
            words.update(v for k, v in value.items() if k == "name" and isinstance(v, str))
            for v in value.values():
                add_schema(v)
        elif isinstance(value, list):
            words.update(v for v in value if isinstance(v, str) and v.isidentifier())  # enums: subcommands
            for v in value:
                add_schema(v)

    add_schema(tool_schemas(transcript))
    for message in transcript.messages:
        for call in message.tool_calls:
            words.add(call.name)
            args = call_arguments(call.arguments)
            words.update(args)
            command = args.get("command")
            if isinstance(command, str) and command.isidentifier():  # an editor subcommand
                words.add(command)
    return words


def _identifiers(transcript: Transcript, texts: list[str]) -> Iterator[Candidate]:
    """IDs and code names first stated in a tool or user message and used again by the agent (not
    the words of its tool interface)."""
    messages = transcript.messages
    vocabulary = tool_vocabulary(transcript)
    agent_later = [""] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):  # what the agent writes from message i on
        agent_later[i] = (texts[i] if messages[i].role == "assistant" else "") + "\n" + agent_later[i + 1]
    seen: set[str] = set()
    for i, m in enumerate(messages):
        if m.role not in ("tool", "user"):
            continue
        text = texts[i]
        keys = set(JSON_KEY.findall(text))
        found = [(v.start(1), v.group(1)) for v in ID_VALUE.finditer(text)]
        found += [(v.start(), v.group(0)) for v in IDENT.finditer(text)]
        for at, token in sorted(found):
            schema_key = token in keys and not any(ch.isdigit() for ch in token)
            if token in seen or schema_key or token in vocabulary or HEXLIKE.fullmatch(token) or len(token) < 4:
                continue
            seen.add(token)
            word = re.compile(rf"(?<![\w-]){re.escape(token)}(?![\w-])")
            if any(word.search(t) for t in texts[:i]) or not word.search(agent_later[i + 1]):
                continue
            yield Candidate("identifier", token, i, (at, at + len(token)))


def _tests_fixed(transcript: Transcript, texts: list[str]) -> Iterator[Candidate]:
    failed: dict[str, tuple[int, int]] = {}
    for i, m in enumerate(transcript.messages):
        if m.role not in ("tool", "user"):
            continue
        for test, (j, at) in list(failed.items()):
            if j < i and re.search(PASSED_TEST.format(t=re.escape(test)), texts[i]):
                yield Candidate("test_fixed", test, j, (at, at + len(test)), needed_at=i)
                del failed[test]
        for match in FAILED_TEST.finditer(texts[i]):
            test = next(g for g in match.groups() if g)
            failed.setdefault(test, (i, match.start()))


def _final(transcript: Transcript, actions: list[Action], texts: list[str]) -> Candidate | None:
    """The last explicit answer (submit ARG, finish message); else, when the agent submitted or the
    run is an issue-solving one, the key line of its last successful edit."""
    answers = [a for a in actions if a.op == "answer" and a.value]
    if answers:
        value = answers[-1].value.strip().strip("'\"")
        if answers[-1].tool == "finish":
            value = _clip(next((s.strip() for s, _ in _sentences(value)), value), 200)
        first = next((i for i, t in enumerate(texts) if value in t), answers[-1].message_index)
        return Candidate("final", value, first, _span(texts[first], value))
    submitted = any(a.op == "answer" for a in actions)
    if not submitted and transcript.source.get("format") not in ("swe-agent", "openhands"):
        return None
    edits = [a for a in actions if a.op == "edit" and a.ok and a.new_text.strip()]
    if not edits:
        return None
    line = max((ln.strip() for ln in edits[-1].new_text.splitlines()), key=len)
    return Candidate("final", line, edits[-1].message_index, _span(texts[edits[-1].message_index], line))


def _candidates(transcript: Transcript, boilerplate: Boilerplate) -> Iterator[Candidate]:
    messages = transcript.messages
    texts = [probe_text(m) for m in messages]
    task = _task(messages, boilerplate)
    if task is not None:
        yield task
    actions = agent_actions(transcript)
    edited = [a.path for a in actions if a.op == "edit" and a.ok and a.path]
    named: dict[str, list[str]] = {"file_edited": [], "file_read": []}
    for action in actions:
        span = _span(texts[action.message_index], action.value)
        label = "file_edited" if action.op == "edit" and action.ok else "file_read" if action.op == "read" else None
        path = action.path
        if label and path and not any(same_file(path, p) for p in named[label]):
            if label == "file_read" and any(same_file(path, p) for p in edited):
                continue  # viewed, then edited: an edited file
            named[label].append(path)
            yield Candidate(label, path, action.message_index, _span(texts[action.message_index], path))
        if action.op == "shell":
            yield Candidate("command", action.value, action.message_index, span)
    yield from _constraints(transcript, boilerplate, task)
    yield from _identifiers(transcript, texts)
    yield from _tests_fixed(transcript, texts)
    final = _final(transcript, actions, texts)
    if final is not None:
        yield final


def extract_candidates(transcript: Transcript, boilerplate: Boilerplate | None = None) -> list[Candidate]:
    """Every candidate probe, deduplicated by (label, answer), in transcript order."""
    seen: set[tuple[str, str]] = set()
    out = []
    for cand in _candidates(transcript, boilerplate or Boilerplate()):
        key = (cand.label, cand.answer)
        if cand.answer and key not in seen:
            seen.add(key)
            out.append(cand)
    return out


def extract_probes(transcript: Transcript, max_probes: int = 12, boilerplate: Boilerplate | None = None) -> list[Probe]:
    """Deterministic probes for a transcript, balanced across labels, in transcript order."""
    texts = [probe_text(m) for m in transcript.messages]
    by_label: dict[str, list[Probe]] = {}
    for n, cand in enumerate(extract_candidates(transcript, boilerplate), 1):
        needed_at = cand.needed_at if cand.needed_at is not None else _next_use(texts, cand.answer, cand.message_index)
        probe = Probe(
            id=f"{cand.label}-{cand.message_index}-{n}",
            question=QUESTIONS[cand.label],
            answer=cand.answer,
            kind=KINDS[cand.label],
            message_index=cand.message_index,
            needed_at=needed_at,
            source="extracted",
            label=cand.label,
            span=cand.span,
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


def labels_of(probes: Iterable[Probe]) -> set[str]:
    return {p.label or "" for p in probes}
