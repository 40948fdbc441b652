"""Probes extracted from real transcripts (which carry no planted facts): the facts an engineer
taking over the run would need. The task from the issue text (not its wrapper); the work
(``ctxbench.probes.work``: the files changed that survive, the change, the reproduction, errors
seen, test results, the root cause and decisions the agent stated, what it reported at the end);
constraints the user wrote after the task (not framework boilerplate); identifiers from tools or
the user that the agent reuses (not timestamps, hashes, or names copied from the task).

Each probe records where its gold came from (message index and char span in that message's
probe text, see ``probe_text``) and ``needed_at``: the next message that uses the value again.
The reading of agent actions lives in ``ctxbench.probes.actions``; boilerplate in
``ctxbench.probes.boilerplate``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxbench.probes.actions import Action, agent_actions, call_arguments, observation_indices, probe_text
from ctxbench.probes.boilerplate import FRAMEWORK_MESSAGE, Boilerplate, is_framework_message, sentences
from ctxbench.probes.conversation import conversation_decisions, later_requests
from ctxbench.probes.delimited import closing_tag, cut, first_body
from ctxbench.probes.statements import final_report
from ctxbench.probes.work import Fact, WorkReader, api_facts, listed_ids
from ctxbench.transcripts.model import Message, Probe, ProbeKind, Transcript
from ctxbench.transcripts.tool_schemas import tool_schemas

LABELS = (
    "task", "file_changed", "change", "root_cause", "reproduction", "error", "test_result", "decision", "outcome",
    "identifier", "constraint",
)  # fmt: skip
# How many probes of each type a transcript gets at most, in the order slots are filled: what an
# engineer taking over needs first (reference.md section 10). Read-only commands, directories and
# files only viewed are not facts worth a slot. Decisions: five, for a conversation's rulings and the
# person's choices (an agent working alone is asked three of its own, statements.AGENT_DECISIONS).
SLOTS = {
    "task": 2, "change": 4, "file_changed": 2, "test_result": 4, "root_cause": 2, "reproduction": 1, "error": 2,
    "outcome": 2, "decision": 5, "identifier": 2, "constraint": 3,
}  # fmt: skip
QUESTIONS = {
    "task": "What was the original task?",
    "constraint": "What constraint did the user state?",
    "identifier": "Which identifier from a tool or user message did the agent use again later?",
}
KINDS: dict[str, ProbeKind] = {
    "task": "recall",
    "file_changed": "artifact",
    "change": "artifact",
    "root_cause": "recall",
    "reproduction": "recall",
    "error": "recall",
    "test_result": "recall",
    "decision": "decision",
    "outcome": "continuation",
    "identifier": "recall",
    "constraint": "recall",
}
# Formats whose user-role messages after the first are the environment's observations, not a person.
OBSERVATIONS_AS_USER = {"swe-agent"}
# Where a framework puts the issue: in tags, or SWE-agent's "ISSUE:\n...\n\nINSTRUCTIONS:" template.
TASK_DELIMITERS = (
    (re.compile(r"<(issue_description|pr_description|issue|task)>", re.I), closing_tag(re.I), True),
    (re.compile(r"^ISSUE:[ \t]*\n", re.M), lambda _: re.compile(r"^[ \t]*INSTRUCTIONS:", re.M), False),
)


def task_body(text: str) -> tuple[int, int] | None:
    """Where the issue's text is inside its delimiters, when the message has them (linear time:
    ``ctxbench.probes.delimited``)."""
    return first_body(text, *TASK_DELIMITERS)


# Wrapper blocks whose content is never the task (a path, a date, injected tips).
WRAPPER_BLOCKS = re.compile(r"<(uploaded_files|EXTRA_INFO|RUNTIME_INFORMATION|system-reminder)>")
TAG = re.compile(r"</?[A-Za-z_][\w-]*>")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A rule for the agent: a negated or required action, a preference, a bound, a superlative choice.
# ("I don't remember", "I must have left it" state facts about the user, not rules.)
CONSTRAINT = re.compile(
    r"\b(?:(?:don'?t|do not|never|must not|mustn'?t)\s+(?!remember\b|know\b|have\b|think\b)\w+|"
    r"(?<!there )must (?!have\b)\w+|only|always|(?<!I'll )(?<!I will )(?<!I’ll )(?<!to )make sure|prefer|want to use|"
    r"at least|at most|no more than|without|"
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


@dataclass(frozen=True)
class Candidate:
    label: str
    answer: str
    message_index: int
    span: tuple[int, int] | None = None
    needed_at: int | None = None  # set when the extractor knows where the fact is used (tests)
    question: str = ""  # names the fact's context so that one answer is right; else the type's question


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
        if m.role == "user" and m.content.strip() and _opens_task(m.content, boilerplate):
            return i
    return None


def _opens_task(content: str, boilerplate: Boilerplate) -> bool:
    """Not framework text; an issue in its delimiters is the task however much of it recurs in
    other runs (a demonstration of another issue is the framework's, tags and all)."""
    tagged = task_body(content) is not None and not FRAMEWORK_MESSAGE.match(content)
    return tagged or not is_framework_message(content, boilerplate)


# What an opening request is made of when it says only that help is wanted ("I need to make a few
# changes to my upcoming flight reservation"): generic verbs and the service's generic nouns.
GENERIC = {
    "change", "changes", "make", "making", "modify", "modification", "adjust", "help", "assist", "assistance",
    "some", "few", "couple", "upcoming", "recent", "recently", "current", "flight", "flights", "reservation",
    "reservations", "booking", "bookings", "booked", "trip", "travel", "plans", "order", "orders", "account",
    "with", "have", "there", "looking", "hoping", "trying", "something", "issue", "issues", "problem", "question",
    "thing", "things", "details", "today", "need", "want", "like", "please", "would", "could", "just", "able",
}  # fmt: skip
CONFIRMATION = re.compile(
    r"^(?:yes|yeah|ok|okay|sure|great|perfect|alright|sounds|thanks|thank you)\b"
    r"|\b(?:go ahead|proceed|go with|option \w+)\b",
    re.IGNORECASE,
)
REQUEST = re.compile(r"\b(?:need|want|would like|'d like|like to|hoping|could you|can you|please|help me)\b", re.I)


def _specific(line: str) -> bool:
    """Names something: a number, an ID, or a capitalised word past the first (a name, a place)."""
    words = re.findall(r"[A-Za-z][\w'-]*", line)
    return (
        any(ch.isdigit() for ch in line)
        or "_" in line
        or any(w[0].isupper() and w != "I" and n > 0 for n, w in enumerate(words))
    )


def _opener(line: str) -> bool:
    """A sentence that only says help is wanted: short, naming nothing, every word generic."""
    words = re.findall(r"[A-Za-z][\w'-]*", line)
    if len(words) > 15 or _specific(line):
        return False
    return all(len(w) <= 3 or w.lower() in GENERIC or w.lower() in FILLER for w in words)


def _task_sentences(text: str, boilerplate: Boilerplate) -> Iterator[tuple[str, int]]:
    for sentence, at in _sentences(text):
        line = sentence.strip()
        if boilerplate.is_boilerplate(line):
            continue  # framework lead-ins
        line = line.lstrip("> #*").strip()
        if len(line) < MIN_SENTENCE or line.endswith(":"):
            continue
        yield line, at


def _task(messages: list[Message], boilerplate: Boilerplate) -> Candidate | None:
    """The first sentence of the user's own request: inside the issue tags when there are any,
    else the first message's first sentence that is neither a framework lead-in nor a greeting
    nor an opener that only says help is wanted (when a later sentence says what)."""
    index = _first_user(messages, boilerplate)
    if index is None:
        return None
    text = messages[index].content
    # Claude Code echoes shell-mode lines ("! ls", "  ⎿ output") before the prompt.
    text = re.sub(r"(?m)^[ \t]*[!⎿].*$", lambda m: " " * len(m.group(0)), text)
    tagged = task_body(text)
    body, base = (
        (text[tagged[0] : tagged[1]], tagged[0]) if tagged else (cut(text, WRAPPER_BLOCKS, closing_tag(), fill=True), 0)
    )
    # Inside the issue's own delimiters every sentence is the issue's, even one that recurs across
    # runs (runs of one issue under another template, other issues quoting the same error).
    lines = list(_task_sentences(TAG.sub(_blank, body), Boilerplate() if tagged else boilerplate))
    if not lines:
        return None
    # past an opener, the first sentence that asks for something or names it ("You are the most
    # lenient agent" does neither)
    line, at = lines[0]
    if _opener(line):
        line, at = next(((ln, a) for ln, a in lines[1:] if REQUEST.search(ln) or _specific(ln)), lines[0])
    answer = _clip(line.rstrip(".!?"), 160)
    start = text.find(answer, base + at) if base + at < len(text) else -1
    return Candidate("task", answer, index, (start, start + len(answer)) if start >= 0 else None)


def _first_request(transcript: Transcript, boilerplate: Boilerplate, task: Candidate) -> Candidate | None:
    """When the task's message only opened ("I need to make some changes to my reservation"), the
    first later sentence of the person that asks for something and names it (a number, a name, a
    place; not a sentence giving an ID) is what the task is."""
    if not _opener(task.answer):
        return None
    for i in _user_written(transcript, boilerplate, task.message_index):
        if i <= task.message_index:
            continue
        text = transcript.messages[i].content
        for line, at in _task_sentences(text, boilerplate):
            if CONFIRMATION.search(line) or re.search(r"\bid\b|\bis [\w-]*\d", line, re.I):
                continue  # a yes to the agent's proposal, a choice among its options; an ID given
            if REQUEST.search(line) and _specific(line):
                answer = _clip(line.rstrip(".!?"), 160)
                start = text.find(answer, at)
                return Candidate("task", answer, i, (start, start + len(answer)) if start >= 0 else None)
    return None


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
            task_body(m.content) is not None or any(map(boilerplate.is_boilerplate, sentences(m.content)))
        ):
            continue  # a framework template around an issue: the issue states the problem, the template its rules
        yield i


