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

from ctxbench.probes.actions import Action, call_arguments, probe_text, same_file
from ctxbench.probes.facts import Fact, clip
from ctxbench.probes.runs import RunReader
from ctxbench.probes.shell import is_scratch
from ctxbench.probes.statements import StatementReader
from ctxbench.transcripts.model import Message

DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
COMMENT = re.compile(r"^(?:#|//|/\*|\*|--|;|\"\"\"|\'\'\')")
CODE_MARK = re.compile(r"[()=\[\]{};]|\w\.\w|^(?:def|class|return|if|for|while|import|from)\b")
HUNK = re.compile(r"^@@ [^@]* @@ ?(.*)$")
# A line that only brings a name in (Python, JS/TS, Java, Go, Rust, C): the least of what a change does.
IMPORT_LINE = re.compile(
    r"^\s*(?:(?:from\s+\S+\s+)?import\s|(?:const|let|var)\s+[\w{}\s,]+=\s*require\(|use\s+[\w:]+|#\s*include\s)"
)
# Lines that carry nothing on their own: brackets, keywords, comment markers.
HOLLOW = re.compile(
    r"^[\s{}()\[\];,:.'\"`#/*\\-]*(?:(?:else|end|try|finally|return|pass|break|continue|fi|done)[\s{}()\[\];,:.'\"`]*)?$"
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


# A string literal's text is data (a message, a value copied from what the agent read), not the
# logic of a change: it counts a quarter of its length when lines are weighed.
LITERAL = re.compile(r"""[rbfuRBFU]{0,2}(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')""")
# The header of a definition: it names the entity; what a new one does is in its body.
HEADER = re.compile(r"^(?:(?:async|pub|export|static|public|private|protected)\s+)*(?:def|class|fn|func|function)\s+\w")
DOCSTRING = re.compile(r'"""|\'\'\'')


def _weight(line: str) -> float:
    code = LITERAL.sub('""', line)
    return len(code) + (len(line) - len(code)) / 4


def _prose_lines(lines: list[str]) -> set[int]:
    """Indices of lines inside a docstring (a triple-quoted block opened on an earlier line)."""
    inside, out = False, set()
    for n, line in enumerate(lines):
        marks = len(DOCSTRING.findall(line))
        if inside:
            out.add(n)
        if marks % 2:
            inside = not inside
    return out


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def _key_line(added: list[str], removed: list[str], seen: str = "") -> tuple[str, str, str] | None:
    """The line that carries a change, with the removed line it replaced and the new definition it
    sits in: the added line that is not hollow and was not there before (not among the removed
    lines, not in text the agent saw earlier), code before comments and docstring prose, a new
    definition's body before its header, then the weightier (string literals count a quarter).
    The removed line is its partner only when each is the other's closest match (a line the change
    kept, moved or re-indented is no partner): else the change added the line."""
    old = {ln.strip() for ln in removed}
    prose = _prose_lines(added)
    best, best_rank, best_at = "", (False, False, False, 0.0), -1
    for n, line in enumerate(added):
        s = line.strip()
        if len(s) < 6 or s in old or HOLLOW.match(s) or (seen and s in seen):
            continue
        new_header = bool(HEADER.match(s)) and not any(_similarity(r, s) >= 0.5 for r in old)
        comment = bool(COMMENT.match(s)) or n in prose
        rank = (not comment, not new_header, bool(CODE_MARK.search(s)), min(_weight(s), 120.0))
        if rank > best_rank:
            best, best_rank, best_at = s, rank, n
    if not best:
        return None
    kept = {ln.strip() for ln in added}
    candidates = [r for r in old if r and r not in kept]
    partner = max(candidates, key=lambda r: (_similarity(r, best), r), default="")
    if partner and _similarity(partner, best) < 0.5:
        partner = ""  # not the line it replaced: the change added a line
    if partner:
        rivals = [ln.strip() for ln in added if ln.strip() and ln.strip() not in old]
        if max(_similarity(partner, r) for r in rivals) > _similarity(partner, best):
            partner = ""  # the removed line became another added line, not this one
    header = ""
    if not HEADER.match(best):  # inside a new definition: the nearest header above it names it
        header = next(
            (h.strip() for h in reversed(added[:best_at]) if HEADER.match(h.strip()) and h.strip() not in old), ""
        )
    return clip(best, 200), clip(partner, 120), clip(header, 80)


def _tracked(text: str) -> set[str]:
    """The files a unified diff shows as modified, not added: they were in the repository before the
    run, so they are the project's own however they are named (``django/views/debug.py``)."""
    out = set()
    for block in re.split(r"(?=^diff --git )", text, flags=re.MULTILINE):
        head = DIFF_FILE.match(block)
        if head and "\n--- a/" in block and not re.search(r"^new file mode", block, re.MULTILINE):
            out.add(head.group(2))
    return out


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
        self.diff = _last_diff(messages)
        self.tracked = _tracked(self.diff[1]) if self.diff is not None else set()
        self.source_edits = [a for a in self.edits if not self._scratch(a.path or "") and _base(a.path) not in removed]
        if self.diff is not None:  # what the diff holds is the fix; other edits fixed the environment
            in_diff = [p for p, _ in _diff_files(self.diff[1])]
            fixes = [a for a in self.source_edits if any(same_file(a.path or "", p) for p in in_diff)]
            self.source_edits = fixes or self.source_edits
        self.first_fix = min((a.message_index for a in self.source_edits), default=None)
        changed = [p for p, _ in _diff_files(self.diff[1])] if self.diff is not None else []
        issue = next((m.content for m in messages if m.role == "user" and task and task in m.content), task)
        replies = {i: m.content for i, m in enumerate(messages) if m.role == "assistant" and m.content}
        self.runs = RunReader(
            actions, issue, self.source_edits, [p for p in changed if not self._scratch(p)], replies=replies
        )
        # the fix as the runs' reader finds it: also written by a script of the agent's (python fix.py)
        self._test_results: list[Fact] | None = None
        self.said = StatementReader(
            messages,
            task,
            self.runs.fix_at,
            self.runs.last_fix,
            self._fix_text(),
            patched=self.diff is not None,
            edited="\n".join(t for a in self.source_edits for t in (a.path or "", a.old_text, a.new_text)),
            fix_edits=tuple(a.message_index for a in self.source_edits),
            rejected=self._rejected_fix_edits(),
        )

    def _rejected_fix_edits(self) -> tuple[int, ...]:
        """The messages of edits of a file the fix keeps that the editor refused (a syntax check failed)."""
        kept = [a.path or "" for a in self.source_edits]
        return tuple(
            a.message_index
            for a in self.actions
            if a.op == "edit" and not a.ok and a.path and any(same_file(a.path, p) for p in kept)
        )

    def _scratch(self, path: str) -> bool:
        """A throwaway file by its name, unless the submitted diff shows it was in the repository."""
        return is_scratch(path) and not any(same_file(path, t) for t in self.tracked)

    def _fix_text(self) -> str:
        """The code the final fix touches: the submitted diff's changed lines and hunk headers (source
        files), else the source edits' old and new text, and the changed files' paths. A stated cause
        that names it is about the code the fix changes."""
        parts: list[str] = []
        if self.diff is not None:
            for path, hunks in _diff_files(self.diff[1]):
                if not self._scratch(path):
                    parts.append(path)
                    parts += [line for context, removed, added in hunks for line in (context, *removed, *added)]
        if not parts:
            for a in self.source_edits:
                parts += [a.path or "", a.old_text, a.new_text]
        return "\n".join(parts)

    # -- what changed -------------------------------------------------------------------------
    def files_changed(self) -> Iterator[Fact]:
        files: list[tuple[str, int]] = []
        if self.diff is not None:
            at, text = self.diff
            files = [(path, self._edited_at(path, at)) for path, _ in _diff_files(text) if not self._scratch(path)]
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
        more: list[Fact] = []  # a file's further hunks come after every file's first one
        imports: list[Fact] = []  # a hunk that only adds an import the change uses: asked when nothing else is
        if self.diff is not None:
            at, text = self.diff
            for path, hunks in _diff_files(text):
                if self._scratch(path):
                    continue
                first = True
                for context, removed, added in hunks:
                    key = _key_line(added, removed)
                    if key and not key[1] and IMPORT_LINE.match(key[0]):  # an import added, not one changed
                        imports.append(self._change(path, key, self._edited_at(path, at), context))
                    elif key:
                        (found if first else more).append(self._change(path, key, self._edited_at(path, at), context))
                        first = False
            if not found:  # an import is the change's only code line: ask it
                found, imports = imports, []
        if not found:
            by_file: dict[str, list[Action]] = {}
            for a in self.source_edits:
                by_file.setdefault(next((k for k in by_file if same_file(k, a.path or "")), a.path or ""), []).append(a)
            # A rejected edit's reply previews the proposed text: that is not the file as it was.
            rejected = {a.result for a in self.actions if a.op == "edit" and not a.ok and a.result}
            seen: dict[int, str] = {}  # what the agent had seen before a message (asked only for new files)
            for path, edits in by_file.items():
                # the last edit that carries a line: a later re-indent or removal of a stray line carries none
                for a in reversed(edits):
                    if not a.old_text and a.message_index not in seen:
                        seen[a.message_index] = "\n".join(
                            m.content
                            for m in self.messages[: a.message_index]
                            if m.role != "assistant" and m.content not in rejected
                        )
                    before = "" if a.old_text else seen[a.message_index]
                    key = _key_line(a.new_text.splitlines(), a.old_text.splitlines(), before)
                    if key:
                        found.append(self._change(path, key, a.message_index, ""))
                        break
        yield from found
        yield from more

    def _edited_at(self, path: str, default: int) -> int:
        """Where the agent last edited a file the diff names: the fact is stated there, not in the
        diff shown at submission (often after the last call, where no context ever holds it)."""
        return max((a.message_index for a in self.source_edits if same_file(a.path or "", path)), default=default)

    @staticmethod
    def _change(path: str, key: tuple[str, str, str], at: int, context: str) -> Fact:
        new, old, header = key
        where = f"{path}" + (f" ({clip(context, 60)})" if context else "")
        if old:
            return Fact("change", new, at, f"In {where}, what did the agent change `{old}` to?")
        if header:  # a new definition: the question names it, the gold is what it does
            return Fact("change", new, at, f"In {where}, what key line did the agent's new `{header}` get?")
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
        asks about (where one does, the output says it: the reading would ask it twice), unless
        that result is only a value the check printed (the reading says what it shows)."""
        asked = [f.question for f in self.test_results() if f.question not in self.runs.values_only]
        for fact in self.said.checks_read():
            command = re.search(r"`(.+)` showed", fact.question)
            if command is None or not any(f"`{command.group(1)}`" in q for q in asked):
                yield fact


def api_facts(messages: list[Message], actions: list[Action]) -> Iterator[Fact]:
    """Tool-API agents (customer service, web APIs): what each state-changing call did, the errors
    the API returned, and what the agent told the user at the end."""
    results = {(a.message_index, a.tool): a.result for a in actions}
    seen: dict[str, dict[str, Any]] = {}  # a record's ID -> the last view of it a tool returned
    for i, m in enumerate(messages):
        if m.role == "tool":
            seen.update(_record_views(m.content))
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
            before = seen.get(value)
            paid = _new_payments(result, len(_payments(before)) if before is not None else None)
            # The question names the call by its arguments: an ID the call created is the answer, not context.
            named = f'"{value}"' in call.arguments
            changed, was = _changed_fields(before, result) if named and before is not None else ("", "")
            if paid and paid in result and named:
                question = f"What payment did the agent's call `{call.name} {value}` record (method and amount)?"
                yield Fact("change", paid, i + 1, question)
            elif changed:  # asked like a code change: the old value in the question when there is one
                question = f"What did the agent's call `{call.name} {value}` change in the record it returned?"
                if was:
                    question = f"What did the agent's call `{call.name} {value}` change `{clip(was, 120)}` to?"
                yield Fact("change", changed, i + 1, question)
            else:
                yield Fact(
                    "change",
                    value,
                    i + 1,
                    f"Which {field.replace('_', ' ')} did the agent's `{call.name}` call act on?",
                )


LISTED_ID = re.compile(r"[A-Za-z0-9_-]{4,40}")


def listed_ids(messages: list[Message]) -> Iterator[Fact]:
    """Tool-API agents: the IDs a record lists (a user's reservations), as the tool printed them,
    asked with the call that returned it; once per list, when the agent used one of them later.
    The agent picks from that list what it acts on next."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    asked: set[str] = set()
    for i, m in enumerate(messages):
        call = calls.get(m.tool_call_id or "") if m.role == "tool" else None
        record = _record(m.content) if call is not None else None
        if call is None or record is None:
            continue
        later = " ".join(probe_text(n) for n in messages[i + 1 :] if n.role == "assistant")
        for key, value in record.items():
            if not (isinstance(value, list) and len(value) > 1 and all(isinstance(v, str) for v in value)):
                continue
            if not all(LISTED_ID.fullmatch(v) for v in value) or not any(ch.isdigit() for v in value for ch in v):
                continue  # IDs, not words (a list of seat classes)
            if not any(v in later for v in value):
                continue
            listed = ", ".join(json.dumps(v) for v in value)
            if listed in m.content and listed not in asked:
                asked.add(listed)
                argument = next((v for v in call_arguments(call.arguments).values() if isinstance(v, str)), "")
                named = f"{call.name} {argument}".strip()
                yield Fact("identifier", listed, i, f"Which {key.replace('_', ' ')} did `{named}` list?")


def _record(result: str | dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(result, dict):
        return result
    try:
        record = json.loads(result)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a parser goes
        return None
    return record if isinstance(record, dict) else None


def _payments(result: str | dict[str, Any]) -> list[dict[str, Any]]:
    """A record's payment list: its first top-level list of objects that each carry an ``amount``
    (tau-bench's ``payment_history``)."""
    record = _record(result)
    for entries in (record or {}).values():
        if isinstance(entries, list) and entries and all(isinstance(e, dict) and "amount" in e for e in entries):
            return entries
    return []


def _record_views(result: str) -> dict[str, dict[str, Any]]:
    record = _record(result)
    if record is None:
        return {}
    ids = [v for k, v in record.items() if k.endswith("id") and isinstance(v, str)]
    return {ids[0]: record} if ids else {}  # the record's own ID comes first, its owner's after


def _new_payments(result: str, before: int | None) -> str:
    """The payment a state-changing call recorded, as the tool printed it: the entries its result
    lists beyond the last earlier view of the same record; with no earlier view, the last entry when
    there are several (a lone entry is the booking's own payment)."""
    entries = _payments(result)
    if not entries:
        return ""
    if before is None:
        if len(entries) == 1:
            return ""
        before = len(entries) - 1
    new = entries[before:]
    return ", ".join(json.dumps(e) for e in new) if new else ""


def _changed_fields(before: dict[str, Any], result: str) -> tuple[str, str]:
    """What a call changed in a record, as the tool printed it, and what it was: the top-level
    values that differ from the last earlier view (a list by its new entries), joined when the
    result prints them in a row, else the first; with the earlier value when one value changed
    (a count, one list entry for another); ("", "") when nothing changed or it is no such record."""
    after = _record(result)
    if after is None:
        return "", ""
    parts: list[tuple[str, str]] = []
    for key, value in after.items():
        if key not in before or before[key] == value:
            continue
        if isinstance(value, list):
            old = before[key] if isinstance(before[key], list) else []
            added = [json.dumps(e) for e in value if e not in old]
            gone = [json.dumps(e) for e in old if e not in value]
            parts += [(a, gone[0] if len(added) == len(gone) == 1 else "") for a in added]
        elif not isinstance(value, dict):
            parts.append((f"{json.dumps(key)}: {json.dumps(value)}", f"{json.dumps(key)}: {json.dumps(before[key])}"))
    parts = [(new, old) for new, old in parts if new in result]
    joined = ", ".join(new for new, _ in parts)
    if len(parts) == 1:
        return parts[0]
    return (joined, "") if joined in result else (parts[0][0], "") if parts else ("", "")


def _removed_paths(command: str) -> list[str]:
    out = []
    for part in re.split(r"&&|;|\|\|", command):
        words = part.split()
        if words and words[0] == "rm":
            out += [_base(w) for w in words[1:] if not w.startswith("-")]
    return out


def _base(path: str | None) -> str:
    return (path or "").rstrip("/").rsplit("/", 1)[-1]
