"""How many selected probes match the trivial patterns of issue 23, check by check, mechanically.

    .venv/bin/python scripts/trivial_patterns.py                      # all of ../shared/transcripts
    .venv/bin/python scripts/trivial_patterns.py /work/nongold        # any files or folders of runs
    .venv/bin/python scripts/trivial_patterns.py --part nongold       # only runs in no gold file
    .venv/bin/python scripts/trivial_patterns.py --part dev           # only the gold set's dev part
    .venv/bin/python scripts/trivial_patterns.py --list read_only_command   # the probes one check matched

Each transcript is imported (``ctxbench.transcripts.importer``) and extracted as a run does, boilerplate
found across every transcript given; each selected probe is tested against the checks below (the issue's
audit patterns and the rubric's trivial kinds: tests/data/probe_gold/README.md). A check is a pattern, not
a verdict: the share it gives is an upper bound of what a labeller would call trivial on those patterns,
and it never sees a trivial probe of another kind. Printed: per framework and per type, the probes, how
many match any check, that share with a 95% Wilson interval, and each check's count.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxbench.errors import InputError
from ctxbench.probes.actions import Action, agent_actions, same_file
from ctxbench.probes.boilerplate import find_boilerplate
from ctxbench.probes.extract import extract_probes
from ctxbench.probes.runs import INSTALL_FAILED
from ctxbench.probes.shell import HEREDOC, INSTALLS, heredoc_bodies, is_read_only, is_scratch
from ctxbench.report.intervals import wilson
from ctxbench.transcripts.importer import import_file
from ctxbench.transcripts.model import Probe, Transcript

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "transcripts"
GOLD = ROOT / "tests" / "data" / "probe_gold"
SUFFIXES = (".traj", ".jsonl", ".json")


@dataclass(frozen=True)
class Run:
    """What the checks read besides the probe: the task's message and the agent's actions."""

    task: str
    actions: list[Action]
    calls: list[int]  # message indices of the assistant's calls
    diffed: set[str]  # the files of every diff a tool printed (`diff --git a/x b/x`)


DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def run_of(transcript: Transcript) -> Run:
    messages = transcript.messages
    task = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    diffed = {path for m in messages if m.role != "assistant" for path in DIFF_FILE.findall(m.content)}
    return Run(task, agent_actions(transcript), transcript.call_indices, diffed)


BACKTICKED = re.compile(r"`([^`]+)`")
# Types whose question names the command whose output the gold is ("What did `ls -la` print?"); an
# outcome's names the submission command (`echo SUBMIT && cat patch.txt`), which is no exploration.
OUTPUT_TYPES = {"test_result", "reproduction", "error", "outcome"}
RUN_TYPES = {"test_result", "reproduction", "error"}
PATH = re.compile(r"[\w./-]+\.\w+|/[\w./-]+")
HEREDOC_ONLY = re.compile(HEREDOC.pattern + r"\s*")
MISSING = re.compile(r"No module named '?([\w.]+)'?|(?:^|[\s:])([\w.-]+): command not found")
SYNTAX = re.compile(r"\b(?:SyntaxError|IndentationError|TabError)\b")
INLINE_CODE = re.compile(r"\bpython[\d.]*\s+(?:-c\b|-\s*<<)|<string>|<stdin>")
EXPLORATION = re.compile(
    r"(?:^|[/_\s])(?:debug|inspect|explore|investigat|analy[sz]|examine|understand|trace|look|find|show|print)\w*\.py\b"
)
FAILED_VIEW = re.compile(r"does not exist|is a directory|Invalid `path`|not a valid path|No such file or directory")
EDIT_REFUSED = re.compile(r"did not appear verbatim|No replacement was performed|\bE999\b")
# Files that are files without an extension.
BARE_FILES = re.compile(r"(?:^|/)(?:Makefile|Dockerfile|Rakefile|Gemfile|Procfile|Jenkinsfile|LICENSE|README)$")


def _command(probe: Probe) -> str:
    """The command an output probe's question names (its first backticked span), else ""."""
    if probe.label not in RUN_TYPES:
        return ""
    found = BACKTICKED.search(probe.question)
    return found.group(1) if found else ""


def read_only_command(probe: Probe, run: Run) -> bool:
    """A read-only exploration command (``ls``, ``grep``, ``cat``, ``sed -n``) as the gold (a stopped
    run's last command), or as the command whose output a run's probe asks: its output is exploration."""
    answer = probe.answer.strip()
    if probe.label == "outcome" and " " in answer and "\n" not in answer and is_read_only(answer):
        return True
    command = _command(probe).replace(" ... ", "\n")
    return bool(command) and is_read_only(command)


def heredoc_first_line(probe: Probe, run: Run) -> bool:
    """A command's first line that only opens a heredoc (``python - << 'PY'``): it carries nothing."""
    return any(
        HEREDOC_ONLY.search(s) and not HEREDOC_ONLY.split(s)[-1].strip() for s in (probe.answer, _command(probe))
    )