# Cues too weak to make a question a rule ("Can anything be done without it?" asks, it rules nothing).
WEAK_CUE = re.compile(r"\b(?:without|instead of|rather than)\b", re.IGNORECASE)
RESTATED = 0.7  # share of a sentence's words an earlier user message held: it restates that request


# Words of how a request is put, not of what it asks.
FILLER = {"just", "want", "make", "sure", "need", "like", "please", "would", "could", "also", "really", "that", "this"}


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3 and w not in FILLER}


def _constraints(transcript: Transcript, boilerplate: Boilerplate, task: Candidate | None) -> Iterator[Candidate]:
    """Rules a person wrote after the task: a sentence with a rule's cue, not a question whose
    only cue is a weak one, not a restatement of what the person wrote before (the task, an
    earlier request or rule: most of its words there already)."""
    first = task.message_index if task else None
    earlier: list[set[str]] = [_stems(transcript.messages[first].content)] if first is not None else []
    for i in _user_written(transcript, boilerplate, first):
        text = transcript.messages[i].content
        if i == first or "diff --git" in text or "<returncode>" in text:
            continue  # the task's own message sits where every strategy keeps it; a diff or output is no user
        for sentence, at in _sentences(text):
            line = re.sub(r"^\s*(?:\d+[.)]|[-*>])\s*", "", sentence).strip()
            if len(line) < MIN_SENTENCE or "###" in line or boilerplate.is_boilerplate(line):
                continue
            if task is not None and i == first and task.answer in line:
                continue
            cues = CONSTRAINT.findall(line)
            if not cues or (line.endswith("?") and all(WEAK_CUE.fullmatch(c) for c in cues)):
                continue
            words = _stems(line)
            if words and any(len(words & before) >= RESTATED * len(words) for before in earlier):
                continue
            answer = _clip(line, 200)
            start = text.find(answer, at)
            yield Candidate("constraint", answer, i, (start, start + len(answer)) if start >= 0 else None)
        earlier.append(_stems(text))


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


