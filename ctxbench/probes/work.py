"""Facts about the work an agent did, read from its actions and what they printed: the files it
changed that survive, the change itself, the reproduction, the errors it saw, the test results
(read from the runs' outputs in ``ctxbench.probes.runs``), the root cause and decisions it stated,
and what it reported at the end. These are what an engineer taking over the run needs
(tests/data/probe_gold/README.md has the rubric)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator

from ctxbench.probes.actions import Action, same_file
from ctxbench.probes.facts import Fact, clip
from ctxbench.probes.runs import VALUE_WORDS, VERDICT, RunReader
from ctxbench.probes.shell import is_scratch
from ctxbench.transcripts.model import Message

DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
COMMENT = re.compile(r"^(?:#|//|/\*|\*|--|;|\"\"\"|\'\'\')")
CODE_MARK = re.compile(r"[()=\[\]{};]|\w\.\w|^(?:def|class|return|if|for|while|import|from)\b")
HUNK = re.compile(r"^@@ [^@]* @@ ?(.*)$")
# Lines that carry nothing on their own: brackets, keywords, comment markers.
HOLLOW = re.compile(
    r"^[\s{}()\[\];,:.'\"`#/*\\-]*(?:else|end|try|finally|return|pass|break|continue|fi|done)?[\s{}()\[\];,:.'\"`]*$"
)
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
STATE_CHANGE = re.compile(
    r"^(?:book|cancel|update|modify|create|delete|send|transfer|add|remove|set|exchange|return|upgrade|change|"
    r"apply|issue|refund|make|place|reset|assign|close|open|submit_\w)_?\w*$"
)
ID_VALUE = re.compile(r'"(\w*_id|id)"\s*:\s*"([A-Za-z0-9_-]{4,40})"')


def sentences_of(text: str) -> Iterator[str]:
    """The prose sentences of a message (code blocks apart), list markers and THOUGHT: stripped."""
    prose = re.sub(r"```.*?```", "\n", text, flags=re.DOTALL)
    for part in SENTENCE_BREAK.split(prose):
        sentence = part.strip().lstrip("#*->0123456789.) ").removeprefix("THOUGHT:").strip()
        if sentence:
            yield sentence


def _diff_files(text: str) -> list[tuple[str, list[tuple[str, list[str], list[str]]]]]:
    """Files of a unified diff, each with its hunks: (header context, removed lines, added lines)."""
    out: list[tuple[str, list[tuple[str, list[str], list[str]]]]] = []
    for block in re.split(r"(?=^diff --git )", text, flags=re.MULTILINE):
        head = DIFF_FILE.match(block)
        if not head:
            continue
        hunks: list[tuple[str, list[str], list[str]]] = []
        for line in block.splitlines():
            hunk = HUNK.match(line)
            if hunk:
                hunks.append((hunk.group(1).strip(), [], []))
            elif hunks and line.startswith("-") and not line.startswith("---"):
                hunks[-1][1].append(line[1:])
            elif hunks and line.startswith("+") and not line.startswith("+++"):
                hunks[-1][2].append(line[1:])
        out.append((head.group(2), hunks))
    return out


def _key_line(added: list[str], removed: list[str], seen: str = "") -> tuple[str, str] | None:
    """The line that carries a change: the longest added line that is not hollow and was not there
    before (not among the removed lines, not in text the agent saw earlier), with the removed line
    it most resembles."""
    old = {ln.strip() for ln in removed}
    best, best_rank = "", (False, False, 0)
    for line in added:
        s = line.strip()
        if len(s) < 6 or s in old or HOLLOW.match(s) or (seen and s in seen):
            continue
        # code before comments and docstring prose, then the longer
        rank = (not COMMENT.match(s), bool(CODE_MARK.search(s)), min(len(s), 120))
        if rank > best_rank:
            best, best_rank = s, rank
    if not best:
        return None
    partner = max(
        (ln.strip() for ln in removed if ln.strip()),
        key=lambda r: difflib.SequenceMatcher(None, r, best).ratio(),
        default="",
    )
    if partner and difflib.SequenceMatcher(None, partner, best).ratio() < 0.5:
        partner = ""  # not the line it replaced: the change added a line
    return clip(best, 200), clip(partner, 120)


def _last_diff(messages: list[Message]) -> tuple[int, str] | None:
    """The last diff the agent showed before its last call (one shown at submission, after it,
    is in no context of the replay), else the last one."""
    shown = [i for i, m in enumerate(messages) if m.role != "system" and "diff --git a/" in m.content]
    last_call = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=len(messages))
    before = [i for i in shown if i < last_call]
    at = before[-1] if before else shown[-1] if shown else None
    return (at, messages[at].content) if at is not None else None


class WorkReader:
    """Reads one transcript's coding work once; each method yields facts of one type, best first."""

    def __init__(self, messages: list[Message], actions: list[Action], task: str) -> None:
        self.messages = messages
        self.actions = actions
        self.task = task
        self.task_words = {w for w in re.findall(r"\w+", task.lower()) if len(w) > 3}
        self.shell = [a for a in actions if a.op == "shell"]
        removed = {w for a in self.shell for w in _removed_paths(a.command)}
        self.edits = [a for a in actions if a.op == "edit" and a.ok and a.path]
        self.source_edits = [a for a in self.edits if not is_scratch(a.path or "") and _base(a.path) not in removed]
        self.diff = _last_diff(messages)
        if self.diff is not None:  # what the diff holds is the fix; other edits fixed the environment
            in_diff = [p for p, _ in _diff_files(self.diff[1])]
            fixes = [a for a in self.source_edits if any(same_file(a.path or "", p) for p in in_diff)]
            self.source_edits = fixes or self.source_edits
        self.first_fix = min((a.message_index for a in self.source_edits), default=None)
        changed = [p for p, _ in _diff_files(self.diff[1])] if self.diff is not None else []
        issue = next((m.content for m in messages if m.role == "user" and task and task in m.content), task)
        self.runs = RunReader(actions, issue, self.source_edits, [p for p in changed if not is_scratch(p)])

    # -- what changed -------------------------------------------------------------------------
    def files_changed(self) -> Iterator[Fact]:
        files: list[tuple[str, int]] = []
        if self.diff is not None:
            at, text = self.diff
            files = [(path, self._edited_at(path, at)) for path, _ in _diff_files(text) if not is_scratch(path)]
        if not files:
            last: dict[str, int] = {}
            for a in self.source_edits:
                key = next((k for k in last if same_file(k, a.path or "")), a.path or "")
                last[key] = a.message_index
            files = list(last.items())
        for path, at in files:
            yield Fact(
                "file_changed",
                path,
                at,
                f"Which source file did the agent change for the task ({clip(self.task, 80)})?",
            )

    def changes(self) -> Iterator[Fact]:
        found: list[Fact] = []
        if self.diff is not None:
            at, text = self.diff
            for path, hunks in _diff_files(text):
                if is_scratch(path):
                    continue
                for context, removed, added in hunks:
                    key = _key_line(added, removed)
                    if key:
                        found.append(self._change(path, key, self._edited_at(path, at), context))
                        break
        if not found:
            by_file: dict[str, Action] = {}
            for a in self.source_edits:
                by_file[next((k for k in by_file if same_file(k, a.path or "")), a.path or "")] = a
            for path, a in by_file.items():
                seen = "\n".join(m.content for m in self.messages[: a.message_index] if m.role != "assistant")
                key = _key_line(a.new_text.splitlines(), a.old_text.splitlines(), seen if not a.old_text else "")
                if key:
                    found.append(self._change(path, key, a.message_index, ""))
        yield from found

    def _edited_at(self, path: str, default: int) -> int:
        """Where the agent last edited a file the diff names: the fact is stated there, not in the
        diff shown at submission (often after the last call, where no context ever holds it)."""
        return max((a.message_index for a in self.source_edits if same_file(a.path or "", path)), default=default)

    @staticmethod
    def _change(path: str, key: tuple[str, str], at: int, context: str) -> Fact:
        new, old = key
        where = f"{path}" + (f" ({clip(context, 60)})" if context else "")
        if old:
            return Fact("change", new, at, f"In {where}, what did the agent change `{old}` to?")
        return Fact("change", new, at, f"What key line did the agent's change to {where} add?")

    # -- what runs showed ---------------------------------------------------------------------
    def reproduction(self) -> Iterator[Fact]:
        return self.runs.reproduction()

    def test_results(self) -> Iterator[Fact]:
        return self.runs.test_results()

    def errors_seen(self) -> Iterator[Fact]:
        return self.runs.errors_seen()

    # -- what the agent said ------------------------------------------------------------------
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
        last = max((a.message_index for a in self.source_edits), default=len(self.messages))
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
        last = max((a.message_index for a in self.source_edits), default=len(self.messages))
        facts = _distinct(f for f in self.statements("decision", DECISION, needs_code=False) if f.message_index <= last)
        facts.sort(key=lambda f: (not CHOICE.search(f.answer), -f.message_index))
        yield from facts


