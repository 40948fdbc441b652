"""What the agent said: the root cause it stated, decisions stated with a reason, choices the
user made (tau-bench style conversations), and what it reported at the end. Read from the agent's
own messages, sentence by sentence; kept apart from the reading of its actions (``work``) and of
its runs' outputs (``runs``) so that each can change alone."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ctxbench.probes.actions import Action
from ctxbench.probes.facts import Fact, clip
from ctxbench.probes.runs import VALUE_WORDS, VERDICT
from ctxbench.transcripts.model import Message

ROOT_CAUSE = re.compile(
    r"\b(?:the (?:root )?(?:cause|problem|issue|bug) (?:is|was|lies|seems to be|appears to be|here is)|"
    r"root cause|this (?:happens|occurs|fails) because|(?:is|are) caused by|the reason (?:is|was)|"
    r"the (?:problem|issue|bug) (?:is|was) (?:in|that|with)|i (?:found|see|understand) the (?:issue|problem|bug)|"
    r"(?:issue|problem|bug) (?:occurs|happens|arises) because|that'?s (?:why|the (?:bug|problem|issue))|"
    r"this is the (?:bug|problem|issue|root cause)|here'?s the (?:bug|problem|issue)|which (?:causes|is why)|"
    r"(?:so|now) (?:the (?:issue|problem|bug)|i see)|that'?s it|found it|this (?:leads|led) to|which (?:leads|led) to|"
    r"(?:is|was) (?:never|not being|wrongly|incorrectly) \w+|evaluates to|falls? through)\b",
    re.IGNORECASE,
)
# A statement that the problem is gone, or a step after it: not a cause.
RESOLVED = re.compile(r"\b(?:is|was|has been|now) (?:resolved|fixed|solved|gone)\b|\bclean ?up\b|\bworks now\b", re.I)
# Tactical steps are no decisions: installing, retrying a tool, fixing a typo, navigating.
TACTICAL = re.compile(r"\b(?:install|pip|apt|typo|retry|view command|navigate|scroll|open the file|look at)\b", re.I)
DECISION = re.compile(
    r"\b(?:the (?:best|correct|right|simplest|cleanest|proper|minimal|safest|better) (?:fix|approach|solution|way)|"
    r"the (?:fix|solution) (?:is|should be|would be|will be) to|instead of|rather than|i(?:'ll| will) go with|"
    r"i(?:'ve| have)? decided|(?:is|gets?|getting) too (?:complex|complicated|risky|broad)|stick with|"
    r"(?:should|will|'ll) (?:not|avoid|keep)\b[^.]*\bbecause|(?:abandon|revert|undo)\w*)\b",
    re.IGNORECASE,
)
# A choice between two ways: the decisions an engineer must not re-litigate.
CHOICE = re.compile(
    r"\b(?:instead of|rather than|too (?:complex|complicated|risky)|stick with|abandon\w*|revert\w*)\b", re.I
)
# A sentence ends at . ! ? before a space and a capital (or a quote, a backtick), or at a line end:
# "the `Foo.bar()` method" stays one sentence.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])|\n+")
CODE_ENTITY = re.compile(r"`[^`\n]{2,60}`|\b\w+\(\)|\b[a-z]+_[a-z_]+\b|\b[A-Z][a-z]+[A-Z]\w+\b|\b\w+\.\w+\b")


def sentences_of(text: str) -> Iterator[str]:
    """The prose sentences of a message (code blocks apart), list markers and THOUGHT: stripped."""
    prose = re.sub(r"```.*?```", "\n", text, flags=re.DOTALL)
    for part in SENTENCE_BREAK.split(prose):
        sentence = part.strip().lstrip("#*->0123456789.) ").removeprefix("THOUGHT:").strip()
        if sentence:
            yield sentence


class StatementReader:
    """Reads one transcript's statements once; each method yields facts of one type, best first.
    ``first_fix`` and ``last_fix``: the first and last edit of a source file the fix keeps."""

    def __init__(self, messages: list[Message], task: str, first_fix: int | None, last_fix: int | None) -> None:
        self.messages = messages
        self.task = task
        self.first_fix = first_fix
        self.last_fix = last_fix

    def statements(self, label: str, pattern: re.Pattern[str], needs_code: bool = True) -> Iterator[Fact]:
        """What the agent said in its own messages, matching ``pattern``: the sentence and the one
        after it (a cause is often stated in two: "The problem is in X. When ..., Y happens."),
        verbatim; naming code the task did not already name (``needs_code``)."""
        task = self.task.lower()
        for i, m in enumerate(self.messages):
            if m.role != "assistant" or not m.content:
                continue
            for sentence in sentences_of(m.content):
                if len(sentence) < 12 or not pattern.search(sentence) or RESOLVED.search(sentence):
                    continue
                if label == "decision" and TACTICAL.search(sentence):
                    continue
                if sentence.rstrip().endswith(":"):
                    continue  # a lead-in ("The issue is that config.py:"): its list says it, not this
                sentence = _with_neighbour(m.content, sentence)
                entities = [e.strip("`") for e in CODE_ENTITY.findall(sentence)]
                if needs_code and not any(e.lower() not in task for e in entities):
                    continue  # names nothing the task did not already say
                question = {
                    "root_cause": "What did the agent find to be the cause of the problem?",
                    "decision": "What did the agent decide, and why?",
                }[label]
                yield Fact(label, clip(sentence, 300), i, question)

    def root_causes(self) -> Iterator[Fact]:
        # a cause is found before the fix (or in its message); after it the agent explains its checks
        last = self.last_fix if self.last_fix is not None else len(self.messages)
        facts = _distinct(f for f in self.statements("root_cause", ROOT_CAUSE) if f.message_index <= last)
        # the statement made closest before the fix is the one the fix rests on
        fix = self.first_fix
        if fix is not None:
            facts.sort(
                key=lambda f: (f.message_index > fix, -f.message_index if f.message_index <= fix else f.message_index)
            )
        yield from facts

    def decisions(self) -> Iterator[Fact]:
        """Choices between two ways first (later ones first: they override), then the rest."""
        last = self.last_fix if self.last_fix is not None else len(self.messages)
        facts = _distinct(f for f in self.statements("decision", DECISION, needs_code=False) if f.message_index <= last)
        facts.sort(key=lambda f: (not CHOICE.search(f.answer), -f.message_index))
        yield from facts


# What a user chose or asked for after the task (tau-bench style conversations).
USER_CHOICE = re.compile(
    r"\b(?:i'?ll (?:go with|take)|i'?d (?:like|prefer)|i (?:want|choose|prefer)|let'?s go with|"
    r"(?:yes|ok(?:ay)?),? (?:please )?(?:proceed|go ahead|do it|book|cancel|change|downgrade|upgrade))\b",
    re.IGNORECASE,
)


def user_choices(messages: list[Message], first_user: int | None) -> Iterator[Fact]:
    """Choices the user made after the task ("I'll go with the first option, Flight HAT136"): what
    the agent acts on next."""
    for i, m in enumerate(messages):
        if m.role != "user" or i == first_user or m.tool_call_id or "<returncode>" in m.content:
            continue
        for sentence in sentences_of(m.content):
            if 15 <= len(sentence) <= 200 and USER_CHOICE.search(sentence) and re.search(r"[A-Z0-9]{3,}|\d", sentence):
                yield Fact("decision", sentence, i, "What did the user choose or ask for at this point?")


def final_report(messages: list[Message], actions: list[Action]) -> Iterator[Fact]:
    """What the agent reported when it finished: its finish/submit message, else its last words to the user."""
    answers = [a for a in actions if a.op == "answer" and a.value.strip()]
    if answers:
        text, at = answers[-1].value, answers[-1].message_index
    else:
        last = next(
            (
                i
                for i in range(len(messages) - 1, -1, -1)
                if messages[i].role == "assistant" and messages[i].content.strip() and not messages[i].tool_calls
            ),
            None,
        )
        if last is None or any(m.role == "user" for m in messages[last + 1 : last + 2]) and last < len(messages) - 2:
            return
        text, at = messages[last].content, last
    for sentence in sentences_of(text):
        if len(sentence) >= 25 and (
            VALUE_WORDS.search(sentence) or CODE_ENTITY.search(sentence) or VERDICT.search(sentence)
        ):
            yield Fact("outcome", clip(sentence, 200), at, "What did the agent report when it finished?")
            return


def _distinct(facts: Iterable[Fact]) -> list[Fact]:
    """Facts that say something new: one restating a kept one (most of its words, within six
    messages) is left out. Facts arrive in message order, so only the last few kept are compared."""
    kept: list[tuple[Fact, set[str]]] = []
    for fact in facts:
        words = set(re.findall(r"\w{3,}", fact.answer.lower()))
        if _restates(fact, words, kept):
            continue
        kept.append((fact, words))
    return [f for f, _ in kept]


def _restates(fact: Fact, words: set[str], kept: list[tuple[Fact, set[str]]]) -> bool:
    for earlier, seen in reversed(kept):
        if fact.message_index - earlier.message_index > 6:
            return False
        if len(words & seen) >= 0.5 * max(1, len(words)):
            return True
    return False


def _with_neighbour(content: str, sentence: str) -> str:
    """The sentence with the next one of its paragraph (or, for a short one such as "This is the
    bug!", the one before), as the message spells them."""
    at = content.find(sentence)
    if at < 0:
        return sentence
    end = at + len(sentence)
    tail = content[end:]
    nxt = SENTENCE_BREAK.search(tail[1:] if tail[:1] in ".!?" else tail)
    para_end = tail.find("\n\n")
    if len(sentence) < 40:  # reach back instead
        head = content[:at]
        breaks = list(SENTENCE_BREAK.finditer(head.rstrip()))
        start = breaks[-1].end() if breaks else 0
        if "\n\n" not in head[start:] and "```" not in head[start:]:
            return " ".join(content[start : end + (1 if tail[:1] in ".!?" else 0)].split())
        return sentence
    if nxt is None:
        return sentence
    stop = nxt.start() + (1 if tail[:1] in ".!?" else 0)
    if (para_end >= 0 and para_end < stop) or "```" in tail[:stop]:
        return sentence
    return " ".join(content[at : end + stop].split())