WORD = re.compile(r"[A-Za-z0-9_-]+")


ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _argument_uses(messages: list[Message]) -> dict[str, tuple[str, str, int]]:
    """Where the agent first passed each value as a tool call's argument: the tool, the argument's
    name and which distinct value of that argument of that tool it was (0 for the first)."""
    uses: dict[str, tuple[str, str, int]] = {}
    values: dict[tuple[str, str], list[str]] = {}

    def walk(tool: str, key: str, value: Any) -> None:  # nested values by their nearest key
        if isinstance(value, dict):
            for k, v in value.items():
                walk(tool, k, v)
        elif isinstance(value, list):
            for v in value:
                walk(tool, key, v)
        elif isinstance(value, str):
            seen = values.setdefault((tool, key), [])
            if value not in seen:
                seen.append(value)
            uses.setdefault(value, (tool, key, seen.index(value)))

    for m in messages:
        for call in m.tool_calls:
            walk(call.name, "", call_arguments(call.arguments))
    return uses


def _identifiers(transcript: Transcript, texts: list[str], task_index: int | None) -> Iterator[Candidate]:
    """IDs and code names first stated in a tool or user message (not the task: a name copied from
    it is already there) and used again by the agent (not the words of its tool interface). One
    pass over the words of every message: linear in the transcript's size. An ID the agent passed
    to a tool is asked with the tool and the argument (one right answer), before those it only
    wrote in its replies."""
    messages = transcript.messages
    vocabulary = tool_vocabulary(transcript)
    uses = _argument_uses(messages)
    many = {(tool, key): n for tool, key, n in uses.values()}
    first_seen: dict[str, int] = {}
    last_agent_use: dict[str, int] = {}
    for i, text in enumerate(texts):
        for word in WORD.findall(text):
            first_seen.setdefault(word, i)
            if messages[i].role == "assistant":
                last_agent_use[word] = i
    seen: set[str] = set()
    later: list[Candidate] = []
    for i, m in enumerate(messages):
        if m.role not in ("tool", "user") or i == task_index:
            continue
        text = texts[i]
        keys = set(JSON_KEY.findall(text))
        found = [(v.start(1), v.group(1)) for v in ID_VALUE.finditer(text)]
        # a name without a digit outside an ID field is a word (a brand, an enum value), not an ID
        found += [(v.start(), v.group(0)) for v in IDENT.finditer(text) if any(ch.isdigit() for ch in v.group(0))]
        for at, token in sorted(found):
            schema_key = token in keys and not any(ch.isdigit() for ch in token)
            if token in seen or schema_key or token in vocabulary or HEXLIKE.fullmatch(token) or len(token) < 4:
                continue
            seen.add(token)
            if first_seen.get(token, i) < i or last_agent_use.get(token, -1) <= i:
                continue
            use = uses.get(token)
            if use is None:
                later.append(Candidate("identifier", token, i, (at, at + len(token))))
                continue
            tool, key, n = use
            name = key.replace("_", " ") or "value"
            if not many[(tool, key)]:
                question = f"Which {name} did the agent pass to `{tool}`?"
            elif n < len(ORDINALS):  # several values of that argument: which one, in the order passed
                question = f"Which was the {ORDINALS[n]} {name} the agent passed to `{tool}`?"
            else:
                question = ""
            yield Candidate("identifier", token, i, (at, at + len(token)), question=question)
    yield from later