def task_tracker(probe: Probe, run: Run) -> bool:
    """OpenHands' task_tracker (its plan's bookkeeping): a subcommand or its listing."""
    return "task_tracker" in probe.question or "task_tracker" in probe.answer


def scratch_file(probe: Probe, run: Run) -> bool:
    """A throwaway script (``reproduce.py``, ``/tmp/x``, ``examine_method.py``) as a changed file or the
    file a change is asked in; not a file of the diff the agent showed (``django/views/debug.py``)."""
    if probe.label == "file_changed":
        path = probe.answer.strip()
    elif probe.label == "change" and (named := PATH.search(probe.question)):
        path = named.group(0)
    else:
        return False
    throwaway = is_scratch(path) or bool(EXPLORATION.search(" " + path))
    return throwaway and not any(same_file(path, p) for p in run.diffed)


def directory(probe: Probe, run: Run) -> bool:
    """A directory as a changed file."""
    answer = probe.answer.strip()
    last = answer.rsplit("/", 1)[-1]
    return probe.label == "file_changed" and (
        answer.endswith("/") or ("." not in last and not BARE_FILES.search(answer))
    )


def copied_from_task(probe: Probe, run: Run) -> bool:
    """An identifier the task's own message already states."""
    return probe.label == "identifier" and probe.answer in run.task


def generic_identifier(probe: Probe, run: Run) -> bool:
    """An identifier that is a word (``MasterCard``, ``one_way``): no digit."""
    return probe.label == "identifier" and not any(ch.isdigit() for ch in probe.answer)


def outcome_from_edit(probe: Probe, run: Run) -> bool:
    """The outcome read off a line the agent wrote into a file or a script (the longest line of its last
    edit), not what it submitted or reported."""
    answer = probe.answer.strip()
    if probe.label != "outcome" or len(answer) < 8:
        return False
    return any(answer in a.new_text for a in run.actions if a.op == "edit") or any(
        answer in body for a in run.actions if a.op == "shell" for body in heredoc_bodies(a.command)
    )


def failed_view(probe: Probe, run: Run) -> bool:
    """A view of a path that is not there (or a directory): the refusal is the gold."""
    return probe.label in OUTPUT_TYPES and bool(FAILED_VIEW.search(probe.answer)) and not _command(probe)


def edit_refused_then_made(probe: Probe, run: Run) -> bool:
    """An editor's refusal (old text not found, a lint error) of an edit the agent then made."""
    if not EDIT_REFUSED.search(probe.answer):
        return False
    named = PATH.search(probe.question)
    return any(
        a.op == "edit"
        and a.ok
        and a.message_index > probe.message_index
        and (named is None or same_file(a.path or "", named.group(0)))
        for a in run.actions
    )


def installed_after(probe: Probe, run: Run) -> bool:
    """A missing module or program the agent installed afterwards (``No module named pytest``, then
    ``pip install pytest``; not an install that timed out or found nothing): an error fixed by
    installing a package."""
    if probe.label not in OUTPUT_TYPES:
        return False
    names = {(m.group(1) or m.group(2)).split(".")[0].casefold() for m in MISSING.finditer(probe.answer)}
    if not names:
        return False
    for action in run.actions:
        if action.op != "shell" or action.message_index <= probe.message_index or not INSTALLS.search(action.command):
            continue
        if INSTALL_FAILED.search(action.result):
            continue
        installed = action.command.casefold().replace("-", "_")
        if any(re.search(rf"(?<![\w.]){re.escape(n.replace('-', '_'))}(?![\w])", installed) for n in names):
            return True
    return False


def own_code_syntax_error(probe: Probe, run: Run) -> bool:
    """A syntax error in code the agent typed inline (``python -c``, ``python - << 'PY'``) or in a
    throwaway script: its own typo, not the project's."""
    if probe.label not in OUTPUT_TYPES or not SYNTAX.search(probe.answer):
        return False
    command = _command(probe)
    return bool(INLINE_CODE.search(command) or INLINE_CODE.search(probe.answer)) or any(
        is_scratch(p) for p in PATH.findall(command)
    )


def exploration_script(probe: Probe, run: Run) -> bool:
    """Output of a script named for looking around (``debug_x.py``, ``inspect_y.py``, ``find_z.py``),
    unless it printed what the task reports (a debugging script can reproduce the bug)."""
    return bool(EXPLORATION.search(_command(probe))) and not _in_task(probe.answer, run.task)


def _in_task(answer: str, task: str) -> bool:
    """Half of the answer's words (of four letters or more) are words of the task."""
    words = set(re.findall(r"[A-Za-z]{4,}", answer.casefold()))
    return bool(words) and len(words & set(re.findall(r"[A-Za-z]{4,}", task.casefold()))) >= len(words) / 2


def constraint_kept_by_all(probe: Probe, run: Run) -> bool:
    """A constraint every strategy keeps: stated within the last two rounds, so never judged where a
    strategy could have lost it."""
    return probe.label == "constraint" and len(run.calls) >= 2 and probe.message_index >= run.calls[-2]


