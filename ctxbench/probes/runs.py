"""Facts read from what the agent's runs printed: the reproduction (the command that shows the bug
and what it printed), the test results (each suite's outcome before and after the change, the
verdict of the agent's own verification script) and the errors it ran into (exception and
message, with the command or tool call that raised it). Wrappers of each framework's output are
read in ``ctxbench.probes.outputs``; commands in ``ctxbench.probes.shell``."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ctxbench.probes.actions import Action, same_file
from ctxbench.probes.facts import Fact, clip, named, norm_words
from ctxbench.probes.outputs import MAKE_RECIPE, errors, read_output, suite_summary
from ctxbench.probes.shell import is_read_only, is_scratch, runs_tests, script_run

TEST_TARGET = re.compile(r"::|\btests?/\S*test\w*\.py|\btest_\w+\.py|\s-k\s")
ERROR_MESSAGE = re.compile(r"(?:Error|Exception|Failure)\w*:\s*(.+)$")
VALUE_WORDS = re.compile(r"\b(?:None|True|False|null|nan|NaN|error|wrong|expected|got|actual|mismatch|fail\w*)\b|!=")
# A verification script's verdict line ("All tests passed!", "SUCCESS: ...", "✅ fixed").
VERDICT = re.compile(
    r"\b(?:all (?:\w+ )?(?:tests?|checks?|cases?) (?:pass\w*|succeed\w*|ok)|tests? passed|PASS(?:ED)?|OK|"
    r"SUCCESS\w*|successfully|works? (?:correctly|as expected)|(?:is|was|been) fixed|fix (?:works|is working))\b|✅",
    re.IGNORECASE,
)
# Lines that say nothing about the bug: a traceback's header, a version, a source listing's line.
CONTENT_FREE = re.compile(r"^(?:Traceback \(most recent call last\):|v?\d+(?:\.\w+)+|\d+[:\t]\s.*|\s*\d+\s{2,}.*)$")
# An output that also reports a failure: its "All checks passed!" does not hold.
CONTRADICTED = re.compile(r"\bFAIL(?:ED|URE)?\b|✗|❌|\bError\b", re.IGNORECASE)


def _value_line(lines: list[str], task_words: set[str], avoid: set[str]) -> str | None:
    """The output line that says most: values and task words count, separators and echoes do not."""
    best, score = None, 0.0
    for ln in lines:
        s = ln.strip()
        if len(s) < 6 or s in avoid or set(s) <= set("=-_*#~ .") or len(s) > 200 or CONTENT_FREE.match(s):
            continue
        words = set(re.findall(r"\w+", s.lower()))
        value = 3 * min(len(VALUE_WORDS.findall(s)), 2) + (0.5 if re.search(r"\d", s) else 0)
        points = 2 * len(words & task_words) + value + (1 if ":" in s else 0) - s.count('"') / 4
        if points > score:
            best, score = s, points
    return clip(best, 160) if best else None


def _environment_error(line: str) -> bool:
    """The environment's trouble, not the code's: a missing module or tool."""
    return bool(
        re.search(r"No module named|command not found|ModuleNotFoundError|ImportError: cannot import|NumPy 2\.0", line)
    )


class RunReader:
    """Reads what one transcript's runs printed; each method yields facts of one type, best first.
    ``first_fix`` is where the agent first edited a source file; ``fix_paths`` the files it fixed."""

    def __init__(self, actions: list[Action], task: str, first_fix: int | None, fix_paths: list[str]) -> None:
        self.actions = actions
        self.task = task
        self.task_words = {w for w in re.findall(r"\w+", task.lower()) if len(w) > 3}
        self.shell = [a for a in actions if a.op == "shell"]
        self.first_fix = first_fix
        self.fix_paths = fix_paths

    def reproduction(self) -> Iterator[Fact]:
        if self.first_fix is None:
            return
        runs = [a for a in self.shell if a.message_index < self.first_fix and self._is_script_run(a)]
        after = {named(a.command): a for a in self.shell if a.message_index > self.first_fix}
        task = norm_words(self.task)

        def shows_reported_error(a: Action) -> bool:  # prints the error the task reports
            said = [norm_words(m.group(1)) for e in errors(a.result) for m in [ERROR_MESSAGE.search(e)] if m]
            return any(len(m) >= 12 and m in task for m in said)

        def failed_to_start(a: Action) -> bool:
            return any(_environment_error(e) for e in errors(read_output(a.result).text))

        # the run that shows the reported error, else the first that did not fail for the environment
        ranked = sorted(runs, key=lambda a: (not shows_reported_error(a), failed_to_start(a), a.message_index))
        for a in ranked:
            out = read_output(a.result)
            if not out.lines:
                continue
            later = after.get(named(a.command))
            avoid = set(read_output(later.result).lines) if later is not None else set()
            errs = errors(out.text)
            line = (
                errs[-1]
                if errs and not _environment_error(errs[-1])
                else _value_line(out.lines, self.task_words, avoid)
            )
            if line:
                yield Fact(
                    "reproduction", line, a.message_index + 1, f"What did `{named(a.command)}` print before the fix?"
                )
                return

    def test_results(self) -> Iterator[Fact]:
        facts: list[Fact] = []
        fix = self.first_fix if self.first_fix is not None else -1
        suites = [a for a in self.shell if runs_tests(a.command)]
        last_runs: dict[str, Action] = {}
        for a in suites:  # the last run of each suite command after the fix: the verification
            if a.message_index >= fix and suite_summary(read_output(a.result).text):
                last_runs[named(a.command)] = a
        # the runs that name test files or tests first (what the fix is checked by), then the later
        when = "after the change" if fix >= 0 else "when the agent ran it"
        for a in sorted(last_runs.values(), key=lambda a: (not TEST_TARGET.search(a.command), -a.message_index)):
            done = suite_summary(read_output(a.result).text) or ""
            question = f"What did `{named(a.command)}` report {when}?"
            facts.append(Fact("test_result", done, a.message_index + 1, question))
        for a in suites:  # the first run before the fix: what was failing
            summary = suite_summary(read_output(a.result).text)
            if summary and 0 <= a.message_index < fix:
                facts.append(
                    Fact(
                        "test_result",
                        summary,
                        a.message_index + 1,
                        f"What did `{named(a.command)}` report before the change?",
                    )
                )
                break
        ran = [a.message_index for a in suites if suite_summary(read_output(a.result).text)]
        for a in suites:  # a suite that could not start, and none ran later: why the agent verified otherwise
            errs = errors(read_output(a.result).text)
            if any(i > a.message_index for i in ran):
                continue
            if errs and not suite_summary(read_output(a.result).text) and _environment_error(errs[-1]):
                facts.append(
                    Fact("test_result", errs[-1], a.message_index + 1, f"What did `{named(a.command)}` report?")
                )
                break
        if fix >= 0:  # the agent's own verification script after the fix
            runs = [a for a in self.shell if a.message_index > fix and self._is_script_run(a)]
            runs = [a for a in runs if read_output(a.result).lines and not errors(read_output(a.result).text)]
            # the last run that states a verdict ("All tests passed!"), else the last run's telling line
            verdicts = [
                (a, ln)
                for a in runs
                for ln in read_output(a.result).lines
                if VERDICT.search(ln) and not CONTRADICTED.search(read_output(a.result).text)
            ]
            verdicts.sort(key=lambda v: bool(re.search(r"\ball\b", v[1], re.I)))  # an "all passed" line last: picked
            picked = verdicts[-1] if verdicts else None
            if picked is None and runs:
                line = _value_line(read_output(runs[-1].result).lines, self.task_words, set())
                picked = (runs[-1], line) if line else None
            if picked is not None:
                a, line = picked
                question = f"What did `{named(a.command)}` print after the change?"
                facts.insert(1, Fact("test_result", clip(line.strip(), 160), a.message_index + 1, question))
        yield from facts

    def errors_seen(self) -> Iterator[Fact]:
        """Distinct errors the agent ran into (shell runs, editor and tool calls): one before the
        fix and one after it first. Not: a missing module it installed right after, a typo in its
        own throwaway script, an exploratory one-liner's error."""
        seen: set[str] = set()
        before: list[Fact] = []
        later: list[Fact] = []
        installs = " ".join(
            a.command for a in self.shell if re.search(r"\b(?:pip|conda|apt(?:-get)?) install\b", a.command)
        )
        for n, a in enumerate(self.actions):
            if a.op == "shell" and is_read_only(a.command) or not a.result or self._fixed_next(n):
                continue
            found = errors(read_output(a.result).text)
            # the last error is what it died of; a failed build's first error is why
            for line in found[:1] if found and MAKE_RECIPE.match(found[-1]) else found[-1:]:
                norm = re.sub(r"\d+", "N", line)
                if norm in seen or self._noise(a, line, installs):
                    continue
                seen.add(norm)
                what = f"`{named(a.command)}`" if a.op == "shell" else f"the agent's `{a.tool}` call"
                if a.op == "edit" and a.path:
                    what = f"the agent's edit of {a.path}"
                fact = Fact("error", clip(line, 160), a.message_index + 1, f"What error did {what} show?")
                (before if self.first_fix is None or a.message_index < self.first_fix else later).append(fact)
        env = [f for f in before + later if _environment_error(f.answer)]
        real = [f for f in before + later if not _environment_error(f.answer)]
        ordered = [*real[:1], *[f for f in real if f in later][:1]]
        ordered += [f for f in real if f not in ordered] + env
        yield from dict.fromkeys(ordered)

    def _fixed_next(self, n: int) -> bool:
        """The agent got past the error within its next few actions: the same edit of the same file
        went through, or the same command ran clean. A slip, not a fact to carry."""
        a = self.actions[n]
        for b in self.actions[n + 1 : n + 4]:
            if a.op == "edit" and b.op == "edit" and b.ok and same_file(a.path or "", b.path or ""):
                return True
            if (
                a.op == "shell"
                and b.op == "shell"
                and b.command == a.command
                and not errors(read_output(b.result).text)
            ):
                return True
        return False

    def _noise(self, a: Action, line: str, installs: str) -> bool:
        missing = re.search(r"No module named '?([\w.]+)", line)
        if missing and missing.group(1).split(".")[0] in installs:
            return True  # installed right after: the environment, fixed
        if a.op != "shell":
            return False
        script = script_run(a.command)
        own = script == "-" or (script is not None and is_scratch(script))
        typo = re.match(r"(?:\S+ )*(?:SyntaxError|IndentationError|TabError|NameError)\b", line.split(" in ")[-1])
        bare = re.fullmatch(r"[\w.]*(?:Error|Exception)", line.strip())
        in_source = any(same_file(path, p) for p in re.findall(r'File "([^"]+)"', line) for path in self.fix_paths)
        return own and not in_source and bool(typo or bare or script == "-")

    def _is_script_run(self, a: Action) -> bool:
        if runs_tests(a.command) or is_read_only(a.command):
            return False
        script = script_run(a.command)
        return script is not None and (
            script == "-" or is_scratch(script) or script.endswith((".py", ".js", ".sh", ".pony", ".rb"))
        )