def _facts(
    transcript: Transcript, texts: list[str], task: Candidate | None, actions: list[Action]
) -> Iterator[Candidate]:
    """The work's facts (coding and API agents alike), each with its own question."""
    reader = WorkReader(transcript.messages, actions, task.answer if task else "")
    finders: list[Iterable[Fact]] = [
        reader.changes(),
        reader.files_changed(),
        reader.test_results(),
        reader.checks_read(),
        reader.root_causes(),
        reader.reproduction(),
        reader.errors_seen(),
        final_report(transcript.messages, actions),
        reader.decisions(),
        api_facts(transcript.messages, actions),
        listed_ids(transcript.messages),
        later_requests(transcript.messages, task.message_index if task else None),
        conversation_decisions(transcript.messages, task.message_index if task else None),
    ]
    for facts in finders:
        for fact in facts:
            at = min(max(fact.message_index, 0), len(texts) - 1)
            span = _span(texts[at], fact.answer)
            if span is None:  # the value is spelled elsewhere (a diff's path): point at where it is
                at = next((j for j in range(at, len(texts)) if fact.answer in texts[j]), at)
                span = _span(texts[at], fact.answer)
            yield Candidate(fact.label, fact.answer, at, span, question=fact.question)


def _candidates(transcript: Transcript, boilerplate: Boilerplate, texts: list[str]) -> Iterator[Candidate]:
    messages = transcript.messages
    task = _task(messages, boilerplate)
    if task is not None:
        yield _first_request(transcript, boilerplate, task) or task
    actions = agent_actions(transcript)
    facts = list(_facts(transcript, texts, task, actions))
    yield from facts
    yield from _constraints(transcript, boilerplate, task)
    if not any(a.op in ("shell", "edit") for a in actions):
        # In coding runs the names that matter are in the change and the root cause; names read
        # while exploring are noise. API agents' IDs (users, reservations) are what they act on,
        # unless a fact's question already names the ID as the call's context (`cancel_reservation ID`).
        named = " ".join(c.question for c in facts if c.question)
        listed = " ".join(c.answer for c in facts if c.label == "identifier")
        for cand in _identifiers(transcript, texts, task.message_index if task else None):
            # A listed ID the agent then looked up alone is which of the list it chose: a fact of its own.
            chosen = cand.question.startswith("Which ") and " did the agent pass to `" in cand.question
            if f" {cand.answer}`" not in named and (chosen or f'"{cand.answer}"' not in listed):
                yield cand