Check = Callable[[Probe, Run], bool]
CHECKS: dict[str, Check] = {
    "read_only_command": read_only_command,
    "heredoc_first_line": heredoc_first_line,
    "task_tracker": task_tracker,
    "scratch_file": scratch_file,
    "directory": directory,
    "copied_from_task": copied_from_task,
    "generic_identifier": generic_identifier,
    "outcome_from_edit": outcome_from_edit,
    "failed_view": failed_view,
    "edit_refused_then_made": edit_refused_then_made,
    "installed_after": installed_after,
    "own_code_syntax_error": own_code_syntax_error,
    "exploration_script": exploration_script,
    "constraint_kept_by_all": constraint_kept_by_all,
}


def matches(probe: Probe, run: Run) -> list[str]:
    """The names of the checks the probe matches."""
    return [name for name, check in CHECKS.items() if check(probe, run)]


def framework(transcript: Transcript) -> str:
    fmt = str(transcript.source.get("format", "?"))
    path = str(transcript.source.get("path", ""))
    return "mini-swe-agent" if fmt == "openai" and path.endswith(".traj.json") else fmt


def source_files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        elif path.is_file():
            yield path


def import_all(files: Iterable[Path]) -> Iterator[Transcript]:
    """Every transcript of the files; a file the importer refuses (an empty one) is said and skipped."""
    for path in files:
        try:
            yield from import_file(path)
        except InputError as e:
            print(f"skipped: {e}", file=sys.stderr)


def gold_ids(part: str | None = None) -> set[str]:
    """The transcript ids of the gold files (one part, or both)."""
    ids = set()
    for path in sorted(GOLD.glob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        if part is None or data.get("part") == part:
            ids |= {entry["transcript"] for entry in data["transcripts"]}
    return ids


@dataclass
class Tally:
    probes: Counter[tuple[str, str]]  # (framework, type) -> probes
    trivial: Counter[tuple[str, str]]  # (framework, type) -> probes matching any check
    checks: Counter[str]
    listed: list[tuple[str, Probe, list[str]]]


def tally(transcripts: list[Transcript], keep: Callable[[Transcript], bool], listing: str | None = None) -> Tally:
    boilerplate = find_boilerplate(transcripts)
    result = Tally(Counter(), Counter(), Counter(), [])
    for transcript in transcripts:
        if not keep(transcript):
            continue
        run = run_of(transcript)
        for probe in extract_probes(transcript, boilerplate=boilerplate):
            key = (framework(transcript), probe.label or "?")
            found = matches(probe, run)
            result.probes[key] += 1
            result.trivial[key] += bool(found)
            result.checks.update(found)
            if listing is not None and (listing in found or (listing == "any" and found)):
                result.listed.append((transcript.id, probe, found))
    return result


def _row(name: str, k: int, n: int) -> str:
    lo, hi = wilson(k / n if n else 0.0, n)
    share = f"{k / n:.1%} [{lo:.1%}, {hi:.1%}]" if n else "-"
    return f"| {name} | {n} | {k} | {share} |"


def _sums(counts: Counter[tuple[str, str]], part: int, name: str) -> int:
    return sum(v for key, v in counts.items() if key[part] == name)


def report(t: Tally) -> str:
    head = ["| {} | probes | trivial pattern | share [95% Wilson] |", "|---|---|---|---|"]
    lines = []
    for part, title in ((0, "framework"), (1, "type")):
        lines += [head[0].format(title), head[1]]
        for name in sorted({key[part] for key in t.probes}):
            lines.append(_row(name, _sums(t.trivial, part, name), _sums(t.probes, part, name)))
        if part == 0:
            lines.append(_row("**all**", sum(t.trivial.values()), sum(t.probes.values())))
        lines.append("")
    lines += ["| check | probes |", "|---|---|"]
    lines += [f"| {name} | {t.checks[name]} |" for name in CHECKS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("paths", nargs="*", type=Path, help="transcript files or folders (default: shared transcripts)")
    parser.add_argument("--part", choices=("all", "gold", "dev", "untuned", "nongold"), default="all")
    parser.add_argument("--list", dest="listing", help="print the probes a check matched (or 'any')")
    args = parser.parse_args(argv)
    transcripts = list(import_all(source_files(args.paths or [SHARED])))
    if not transcripts:
        print("no transcripts found", file=sys.stderr)
        return 1
    gold = gold_ids(None if args.part in ("gold", "nongold") else args.part) if args.part != "all" else set()

    def keep(t: Transcript) -> bool:
        return args.part == "all" or ((t.id in gold) != (args.part == "nongold"))

    result = tally(transcripts, keep, args.listing)
    print(report(result))
    for tid, probe, found in result.listed:
        print(f"{tid} {probe.label} {','.join(found)} | {probe.question[:100]} | {probe.answer[:120]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
