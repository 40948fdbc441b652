"""Facts about the work an agent did, read from its actions and what they printed: the files it
changed that survive and the change itself; the reproduction, the errors it saw and the test
results are read from the runs' outputs (``ctxbench.probes.runs``), the root cause, decisions and
what it reported at the end from its statements (``ctxbench.probes.statements``). These are what an
engineer taking over the run needs (tests/data/probe_gold/README.md has the rubric)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from typing import Any

from ctxbench.probes.actions import Action, same_file
from ctxbench.probes.facts import Fact, clip
from ctxbench.probes.runs import RunReader
from ctxbench.probes.shell import is_scratch
from ctxbench.probes.statements import StatementReader
from ctxbench.transcripts.model import Message

DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
COMMENT = re.compile(r"^(?:#|//|/\*|\*|--|;|\"\"\"|\'\'\')")
CODE_MARK = re.compile(r"[()=\[\]{};]|\w\.\w|^(?:def|class|return|if|for|while|import|from)\b")
HUNK = re.compile(r"^@@ [^@]* @@ ?(.*)$")
# Lines that carry nothing on their own: brackets, keywords, comment markers.
HOLLOW = re.compile(
    r"^[\s{}()\[\];,:.'\"`#/*\\-]*(?:else|end|try|finally|return|pass|break|continue|fi|done)?[\s{}()\[\];,:.'\"`]*$"
)
STATE_CHANGE = re.compile(
    r"^(?:book|cancel|update|modify|create|delete|send|transfer|add|remove|set|exchange|return|upgrade|change|"
    r"apply|issue|refund|make|place|reset|assign|close|open|submit_\w)_?\w*$"
)
ID_VALUE = re.compile(r'"(\w*_id|id)"\s*:\s*"([A-Za-z0-9_-]{4,40})"')


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
        # the fix as the runs' reader finds it: also written by a script of the agent's (python fix.py)
        self._test_results: list[Fact] | None = None
        self.said = StatementReader(messages, task, self.runs.fix_at, self.runs.last_fix)

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
        if self._test_results is None:  # read once: checks_read compares against them
            self._test_results = list(self.runs.test_results())
        return iter(self._test_results)

    def errors_seen(self) -> Iterator[Fact]:
        return self.runs.errors_seen()

    # -- what the agent said ------------------------------------------------------------------
    def root_causes(self) -> Iterator[Fact]:
        return self.said.root_causes()

    def decisions(self) -> Iterator[Fact]:
        return self.said.decisions()

    def checks_read(self) -> Iterator[Fact]:
        """The agent's reading of a check after the fix, for a command none of the runs' results
        asks about (where one does, the output says it: the reading would ask it twice)."""
        asked = [f.question for f in self.test_results()]
        for fact in self.said.checks_read():
            command = re.search(r"`(.+)` showed", fact.question)
            if command is None or not any(f"`{command.group(1)}`" in q for q in asked):
                yield fact


def api_facts(messages: list[Message], actions: list[Action]) -> Iterator[Fact]:
    """Tool-API agents (customer service, web APIs): what each state-changing call did, the errors
    the API returned, and what the agent told the user at the end."""
    results = {(a.message_index, a.tool): a.result for a in actions}
    seen: dict[str, int] = {}  # a record's ID -> how many payments the last view of it listed
    for i, m in enumerate(messages):
        if m.role == "tool":
            seen.update(_payment_counts(m.content))
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
            if not ids:
                continue
            field, value = ids[0]
            paid = _new_payments(result, seen.get(value))
            # The question names the call by its arguments: an ID the call created is the answer, not context.
            if paid and paid in result and f'"{value}"' in call.arguments:
                question = f"What payment did the agent's call `{call.name} {value}` record (method and amount)?"
                yield Fact("change", paid, i + 1, question)
            else:
                yield Fact(
                    "change",
                    value,
                    i + 1,
                    f"Which {field.replace('_', ' ')} did the agent's `{call.name}` call act on?",
                )


def _payments(result: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """A record the tool returned (JSON object) and its payment list: the first top-level list of
    objects that each carry an ``amount`` (tau-bench's ``payment_history``)."""
    try:
        record = json.loads(result)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    for entries in record.values():
        if isinstance(entries, list) and entries and all(isinstance(e, dict) and "amount" in e for e in entries):
            return record, entries
    return None


def _payment_counts(result: str) -> dict[str, int]:
    found = _payments(result)
    if found is None:
        return {}
    record, entries = found
    ids = [v for k, v in record.items() if k.endswith("id") and isinstance(v, str)]
    return {ids[0]: len(entries)} if ids else {}  # the record's own ID comes first, its owner's after


def _new_payments(result: str, before: int | None) -> str:
    """The payment a state-changing call recorded, as the tool printed it: the entries its result
    lists beyond the last earlier view of the same record; with no earlier view, the last entry when
    there are several (a lone entry is the booking's own payment)."""
    found = _payments(result)
    if found is None:
        return ""
    entries = found[1]
    if before is None:
        if len(entries) == 1:
            return ""
        before = len(entries) - 1
    new = entries[before:]
    return ", ".join(json.dumps(e) for e in new) if new else ""


def _removed_paths(command: str) -> list[str]:
    out = []
    for part in re.split(r"&&|;|\|\|", command):
        words = part.split()
        if words and words[0] == "rm":
            out += [_base(w) for w in words[1:] if not w.startswith("-")]
    return out


def _base(path: str | None) -> str:
    return (path or "").rstrip("/").rsplit("/", 1)[-1]