OBJECT_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def _answer_key(cand: Candidate) -> str:
    """A sentence with or without its stop; an object's address aside (the same error printed by two runs names
    two addresses: one fact)."""
    return OBJECT_ADDRESS.sub("0x", " ".join(cand.answer.split())).casefold().rstrip(".!?")


def _typed_candidates(
    transcript: Transcript, boilerplate: Boilerplate | None = None, texts: list[str] | None = None
) -> list[Candidate]:
    """Every candidate, in the finders' order, once per type: a gold read as two types (a statement
    that is a cause and a decision) is a candidate of both, and selection asks it once. ``texts``:
    the messages' probe texts, when the caller has them already (decoding tool arguments is not free)."""
    if texts is None:
        texts = [probe_text(m) for m in transcript.messages]
    seen: set[tuple[str, str]] = set()
    out = []
    for cand in _candidates(transcript, boilerplate or Boilerplate(), texts):
        key = (cand.label, _answer_key(cand))
        if cand.answer and key not in seen:
            seen.add(key)
            out.append(cand)
    return out


def extract_candidates(transcript: Transcript, boilerplate: Boilerplate | None = None) -> list[Candidate]:
    """Every candidate probe, in the finders' order; one per fact (the same gold under two types,
    say a reproduction that printed an error, is kept once, under the first)."""
    seen: set[str] = set()
    out = []
    for cand in _typed_candidates(transcript, boilerplate):
        if _answer_key(cand) not in seen:
            seen.add(_answer_key(cand))
            out.append(cand)
    return out


def extract_probes(transcript: Transcript, max_probes: int = 16, boilerplate: Boilerplate | None = None) -> list[Probe]:
    """Deterministic probes for a transcript: each type up to its slots (``SLOTS``), filled type by
    type in order of what matters until ``max_probes``; in transcript order. Where each is needed
    next is looked up for the chosen ones only (a long run has many candidates)."""
    texts = [probe_text(m) for m in transcript.messages]
    calls = transcript.call_indices
    last_call = calls[-1] if calls else len(texts)
    by_label: dict[str, list[Candidate]] = {}
    for cand in _typed_candidates(transcript, boilerplate, texts):
        # The end checkpoint's context holds the last call's reply; nothing after it is in any context.
        if cand.message_index <= last_call:
            by_label.setdefault(cand.label, []).append(cand)
    chosen = _by_slots(by_label, max_probes)
    return [
        Probe(
            id=f"{cand.label}-{cand.message_index}-{n}",
            question=cand.question or QUESTIONS[cand.label],
            answer=cand.answer,
            kind=KINDS[cand.label],
            message_index=cand.message_index,
            needed_at=cand.needed_at
            if cand.needed_at is not None
            else _next_use(texts, cand.answer, cand.message_index),
            source="extracted",
            label=cand.label,
            span=cand.span,
        )
        for n, cand in enumerate(chosen, 1)
    ]


def _next_use(texts: list[str], answer: str, after: int) -> int | None:
    return next((j for j in range(after + 1, len(texts)) if answer in texts[j]), None)


def _by_slots(groups: dict[str, list[Candidate]], limit: int) -> list[Candidate]:
    """Round after round, one more candidate of each type that has slots left (types in ``SLOTS``
    order; within a type, the finder's order: best first), then sorted by where they are stated.
    A fact is asked once: a candidate whose gold another type already took is passed over."""
    chosen: list[Candidate] = []
    asked: set[str] = set()
    taken = dict.fromkeys(groups, 0)  # slots used per type
    nxt = dict.fromkeys(groups, 0)  # the next candidate to look at per type
    for _ in range(max(SLOTS.values())):
        for label, slots in SLOTS.items():
            candidates = groups.get(label, [])
            while nxt.get(label, 0) < len(candidates) and _answer_key(candidates[nxt[label]]) in asked:
                nxt[label] += 1
            if taken.get(label, 0) < slots and nxt.get(label, 0) < len(candidates) and len(chosen) < limit:
                chosen.append(candidates[nxt[label]])
                asked.add(_answer_key(candidates[nxt[label]]))
                taken[label] += 1
                nxt[label] += 1
    return sorted(chosen, key=lambda c: (c.message_index, c.label, c.answer))


def labels_of(probes: Iterable[Probe]) -> set[str]:
    return {p.label or "" for p in probes}