def api_facts(messages: list[Message], actions: list[Action]) -> Iterator[Fact]:
    """Tool-API agents (customer service, web APIs): what each state-changing call did, the errors
    the API returned, and what the agent told the user at the end."""
    results = {(a.message_index, a.tool): a.result for a in actions}
    for i, m in enumerate(messages):
        for call in m.tool_calls:
            if not STATE_CHANGE.match(call.name):
                continue
            result = results.get((i, call.name), "")
            if result.strip().startswith("Error"):
                yield Fact(
                    "error", clip(result.strip(), 160), i + 1, f"What error did the agent's `{call.name}` call get?"
                )
                continue
            ids = ID_VALUE.findall(result) or ID_VALUE.findall(call.arguments)
            if ids:
                field, value = ids[0]
                yield Fact(
                    "change",
                    value,
                    i + 1,
                    f"Which {field.replace('_', ' ')} did the agent's `{call.name}` call act on?",
                )


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


def _removed_paths(command: str) -> list[str]:
    out = []
    for part in re.split(r"&&|;|\|\|", command):
        words = part.split()
        if words and words[0] == "rm":
            out += [_base(w) for w in words[1:] if not w.startswith("-")]
    return out


def _base(path: str | None) -> str:
    return (path or "").rstrip("/").rsplit("/", 1)[-1]
