"""Facts read from what the agent's runs printed: the reproduction (the command that shows the bug
and what it printed), the test results (each suite's outcome before and after the change, the
verdict of the agent's own verification script) and the errors it ran into (exception and
message, with the command or tool call that raised it). Wrappers of each framework's output are
read in ``ctxbench.probes.outputs``; commands in ``ctxbench.probes.shell``."""

from __future__ import annotations

import difflib
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator
from functools import cached_property

from ctxbench.probes.actions import SEGMENT, Action, same_file, shell_edits
from ctxbench.probes.facts import Fact, clip, named, norm_words
from ctxbench.probes.outputs import (
    ERROR_TYPE,
    MAKE_RECIPE,
    NOT_FOUND,
    NOTHING_RAN,
    Output,
    errors,
    failing_tests,
    read_output,
    suite_summary,
)
from ctxbench.probes.shell import (
    INSTALLS,
    heredoc_bodies,
    is_read_only,
    is_scratch,
    is_test_file,
    runs_tests,
    script_run,
    strip_heredocs,
    test_command,
    tool_run,
)

MISSING_MODULE = re.compile(r"No module named '?([\w.]+)")
PACKAGE_WORD = re.compile(r"[\w.-]+")
# An install that did not happen: cut off, or pip found nothing to install (its resolver's warning is no failure).
INSTALL_FAILED = re.compile(
    r"timed out|No matching distribution|Could not find a version|^ERROR: (?!pip's dependency resolver)", re.M
)
TEST_TARGET = re.compile(r"::|\btests?/\S*test\w*\.py|\btest_\w+\.py|\s-k\s")
ERROR_MESSAGE = re.compile(ERROR_TYPE + r"\s*(.+)$")
# A thing the command named that is not there: pytest's unknown test id or path, a file utility's or Python's
# missing file ("cp: cannot stat 'x.backup'", "python: can't open file '/testbed/t.py'").
MISNAMED = re.compile(
    r"^ERROR: (?:not found|file or directory not found): (\S+)|"
    r"^(?:cp|mv|rm|ln|cat|ls|chmod|touch): cannot (?:stat|access|remove|open) '([^']+)'|"
    r"\bcan't open file '([^']+)'"
)
VALUE_WORDS = re.compile(r"\b(?:None|True|False|null|nan|NaN|error|wrong|expected|got|actual|mismatch|fail\w*)\b|!=")
# An empty collection printed as a value ("handlers: []", "Errors: {}"): a value like None, not punctuation.
EMPTY_VALUE = re.compile(r"(?<![\w\]\[({])(?:\[\]|\{\}|set\(\))(?![\w\[\](){}])")
# A verification script's verdict line ("All tests passed!", "SUCCESS: ...", "✅ fixed").
VERDICT = re.compile(
    r"\b(?:(?:all|the) (?:\w+ )?(?:tests?|checks?|cases?|assertions?) (?:pass\w*|succeed\w*|ok)|"
    r"tests? passed|PASS(?:ED)?|OK|SUCCESS\w*|successfully|works? (?:correctly|as expected)|(?:is|was|been) fixed|"
    r"fix (?:works|is working)|"
    r"(?:bug|issue|problem) (?:is |was |has been )?(?:now )?(?:fixed|resolved)|(?-i:FIXED|RESOLVED)|"
    r"no (?:error|exception)s? (?:was |were )?(?:raised|thrown))\b|✅|✓",
    re.IGNORECASE,
)
# Lines that say nothing about the bug: a traceback's header or frame, a version (v1.2, 2.4.1, 3.1a; not a decimal
# printed alone, 8.2), a source listing's line.
CONTENT_FREE = re.compile(
    r"^(?:Traceback \(most recent call last\):|v\d+(?:\.\w+)+|\d+(?:\.\w+){2,}|\d+\.(?!\d+$)\w+"
    r"|\d+[:\t]\s.*|\s*\d+\s{2,}.*|File \"[^\"]+\", line \d+.*)$"
)
# An object's repr with its address, or a temporary file's random name (tempfile's /tmp/tmpn_n85vaw): a different
# value every run, nothing to remember.
ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{6,}|/tmp\w*/tmp[a-z0-9_]{8}\b")
# A line that reports a failure (an output holding one does not pass), unless it marks a pass or
# counts zero failures: "✓ error: '' -> ''", "0 failed", "Failures: 0".
# An exception's or an error's line, not a sentence that starts with the word ("error that occurred when ...").
FAILURE_LINE = re.compile(
    r"\bFAIL(?:ED|URE|S)?\b|✗|❌|^\s*(?-i:[\w.]*Error|[\w.]*Exception|ERROR)\b|^\s*error\b\s*(?:\[\w+\])?:",
    re.IGNORECASE,
)
# A failure or an error stated as what should happen, not as what did.
EXPECTED = re.compile(
    r"\b(?:should|would|will|must|expected to|expect(?:ing)? it to)\s+(?:\w+\s+)?(?:fail|raise|error)\w*\b|"
    r"\((?:as )?expected\)|\bas expected\b",
    re.IGNORECASE,
)
PASS_MARK = re.compile(
    r"✓|✅|\bPASS(?:ED)?\b|\bOK\b|\b0 (?:failed|failures|errors)\b|\b(?:failed|failures|errors):\s*0\b", re.I
)
# A patch script's report that it wrote a file: no verdict on the fix ("File updated successfully!").
WROTE = re.compile(
    r"\b(?:updated|written|wrote|saved|applied|patched|modified|replaced|created|inserted|added)\b.{0,40}"
    r"\bsuccessfully\b|\bsuccessfully (?:updated|written|wrote|saved|applied|patched|modified|replaced|created)\b|"
    r"^\W*(?:file|patch|fix|changes?)\b.{0,30}\b(?:updated|written|saved|applied)\b",
    re.IGNORECASE,
)
# A setup step's report ("✓ Successfully imported django.contrib.admin.helpers", "Module loaded successfully"): the
# script got going, no verdict on the fix.
STEP_DONE = re.compile(
    r"\bsuccessfully (?:imported|loaded|installed|initiali[sz]ed|configured|connected|compiled|parsed)\b|"
    r"\b(?:imported|loaded|installed|initiali[sz]ed|configured|connected|compiled|parsed) successfully\b",
    re.IGNORECASE,
)
# A script's call that writes a file: an agent that edits through `python fix.py` or `python - <<EOF`.
WRITE_CALL = re.compile(r"""\bopen\([^)\n]*,\s*(?:mode\s*=\s*)?['"][wa]\+?b?['"]|\.write_text\(|\bwriteFileSync\(""")
# A line that states a verdict: it starts with a pass mark or word, or says all passed, fixed, works.
STATED_VERDICT = re.compile(
    r"^\W*(?:✓|✅|\[?(?:PASS(?:ED)?|OK|SUCCESS)\b)|\b(?:all (?:\w+ )?(?:tests?|checks?|cases?|assertions?) "
    r"(?:pass\w*|succeed\w*|ok)|(?:tests?|checks?) passed|(?:is|are|was|been) (?:now )?fixed|"
    r"fix(?:es)? (?:works|is working)|works? (?:correctly|as expected)|completed successfully|"
    r"(?:bug|issue|problem) (?:is |was |has been )?(?:now )?(?:fixed|resolved)|no (?:error|exception)s? "
    r"(?:was |were )?(?:raised|thrown))\b|\bpassed\b\W*$|^\W*(?-i:FIXED|RESOLVED)\b|[✓✅]\W*$",
    re.IGNORECASE,
)
# The words of an overall verdict, not of one case's line.
VERDICT_WORD = re.compile(r"\b(?:pass(?:ed|es)?|success\w*|fixed|works?|working|ok)\b", re.IGNORECASE)
FRAME_FILE = re.compile(r'^[ \t]*File "([^"]+)", line \d+', re.MULTILINE)
# A one-liner that only imports a module, to see whether the environment has it.
ASKS_MODULE = re.compile(
    r"""-c\s+["']\s*(?:import|from)\s+[\w.]+(?:\s+import\s+[\w., ]+)?\s*(?:;\s*print\([^)]*\)\s*)?["']"""
)
TIMED_OUT = re.compile(r"EXECUTION TIMED OUT|timed out after \d+")
# A script that failed before it reached the code under test: a framework not set up (Django's settings, app
# registry, an app label), a stand-in object the script made lacking what the code asks of it, no terminal.
SETUP_ERROR = re.compile(
    r"settings are not configured|doesn't declare an explicit app_label|(?:Apps|Models) aren't loaded yet|"
    r"No installed app with label|"
    r"SECRET_KEY setting must not be empty|\b(?:Mock|Fake|Dummy|Stub)\w*'? object (?:has no attribute|is not)|"
    r"type object '(?:Mock|Fake|Dummy|Stub)\w*' has no attribute|No such device or address: '/dev/tty'"
)
CHANGED_MAX = 150  # a changed line longer than this is quoted around its change
# The agent putting an error on its own test or script: "There's a bug in my test.", "So my test might be wrong.",
# "Let me fix the test script:", "I need to fix the test script.", "Let me simplify the test to avoid ...".
OWN_FAULT = re.compile(
    r"\b(?:(?:issue|problem|bug|error|mistake)s? (?:is )?(?:with|in) my (?:test|script|reproduction)|"
    r"my (?:test|script)\b[^.!?\n]{0,40}\b(?:wrong|incorrect|broken|buggy|mistaken)|"
    r"(?:fix|correct|simplify|adjust) (?:the|my) (?:test|script)(?: script)?\b)",
    re.IGNORECASE,
)
# A script named as the reproduction (reproduce_issue.py, repro.py, reproduce_bug.py): the run the agent meant to
# show the bug, before its other scripts that ran as cleanly.
REPRO_NAME = re.compile(r"(?:^|[/_.-])repro(?:duce|duction)?\w*\.\w+$", re.I)
# Scripts named for looking around (debug_x.py, explore.py, inspect_y.py, examine_z.py): their errors are exploration.
EXPLORATION_SCRIPT = re.compile(
    r"(?:^|[/_.-])(?:debug|explore|exploration|inspect|examine|investigate|analy[sz]\w*)\w*\.\w+$", re.I
)
PROJECT_FRAME = re.compile(r'^[ \t]*File "([^"]+)", line (\d+), in (\S+)', re.MULTILINE)
# What follows a frame line that is no code it ran (the next frame, the markers, the error), or says no more than
# the message (`raise FieldError(`).
CODE_FREE = re.compile(r"^(?:File |Traceback|raise |[~^\s]+$|[\w.]*(?:Error|Exception)\b)")
CODE_MAX = 80  # a longer line of code is left out of the question
# A module, app or backend that would not load, and the quoted names an error gives it.
LOAD_FAILED = re.compile(r"No module named|ModuleNotFoundError|ImproperlyConfigured|isn't an available|LookupError")
QUOTED_NAME = re.compile(r"""['"]([A-Za-z_][\w.]*)['"]""")
UNDEFINED = re.compile(r"\bNameError: name '\w+' is not defined")
INSTALLED_FRAME = re.compile(r"<frozen |/(?:site|dist)-packages/|/lib/python\d")
# A section title a script prints ("=== Test 4: annotate without values() ==="): what follows is the result.
BANNER = re.compile(r"^([=#*~-])\1{2,}.*\1{3}$")
FRAME_LINE = re.compile(r'^File "[^"]+", line \d+')
# An installer's progress (pip, uv, conda, npm, apt): the environment being set up, nothing the code printed.
INSTALLER_CHATTER = re.compile(
    r"^(?:Requirement already satisfied|Collecting |Downloading |Obtaining |Processing /|Using cached |"
    r"Installing (?:collected packages|build dependencies)|Successfully (?:installed|built|uninstalled)|"
    r"Attempting uninstall|Found existing installation|Uninstalling |Building (?:wheels?|editable)|Created wheel|"
    r"Stored in directory|Preparing (?:metadata|editable metadata|to unpack)|Getting requirements|Running setup\.py|"
    r"(?:WARNING|DEPRECATION): (?:Running pip|You are using pip|pip|The candidate|Retrying)|\[notice\]|"
    r"Looking in indexes|(?:Resolved|Prepared|Installed|Uninstalled|Audited|Built) \d+ packages?|"
    r"npm (?:WARN|notice|warn)|added \d+ packages?|up to date, audited|found \d+ vulnerabilit|"
    r"Reading (?:package lists|state information)|Building dependency tree|(?:Get|Hit|Ign):\d+ |Fetched \d|"
    r"Setting up |Unpacking |Selecting previously|Need to get|After this operation|"
    # a socket library's progress (pwntools): the connection, not what came over it
    r"\[[x+*-]\] (?:Opening connection|Closed connection|Starting (?:local )?process|Stopped process|"
    r"Receiving all data|Switching to interactive mode)|"
    r"Terminal features will not be available|Warning: _curses\.error|"
    r"Collecting package metadata|Solving environment|(?:Preparing|Verifying|Executing) transaction)"
)
# A value printed alone (`print(field.serialize(...))` -> 344, None, nan): short, yet all the script says.
BARE_VALUE = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?|None|True|False|nan|NaN|-?inf|null|\[\]|\{\}|''|\"\"|\(\)")
# A numbered check's title ("Test 4: Numpy arrays (should still work)"): what follows it is the result.
CHECK_TITLE = re.compile(r"^(?:Test(?:ing)?|Case|Example|Scenario|Check)(?: case)? ?#?\d+\w?\b", re.IGNORECASE)
# Python's warnings module: "path.py:4: BytesWarning: ...", the code line indented below it.
PY_WARNING = re.compile(r"^\S+:\d+: \w*Warning: ")
# A suite summary that counts a failure or an error ("1 failed", "2 errors", unittest's "FAILED (failures=1)").
FAILED_COUNT = re.compile(r"\b[1-9]\d* (?:failed|errors?)\b|\bFAILED \((?:failures|errors)=")
SUITE_COUNT = re.compile(r"\b(\d+) (?:passed|failed|errors?)\b|^Ran (\d+) tests?", re.MULTILINE)


# A script that reads the project's code (a source file opened for reading, `inspect.getsource`): what it prints
# is that code, or the agent's reading of it, not what the code does.
READS_SOURCE = re.compile(
    r"""\bopen\(\s*(?:r?['"][^'"\n]*\.(?:py|js|ts|java|go|rs|rb|c|h|cpp)['"]|[\w.]*path\w*)\s*(?:,\s*['"]r['"]\s*)?\)"""
    r"|\binspect\.getsource(?:lines)?\("
)
# One case's line: a quoted input and what came of it ("OK: 'user.1@x' -> ASCII: PASS", "'1e3' => 1000.0").
CASE_RESULT = re.compile(r"""(?:'[^']*'|"[^"]*")\s*(?:->|=>|→)""")
# A case's mark and label ahead of its name ("✓ PASS: Latin-1 with Unicode arrow"): several lines with the same head are
# a script's cases, and its "All tests passed!" the run's verdict.
CASE_HEAD = re.compile(r"^[^\w\s]*\s*[A-Za-z]+:")
# A verdict that names nothing it checked ("Test passed!", "=== All checks passed! ===", "Success!").
NAMES_NOTHING = re.compile(
    r"[\W_]*(?:(?:all|the|tests?|checks?|pass(?:ed|es)?|success(?:ful(?:ly)?)?|ok|done|fixed|works?|completed?|"
    r"verified)[\W_]*)+",
    re.IGNORECASE,
)
CASE_FIXED = re.compile(r"\b(?:fixed|resolved)\b", re.IGNORECASE)  # a case's line that says the bug is gone


def _value_line(lines: list[str], task_words: set[str], avoid: set[str], any_line: bool = False) -> str | None:
    """The output line that says most: values and task words count, separators and echoes do not
    (``any_line``: the best of lines that all tell something, such as the lines a fix changed)."""
    best, score = None, float("-inf") if any_line else 0.0
    title: str | None = None
    for n, ln in enumerate(lines):
        s = ln.strip()
        if len(s) < 6 and not BARE_VALUE.fullmatch(s) or s in avoid or len(s) > 200:
            continue  # too short to tell, unless a value printed alone ("344", "None")
        if set(s) <= set("=-_*#~ .") or CONTENT_FREE.match(s):
            continue
        if s.endswith((":", "...", "…")) or INSTALLER_CHATTER.match(s):
            continue  # a title of what follows ("Testing X:", "Examining delete()..."), or an installer's progress
        if CHECK_TITLE.match(s) and not VALUE_WORDS.search(s) and not re.search(r"->|=|:", s.split(":", 1)[-1]):
            title = title or s  # a numbered check's title, no value of its own: quoted only when nothing else is
            continue
        if PY_WARNING.match(s) or n and ln[:1].isspace() and PY_WARNING.match(lines[n - 1].strip()):
            continue  # a Python warning and the code line it quotes below it
        if BANNER.match(s) or n and ln[:1].isspace() and FRAME_LINE.match(lines[n - 1].strip()):
            continue  # a section title, or the code line indented under a traceback's frame: no value printed
        words = set(re.findall(r"\w+", s.lower()))
        values = len(VALUE_WORDS.findall(s)) + len(EMPTY_VALUE.findall(s))
        value = 3 * min(values, 2) + (0.5 if re.search(r"\d", s) else 0)
        points = 2 * len(words & task_words) + value + (1 if ":" in s else 0) - s.count('"') / 4
        points -= 6 if ADDRESS.search(s) else 0
        if points > score:
            best, score = s, points
    best = best or title
    return clip(best, 160) if best else None


def _environment_error(line: str) -> bool:
    """The environment's trouble, not the code's: a missing module or tool."""
    return bool(
        re.search(r"No module named|command not found|ModuleNotFoundError|ImportError: cannot import|NumPy 2\.0", line)
    )


def _harness_error(line: str) -> bool:
    """A run that could not start: a module or tool missing, a framework not set up (not code of the
    project that fails with the installed versions: NumPy 2's removals are the agent's to mend)."""
    return bool(re.search(r"No module named|command not found|ModuleNotFoundError", line) or SETUP_ERROR.search(line))


def contradicted(lines: list[str]) -> bool:
    """The output reports a failure somewhere: its "All checks passed!" does not hold. A line that says a failure is
    what should happen ("Test 1: empty list (should fail)", "ValueError raised (expected)") reports none, nor does a
    title of what follows ("6. Nested field (valid type but fails validation):"): the case, not its outcome."""
    return any(
        FAILURE_LINE.search(ln) and not PASS_MARK.search(ln) and not EXPECTED.search(ln) and not _title(ln)
        for ln in lines
    )


def _title(line: str) -> bool:
    """A line that names the case that follows it: it ends with a colon, states no value after one inside it, and
    its failure word is prose inside it ("... but fails validation:"), not its head ("FAILED:", "✗ Errors:")."""
    s = line.strip()
    found = FAILURE_LINE.search(s)
    return s.endswith(":") and ": " not in s[:-1] and found is not None and found.start() > 0 and "✗" not in s


def verdict_lines(lines: list[str]) -> list[str]:
    """A verification script's verdict lines ("All tests passed!", "SUCCESS: ...", "✓ fixed",
    "test_x passed!"), not a value that happens to be "success", nor a patch script's report that
    it wrote a file, nor a setup step's that it got going ("Successfully imported x"), nor a failure
    it expected ("✓ Failed as expected: ...": the old code's, in a script that runs both)."""
    return [
        ln.strip()
        for ln in lines
        if VERDICT.search(ln)
        and STATED_VERDICT.search(ln)
        and not WROTE.search(ln)
        and not STEP_DONE.search(ln)
        and not (FAILURE_LINE.search(ln) and EXPECTED.search(ln))
    ]


def per_case(lines: list[str]) -> set[str]:
    """The lines printed once per case: the same line again ("Pass: True" three times), or the same
    words with other numbers, but for the series' last ("Message 1: ✓" ... "Message 3: ✓"; "Pass 29",
    the last of "Pass 0" ... "Pass 29", tells how far it got). Each says nothing of the whole run."""
    stripped = [ln.strip() for ln in lines]
    same = Counter(stripped)
    last = {re.sub(r"\d+", "#", ln): ln for ln in stripped}
    shapes = Counter(re.sub(r"\d+", "#", ln) for ln in stripped)
    return {
        ln
        for ln in stripped
        if same[ln] > 1 or shapes[re.sub(r"\d+", "#", ln)] > 1 and last[re.sub(r"\d+", "#", ln)] != ln
    }


def changed_line(
    lines: list[str], other: list[str], task_words: set[str], avoid: frozenset[str] = frozenset()
) -> str | None:
    """The telling line of ``lines`` that ``other`` (the same script's output on the other side of
    the fix) does not print in its place, with the label line right above it when that one did not
    change ("PK: app.User.entity_ptr" above "PK auto_created: True"); of a long line, the words
    around what changed (not one of ``avoid``). None when nothing changed."""
    a, b = [ln.strip() for ln in lines[:400]], [ln.strip() for ln in other[:400]]
    changed: dict[int, str] = {}  # line -> what of it to quote
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            for i in range(i1, i2):
                paired = b[j1 + i - i1] if tag == "replace" and j1 + i - i1 < j2 else ""
                changed[i] = a[i] if len(a[i]) <= CHANGED_MAX else _around_change(a[i], paired)
    if not changed:
        return None
    best = _value_line(list(changed.values()), task_words, set(avoid), any_line=True)
    if best is None:
        return None
    at = next(i for i, quoted in changed.items() if clip(quoted, 160) == best)
    above = a[at - 1] if at > 0 and at - 1 not in changed and changed[at] == a[at] else ""
    if above and len(above) >= 6 and not set(above) <= set("=-_*#~ .:") and len(above) + len(best) < 160:
        return f"{above} {best}"
    return best


def _around_change(line: str, other: str) -> str:
    """The words of a long line around where it differs from ``other`` (about CHANGED_MAX
    characters, verbatim): a SQL query's changed GROUP BY, not its first 160 characters."""
    ops = [op for op in difflib.SequenceMatcher(None, line, other, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return line[:CHANGED_MAX]
    first, last = ops[0][1], max(op[2] for op in ops)
    if last - first > CHANGED_MAX:
        last = first + CHANGED_MAX
    pad = max(0, (CHANGED_MAX - (last - first)) // 2)
    lo, hi = max(0, first - pad), min(len(line), last + pad)
    lo = line.find(" ", lo) + 1 if lo > 0 and line.find(" ", lo) >= 0 else lo  # whole words only
    cut = line.rfind(" ", lo, hi) if hi < len(line) else hi
    return line[lo : cut if cut > lo else hi].strip()


def _printed_if(script: str, line: str, tried: bool = False) -> bool:
    """The script prints the line under a condition (an ``if``, ``else`` or ``except`` branch; with
    ``tried``, a ``try`` block after code that may raise: a check's "Write succeeded" once the write
    went through, which before the fix says only that the bug did not show): a finding ("❌ ISSUE:
    ..." when the check fails), not a title it prints every run."""
    rows = script.splitlines()
    for n, row in enumerate(rows):
        if line not in row:
            continue
        indent = len(row) - len(row.lstrip())
        for at in range(n - 1, -1, -1):
            above = rows[at]
            if above.strip() and len(above) - len(above.lstrip()) < indent:
                if tried and re.match(r"\s*try\s*:", above):  # printed only if the code above it did not raise
                    return any(r.strip() and not re.match(r"\s*(?:print\(|#)", r) for r in rows[at + 1 : n])
                return bool(re.match(r"\s*(?:if|elif|else|except)\b", above))
    return False


def _ran_nothing(summary: str) -> bool:
    """A pytest summary of a run that selected no test, or its error for the id or path it did not find."""
    return bool(NOTHING_RAN.match(summary) or NOT_FOUND.match(summary))


def suite_size(summary: str) -> int:
    """How many tests a suite summary counts (passed, failed and errors; unittest's "Ran N")."""
    return sum(int(a or b) for a, b in SUITE_COUNT.findall(summary))


def script_writes(shell: list[Action], files: list[str]) -> list[int]:
    """Where a script the agent ran wrote one of ``files``: ``python fix.py`` after
    ``cat > fix.py << 'EOF' ... open('src/x.py', 'w')``, or an inline ``python - << 'EOF'``."""
    names = {f.rstrip("/").rsplit("/", 1)[-1] for f in files if f}
    bodies: dict[str, str] = {}  # scripts the agent wrote, by name
    out = []
    for a in shell:
        if "<<" in a.command:  # a script written through a heredoc
            for target, body in zip(shell_edits(a.command), heredoc_bodies(a.command), strict=False):
                bodies[target.rsplit("/", 1)[-1]] = body
        script = script_run(a.command)
        if script is None:
            continue
        text = a.command if script == "-" else bodies.get(script.rsplit("/", 1)[-1], "")
        if WRITE_CALL.search(text) and any(name in text for name in names):
            out.append(a.message_index)
    return out


def moved_writes(actions: list[Action], files: list[str]) -> list[int]:
    """Where the agent put a file it wrote over one of ``files``: ``sed ... > x.py.new && mv x.py.new x.py``,
    ``cat > x.py.fixed << 'EOF'`` then ``cp x.py.fixed x.py`` (not a backup it copied back: it did not write that)."""
    written: set[str] = set()  # the files the agent wrote, by name
    out = []
    for a in actions:
        if a.op == "edit" and a.path:
            written.add(a.path.rsplit("/", 1)[-1])
        if a.op != "shell":
            continue
        for segment in SEGMENT.split(strip_heredocs(a.command)):
            written |= {t.rsplit("/", 1)[-1] for t in shell_edits(segment)}
            words = segment.split()
            moved = len(words) == 3 and words[0] in ("cp", "mv") and words[1].rsplit("/", 1)[-1] in written
            if moved and any(same_file(words[2], f) for f in files if f):
                out.append(a.message_index)
    return out


def stashed_runs(shell: list[Action]) -> set[int]:
    """The runs made with the change stashed: after a ``git stash`` (``push``, ``save``, or bare; in the same command
    or an earlier one) and before the ``git stash pop`` or ``apply`` that puts it back. They run the code without the
    change (the agent checking whether a failure was there before), not the change."""
    out: set[int] = set()
    on = False
    for a in shell:
        for segment in SEGMENT.split(strip_heredocs(a.command)):
            words = segment.split()
            at = next((n for n in range(len(words) - 1) if words[n : n + 2] == ["git", "stash"]), None)
            if at is not None:
                sub = words[at + 2] if len(words) > at + 2 else ""
                if sub in ("pop", "apply"):
                    on = False
                elif sub in ("", "push", "save") or sub.startswith("-"):
                    on = True
            elif on and runs_tests(segment):
                out.add(a.message_index)
    return out


class RunReader:
    """Reads what one transcript's runs printed; each method yields facts of one type, best first.

    The fix is where the agent first wrote a file of its final change (``changed``: the files of
    the diff it showed; else the source files it edited, ``fix_edits``), by an editor, a shell
    edit or a script of its own: what ran before it shows the bug, what ran after it checks the fix.
    """

    def __init__(
        self,
        actions: list[Action],
        task: str,
        fix_edits: list[Action],
        changed: list[str],
        replies: dict[int, str] | None = None,
    ) -> None:
        self.actions = actions
        self.replies = replies or {}  # the agent's text by message index: what it said of a run's output
        self.task = task
        self.task_words = {w for w in re.findall(r"\w+", task.lower()) if len(w) > 3}
        self.shell = [a for a in actions if a.op == "shell"]
        files = changed or [a.path or "" for a in fix_edits]
        self.fix_paths = files
        edits = [a for a in fix_edits if not changed or any(same_file(a.path or "", f) for f in changed)]
        self.writes = set(script_writes(self.shell, files)) | set(moved_writes(actions, files))
        at = sorted({a.message_index for a in edits} | self.writes)
        self.fixes = set(at)  # the runs that wrote the fix: neither a reproduction nor a check
        self._outputs: dict[int, Output] = {}
        self._errors: dict[int, list[str]] = {}
        # a test the agent added first fails until the code changes, and an edit that mends what the environment
        # removed (`np.Inf` under NumPy 2) lets the code run: the code's first other edit is the fix
        mends = {a.message_index for a in edits if self._mends_environment(a)}
        code = sorted({a.message_index for a in edits if not is_test_file(a.path or "")} - mends | self.writes)
        self.fix_at = code[0] if code else at[0] if at else None
        self.last_fix = at[-1] if at else None
        self._shell_edit_at = {(a.message_index, a.tool) for a in self.shell}
        self._script_runs: dict[int, bool] = {}
        self._failed_before: dict[int, Action | None] = {}  # per run: the failed run before it (``_failed_earlier``)
        # checks whose fact is a value they printed, no verdict: the agent's reading of them still says what it shows
        self.values_only: set[str] = set()
        # the files the agent wrote that its change does not keep: inputs it made (test.sql), scripts
        fixed = {f.rstrip("/").rsplit("/", 1)[-1] for f in files}
        self.made = {(a.path or "").rsplit("/", 1)[-1] for a in actions if a.op == "edit" and a.path} - fixed

    def _mends_environment(self, edit: Action) -> bool:
        """The edit replaces what the last failed run before it said the environment no longer has: that run's
        error is the environment's (a module missing, NumPy 2's removals) and names the text the edit took out."""
        removed = edit.old_text.replace("\\", "").strip()
        if len(removed) < 4 or "\n" in removed:
            return False
        failed, at = self._failed_runs
        before = bisect_left(at, edit.message_index)
        if not before:
            return False
        last = self._errs(failed[before - 1])[-1]
        return _environment_error(last) and removed in last

    @cached_property
    def _failed_runs(self) -> tuple[list[Action], list[int]]:
        """The shell runs that printed an error, in order, and their message indexes (read once: every edit asks
        for the last one before it)."""
        failed = [b for b in self.shell if self._errs(b)]
        return failed, [b.message_index for b in failed]

    def _out(self, a: Action) -> Output:
        """What the action printed, read once (every finder asks again)."""
        out = self._outputs.get(id(a))
        if out is None:
            out = self._outputs[id(a)] = read_output(a.result)
        return out

    def _errs(self, a: Action) -> list[str]:
        errs = self._errors.get(id(a))
        if errs is None:
            errs = self._errors[id(a)] = errors(self._out(a).text)
        return errs

    # -- the reproduction ---------------------------------------------------------------------
    def _shows_reported_error(self, a: Action) -> bool:
        """The run prints the error the task reports."""
        task = norm_words(self.task)
        said = [norm_words(m.group(1)) for e in self._errs(a) for m in [ERROR_MESSAGE.search(e)] if m]
        return any(len(m) >= 12 and m in task for m in said)

    def _run_name(self, a: Action) -> str | None:
        """What a run runs: the script (``python repro.py``), else the project's command line on
        input the agent made (``sqlfluff lint test.sql``)."""
        return script_run(a.command) or tool_run(a.command, self.made)

    def _rerun_after_fix(self, a: Action) -> Action | None:
        """The last run of the same script after the fix: how the agent checked it."""
        script = self._run_name(a)
        if script is None or script == "-" or self.fix_at is None:
            return None
        later = [
            b
            for b in self.shell
            if b.message_index > max(a.message_index, self.fix_at)
            and b.message_index not in self.fixes
            and self._run_name(b) == script
            and self._out(b).lines
        ]
        return later[-1] if later else None

    @cached_property
    def _reproduction(self) -> tuple[Action, str] | None:
        """The run that shows the bug and its telling line: the one that prints the error the task
        reports, else one that did not fail for the environment or in the script's own code: the
        script the agent ran again after the fix (its reproduction), a script file before an inline
        one-liner, the first."""
        if self.fix_at is None:
            return None
        fix_at, last_fix = self.fix_at, self.last_fix or self.fix_at
        runs = [
            a
            for a in self.shell
            if self._is_script_run(a)
            and a.message_index not in self.fixes
            and (a.message_index < fix_at or (a.message_index < last_fix and self._shows_reported_error(a)))
            and not any(TIMED_OUT.search(e) for e in self._errs(a))  # a run cut off shows nothing yet
        ]

        def failed_to_start(a: Action) -> int:
            """0: it ran; 1: it failed for the environment or in the script's own code, and the
            agent never got past that (all a run could show); 2: it failed before reaching the code
            for a reason the agent then mended (a framework not set up, the script itself)."""
            errs = self._errs(a)
            if not errs:  # a command's own message of a framework not set up, no traceback: it failed as well
                return int(bool(self._out(a).exit_code and SETUP_ERROR.search(self._out(a).text)))
            if self._false_start(a, fix_at):
                return 2
            if self._shows_reported_error(a):
                return 0
            if any(SETUP_ERROR.search(e) for e in errs) or self._installed_after(a, errs):
                return 2
            return int(any(_environment_error(e) for e in errs) or self._script_bug(a, errs[-1]))

        ranked = sorted(
            (a for a in runs if failed_to_start(a) < 2),
            key=lambda a: (
                not self._shows_reported_error(a),
                failed_to_start(a),
                self._rerun_after_fix(a) is None,
                not REPRO_NAME.search(self._run_name(a) or ""),
                script_run(a.command) == "-",
                a.message_index,
            ),
        )
        for a in ranked:
            line = self._telling_line(a)
            if line:
                return a, line
        return None

    def _installed_after(self, a: Action, errs: list[str]) -> bool:
        """The run failed on a module the agent installed afterwards (``No module named 'pytz'``, then
        ``pip install pytz``): the environment, mended; the run showed nothing of the code. An install
        that timed out or found no such package mended nothing: the module missing is why the run failed."""
        missing = {m.split(".")[0].replace("_", "-").casefold() for e in errs for m in MISSING_MODULE.findall(e)}
        return bool(missing) and any(
            b.message_index > a.message_index
            and INSTALLS.search(b.command)
            and not INSTALL_FAILED.search(b.result)
            and bool(missing & {w.replace("_", "-").casefold() for w in PACKAGE_WORD.findall(b.command)})
            for b in self.shell
        )

    def _false_start(self, a: Action, fix_at: int) -> bool:
        """The run's error was gone when the agent ran the same script again before the fix: the
        agent mended its script (the bug is still there, the fix comes later), so the error was
        the script's, not the bug."""
        name, last = self._run_name(a), self._errs(a)[-1]
        return name not in (None, "-") and any(
            a.message_index < b.message_index < fix_at
            and self._run_name(b) == name
            and self._out(b).lines
            and re.sub(r"\d+", "N", last) not in {re.sub(r"\d+", "N", e) for e in self._errs(b)}
            for b in self.shell
        )

    def _telling_line(self, a: Action) -> str | None:
        """What a reproduction printed that matters: its error, else the line the fix changed, else
        its telling line; of a script for looking around (analyze_x.py), its error only. Not a line
        the script prints as written (a title, the agent's notes: `print("The issue is ...")`) nor
        one of the code the agent had listed (a script printing source lines)."""
        out = self._out(a)
        if not out.lines:
            return None
        errs = self._errs(a)
        if errs:  # what it died of; of a run the environment stopped, that too (its other lines are a traceback)
            return errs[-1]
        name = self._run_name(a) or ""
        if EXPLORATION_SCRIPT.search(name) or READS_SOURCE.search(self._script_text(a)):
            return None  # a look around: its lines are the code it read, or what the agent made of it
        said = frozenset(
            ln.strip() for ln in out.lines if len(ln.strip()) >= 12 and self._written_or_listed(a, ln.strip())
        )
        later = self._rerun_after_fix(a)
        changed = changed_line(out.lines, self._out(later).lines, self.task_words, said) if later is not None else None
        return changed or _value_line(out.lines, self.task_words, set(said))

    def _as_written(self, a: Action) -> set[str]:
        """The lines a check run printed as its script has them, outside a condition: titles and notes."""
        text = self._script_text(a)
        return {
            s
            for s in (ln.strip() for ln in self._out(a).lines)
            if len(s) >= 12 and s in text and not _printed_if(text, s, tried=True)
        }

    def _written_or_listed(self, a: Action, line: str) -> bool:
        """The line is in the script's own text (printed as written), or in what a look around
        printed before the run (a line of the project's code)."""
        text = self._script_text(a)
        if line in text:
            return not _printed_if(text, line)
        return any(b.message_index < a.message_index and line in b.result for b in self._listings)

    @cached_property
    def _listings(self) -> list[Action]:
        """The looks around: file views and read-only commands."""
        return [b for b in self.actions if b.op == "read" or b.op == "shell" and is_read_only(b.command)]

    def _script_text(self, a: Action) -> str:
        """The text of the script a run runs, as the agent wrote it before the run: an inline
        script's command, a heredoc's body, an editor's writes of the file."""
        name = self._run_name(a)
        if name == "-":
            return a.command
        if not name:
            return ""
        base = name.rsplit("/", 1)[-1]
        parts = []
        for b in self.actions:
            if b.message_index > a.message_index:
                break
            if b.op == "shell" and "<<" in b.command:
                for target, body in zip(shell_edits(b.command), heredoc_bodies(b.command), strict=False):
                    if target.rsplit("/", 1)[-1] == base:
                        parts.append(body)
            elif b.op == "edit" and b.path and b.path.rsplit("/", 1)[-1] == base:
                parts.append(b.new_text)
        return "\n".join(parts)

    def reproduction(self) -> Iterator[Fact]:
        if self._reproduction is not None:
            a, line = self._reproduction
            yield Fact(
                "reproduction",
                line,
                a.message_index + 1,
                f"What did `{named(a.command)}` print before the fix{self._raised_in(a, line)}?",
            )

    # -- test results -------------------------------------------------------------------------
    def test_results(self) -> Iterator[Fact]:
        """The suite run that names the tests of the fix (its last run after it) and the first suite
        run before the fix (the test command's outcome before and after), the reproduction run again
        after the fix, the widest suite run after it and the next that names tests, the verdict of
        the agent's own verification script, the failing tests, a suite that could not run; then the
        other suites' last runs."""
        fix = self.fix_at if self.fix_at is not None else -1
        when = "after the change" if fix >= 0 else "when the agent ran it"
        # a run with the change stashed ran the code without it: asked as such, neither after the change nor before
        stash = stashed_runs(self.shell)
        stashed = [a for a in self._suites() if a.message_index in stash and suite_summary(self._out(a).text)]
        suites = [a for a in self._suites() if a.message_index not in stash]
        summaries = {a.message_index: suite_summary(self._out(a).text) for a in suites}
        last_runs: dict[str, Action] = {}
        for a in suites:  # the last run of each suite after the fix (its options and pipes aside): the verification
            if a.message_index >= fix and summaries[a.message_index]:
                last_runs[self._suite_key(a, summaries[a.message_index] or "")] = a
        # a suite that reported failures once and passes at its last run (the tests the fix made pass) first; a run
        # that selected no test ("18 deselected in 0.04s", an id it did not find) after those that ran some
        failed_once = {
            self._suite_key(a, s) for a in suites if FAILED_COUNT.search(s := summaries[a.message_index] or "")
        }
        green = {a.message_index for key, a in last_runs.items() if key in failed_once}
        green -= {i for i in green if FAILED_COUNT.search(summaries[i] or "")}
        ranked = sorted(
            last_runs.values(),
            key=lambda a: (
                _ran_nothing(summaries[a.message_index] or ""),
                a.message_index not in green,
                not TEST_TARGET.search(a.command),
                -a.message_index,
            ),
        )
        widest = sorted(ranked, key=lambda a: -suite_size(summaries[a.message_index] or ""))
        suite_facts = {
            a.message_index: Fact(
                "test_result",
                summaries[a.message_index] or "",
                a.message_index + 1,
                f"What did `{named(a.command)}` report {when}?",
            )
            for a in ranked
        }
        before: list[Fact] = []
        earlier = [a for a in suites if summaries[a.message_index] and 0 <= a.message_index < fix]
        # the first run before the fix of the tests run last after it (their outcome before and after),
        # else the first run before the fix: what was failing
        same = [a for a in earlier if ranked and test_command(a.command) == test_command(ranked[0].command)]
        for a in [*same, *earlier][:1]:
            question = f"What did `{named(a.command)}` report before the change?"
            before.append(Fact("test_result", summaries[a.message_index] or "", a.message_index + 1, question))
        facts: list[Fact] = [suite_facts[a.message_index] for a in ranked[:1]]
        facts += before
        facts += self._rerun_fact()
        facts += [suite_facts[a.message_index] for a in [*widest[:1], *ranked[1:2]]]
        facts += self._verification({f.message_index - 1 for f in facts}, {norm_words(f.answer) for f in facts})
        facts += self._failing(suites, summaries, fix)
        facts += [
            Fact(
                "test_result",
                suite_summary(self._out(a).text) or "",
                a.message_index + 1,
                f"What did `{named(a.command)}` report with the change stashed?",
            )
            for a in stashed[-1:]
        ]
        not_run = self._suite_not_run(suites, summaries)
        # a suite that could not start on a module the agent installed afterwards: the environment, mended (the
        # error reader's noise); why it verified otherwise only after what its checks printed
        mended = [f for a, f in not_run if self._installed_after(a, self._errs(a))]
        facts += [f for _, f in not_run if f not in mended]
        facts += [suite_facts[a.message_index] for a in ranked[1:]]
        facts += self._checks({f.message_index - 1 for f in facts}, {norm_words(f.answer) for f in facts})
        facts += mended
        if not facts and fix >= 0:  # no suite, no verdict: what the last script run after the fix printed
            runs = [a for a in self._runs_after_fix() if not self._errs(a)]
            line = _value_line(self._out(runs[-1]).lines, self.task_words, self._as_written(runs[-1])) if runs else None
            if line:
                question = f"What did `{named(runs[-1].command)}` print after the change?"
                facts.append(Fact("test_result", line, runs[-1].message_index + 1, question))
        yield from dict.fromkeys(facts)

    @staticmethod
    def _suite_key(a: Action, summary: str) -> str:
        """Which suite a run runs, as its runs share it: the test command (options and pipes aside); of inline code
        (``python -c "...unittest..."``: each run's code differs, no name to tell them by), its first line and how
        many tests it counted: a module's 72 tests and one test of it are two suites, not one run and its rerun."""
        if script_run(a.command) == "-":
            return f"{named(a.command)} #{suite_size(summary)}"
        return test_command(a.command)

    def _suites(self) -> list[Action]:
        """The runs of a test suite: a test runner's command, or a script of the agent's whose output
        is a suite's (``unittest.main()`` in ``run_tests.py``: "Ran 11 tests ... FAILED (errors=1)")."""
        return [
            a
            for a in self.shell
            if runs_tests(a.command) or self._is_script_run(a) and suite_summary(self._out(a).text)
        ]

    def _runs_after_fix(self) -> list[Action]:
        """The agent's own script runs after the fix, not those that wrote the fix."""
        if self.fix_at is None:
            return []
        return [
            a
            for a in self.shell
            if a.message_index > self.fix_at and a.message_index not in self.fixes and self._is_script_run(a)
        ]

    def _rerun_fact(self) -> list[Fact]:
        """What the reproduction printed when run again after the fix: its verdict line, else the
        telling line that it did not print before (or the error it still raised)."""
        if self._reproduction is None:
            return []
        before, _ = self._reproduction
        after = self._rerun_after_fix(before)
        if after is None:
            return []
        out = self._out(after)
        errs = [e for e in self._errs(after) if not _environment_error(e)]
        verdicts = [] if errs or contradicted(out.lines) or out.exit_code else verdict_lines(out.lines)
        line = (
            errs[-1]
            if errs
            else self._best_verdict(verdicts, old=self._printed_before_fix(after))
            if verdicts
            else changed_line(out.lines, self._out(before).lines, self.task_words)
        )
        if not line:
            return []
        question = f"What did `{named(after.command)}` print after the change?"
        return [Fact("test_result", clip(line, 160), after.message_index + 1, question)]

    def _printed_before_fix(self, a: Action) -> set[str]:
        """The lines the same script printed when last run before the fix: a case that passed then
        ("SUCCESS: created with a list") says nothing of what the fix did."""
        name = self._run_name(a)
        if name in (None, "-") or self.fix_at is None:
            return set()
        before = [b for b in self.shell if b.message_index < self.fix_at and self._run_name(b) == name]
        return {ln.strip() for ln in self._out(before[-1]).lines} if before else set()

    def _best_verdict(
        self,
        lines: list[str],
        said: set[str] | frozenset[str] = frozenset(),
        old: set[str] | frozenset[str] = frozenset(),
    ) -> str:
        """The verdict line that names most of the task (what was fixed), then an "all passed" one;
        one that another fact does not say already (``said``: their words), where there is one
        (two scripts' "All tests passed!" are one answer to two questions), and one the same script did not print
        before the fix (``old``) where there is one."""
        lines = [ln for ln in lines if ln.strip() not in old] or lines
        lines = [ln for ln in lines if norm_words(clip(ln, 160)) not in said] or lines

        heads = Counter(h.group(0) for ln in lines if (h := CASE_HEAD.match(ln.strip())))

        def rank(line: str) -> tuple[bool, bool, bool, int, bool]:
            words = set(re.findall(r"\w+", line.lower()))
            overall = bool(VERDICT_WORD.search(line))
            case = bool(CASE_RESULT.search(line))  # one input's result ("'a.b@c' -> ASCII: PASS"), not the run's
            head = CASE_HEAD.match(line.strip())
            series = head is not None and heads[head.group(0)] > 1  # "✓ PASS: <case>" one of several
            everything = bool(re.search(r"\ball\b", line, re.I))
            return overall, not case, everything or not series, len(words & self.task_words), everything

        return max(reversed(lines), key=rank)

    def _verification(self, exclude: set[int], said: set[str]) -> list[Fact]:
        """The verdict of the last run of the agent's own verification script after the fix: first one whose
        same script reported a failure at an earlier run (what the fix made pass), else the last. Not inline code's
        verdict that names nothing ("Test passed!"): neither it nor its question (inline code, shown as `...`) says
        what was checked (the rubric's trivial kind; asking it last instead left it asked, where slots were free)."""
        runs = [a for a in self._runs_after_fix() if a.message_index not in exclude]
        for a in sorted(runs, key=lambda a: (self._failed_earlier(a) is None, -a.message_index)):
            out = self._out(a)
            if self._failed(a):
                continue  # it reported a failure, or exited with one
            cases = per_case(out.lines)
            verdicts = [v for v in verdict_lines(out.lines) if v not in cases]
            if verdicts:
                question = f"What did `{named(a.command)}` print after the change?"
                verdict = clip(self._best_verdict(verdicts, said, self._old_lines(a)), 160)
                if self._run_name(a) == "-" and NAMES_NOTHING.fullmatch(verdict):
                    continue
                return [Fact("test_result", verdict, a.message_index + 1, question)]
        return []

    def _failed(self, a: Action) -> bool:
        """The run raised an error, reported a failure or exited with one."""
        out = self._out(a)
        return bool(self._errs(a) or contradicted(out.lines) or out.exit_code)

    def _failed_earlier(self, a: Action) -> Action | None:
        """The last earlier run of the same script file, when that one failed (``_failed``) after the first edit of
        the fix, this one passes after its last and an edit of the fix came between them: the check the finished
        fix made pass, where the first attempt fell short (not a script the agent mended)."""
        if id(a) in self._failed_before:
            return self._failed_before[id(a)]
        found = None
        name = self._run_name(a)
        if name not in (None, "-") and self.fix_at is not None and a.message_index >= (self.last_fix or 0):
            earlier = [b for b in self._runs_by_name.get(name, []) if b.message_index < a.message_index]
            b = earlier[-1] if earlier else None
            if (
                b is not None
                and b.message_index >= self.fix_at
                and not self._failed(a)
                and self._failed(b)
                and any(b.message_index < f < a.message_index for f in self.fixes)
            ):
                found = b
        self._failed_before[id(a)] = found
        return found

    @cached_property
    def _runs_by_name(self) -> dict[str, list[Action]]:
        """The runs of each script (not those that wrote the fix), in order."""
        out: dict[str, list[Action]] = {}
        for b in self.shell:
            name = self._run_name(b)
            if name and b.message_index not in self.fixes:
                out.setdefault(name, []).append(b)
        return out

    def _old_lines(self, a: Action) -> set[str]:
        """What the same script printed before the fix or at an earlier run that failed: no news of what passes."""
        failed = self._failed_earlier(a)
        return self._printed_before_fix(a) | ({ln.strip() for ln in self._out(failed).lines} if failed else set())

    def _checks(self, exclude: set[int], said: set[str]) -> list[Fact]:
        """What each other script of the agent's printed when last run after the fix, first those the finished fix
        made pass (``_failed_earlier``), then latest first: its verdict, else its telling line (edge cases checked
        by scripts that state no verdict);
        not the reproduction's reruns, scripts for looking around, or runs that raised an error."""
        repro = self._run_name(self._reproduction[0]) if self._reproduction is not None else None
        last: dict[str, Action] = {}
        for a in self._runs_after_fix():
            name = self._run_name(a)
            if name and name not in ("-", repro) and not EXPLORATION_SCRIPT.search(name):
                last[name] = a
        out: list[Fact] = []
        said = set(said)
        for a in sorted(last.values(), key=lambda a: (self._failed_earlier(a) is None, -a.message_index)):
            printed = self._out(a)
            if a.message_index in exclude or self._errs(a) or not printed.lines:
                continue
            failed = contradicted(printed.lines) or printed.exit_code
            cases = per_case(printed.lines)
            stated = [] if failed else verdict_lines(printed.lines)
            # where the run states no verdict of its own and no case failed, a case's that says it is fixed
            verdicts = [v for v in stated if v not in cases] or [v for v in stated if CASE_FIXED.search(v)]
            line = (
                self._best_verdict(verdicts, said, self._old_lines(a))
                if verdicts
                else _value_line(printed.lines, self.task_words, cases | self._as_written(a))
                if len(printed.lines) <= 3
                else self._changed_by_fix(a)
            )
            if line:
                question = f"What did `{named(a.command)}` print after the change?"
                out.append(Fact("test_result", clip(line, 160), a.message_index + 1, question))
                said.add(norm_words(clip(line, 160)))
                if not verdicts:
                    self.values_only.add(question)
        return out

    def _changed_by_fix(self, a: Action) -> str | None:
        """Of a check run after a fix edit, the line the edit changed: what the same script, as written then, printed
        when last run before that edit (between two edits of the fix, or before the first) does not print in its place.
        None when the script was rewritten between the two runs (the change may be the script's), died with an error
        then, or did not run before."""
        name, text = self._run_name(a), self._script_text(a)
        for b in reversed(self.shell):
            if b.message_index >= a.message_index or self._run_name(b) != name or not self._out(b).lines:
                continue
            if not any(b.message_index < f < a.message_index for f in self.fixes) or b.message_index in self.fixes:
                return None  # its last run before this one: no fix edit between them
            if self._script_text(b) != text or self._errs(b):
                return None  # rewritten, or it died before: what follows its error is new, none of it the change
            return changed_line(self._out(a).lines, self._out(b).lines, self.task_words, frozenset(self._as_written(a)))
        return None

    def _failing(self, suites: list[Action], summaries: dict[int, str | None], fix: int) -> list[Fact]:
        """Which test failed: in the first run before the fix that reports failures, and in the
        last run after it when that one still does."""
        ran = [a for a in suites if summaries[a.message_index] or failing_tests(self._out(a).text)]
        first = next((a for a in ran if 0 <= a.message_index < fix and failing_tests(self._out(a).text)), None)
        after = [a for a in ran if a.message_index >= fix]
        last = after[-1:]
        out = []
        for a, when in ((first, "before"), (last[0] if last else None, "after")):
            ids = failing_tests(self._out(a).text) if a is not None else []
            if a is not None and ids:
                question = f"Which test failed when the agent ran `{named(a.command)}` {when} the change?"
                out.append(Fact("test_result", ids[0], a.message_index + 1, question))
        between = self._failed_then_passed(after, summaries)
        if between is not None:
            question = (
                f"Which test failed when the agent ran `{named(between.command)}` after the change, before it passed?"
            )
            out.append(
                Fact("test_result", failing_tests(self._out(between).text)[0], between.message_index + 1, question)
            )
        return out

    def _failed_then_passed(self, after: list[Action], summaries: dict[int, str | None]) -> Action | None:
        """Of the suite runs after the fix, the last that reported a failing test when a later run of the same suite
        passed: the test a first version of the fix broke (or did not yet mend), which the finished fix made pass
        (Django's "FAIL: test_parsing_year_less_than_70" between two "Ran 5 tests ... OK")."""
        for n in range(len(after) - 2, -1, -1):
            a = after[n]
            ids = failing_tests(self._out(a).text)
            if not ids:
                continue
            key = self._suite_key(a, summaries[a.message_index] or "")
            if any(
                self._suite_key(b, s := summaries[b.message_index] or "") == key
                and s
                and not FAILED_COUNT.search(s)
                and not failing_tests(self._out(b).text)
                for b in after[n + 1 :]
            ):
                return a
        return None

    def _suite_not_run(self, suites: list[Action], summaries: dict[int, str | None]) -> list[tuple[Action, Fact]]:
        """The last run of the project's suite (a test runner's command) that could not start (an
        error, no summary; not mended at once, ``_mended_at_once``) when no runner ran after it: why the
        agent verified otherwise, by its own scripts (a script of its own running unittest is no run
        of the project's suite). With the run, to tell one that died on a module installed afterwards."""
        runners = [a for a in suites if runs_tests(a.command)]
        ran = [a.message_index for a in runners if summaries[a.message_index]]
        for a in reversed(runners):
            errs = self._errs(a)
            if summaries[a.message_index] or not errs:
                continue
            if any(i > a.message_index for i in ran):
                return []
            question = f"What did `{named(a.command)}` report?"
            return [(a, Fact("test_result", clip(errs[-1], 160), a.message_index + 1, question))]
        return []

    # -- errors seen --------------------------------------------------------------------------
    def errors_seen(self) -> Iterator[Fact]:
        """Distinct errors the agent ran into (shell runs, editor and tool calls): one before the
        fix and one after it first. Not: a missing module it installed right after, a typo in its
        own throwaway script, an exploratory one-liner's error, a syntax error its own edit made,
        a bare exception name."""
        seen: set[str] = set()
        found_in: list[tuple[Fact, bool]] = []  # each error, and whether a run of the code printed it
        thrown: list[Fact] = []  # errors of throwaway scripts the agent walked away from: asked late
        mended: list[Fact] = []  # errors the agent's next command mended (an install, a flag): asked last
        installs = " ".join(
            a.command for a in self.shell if re.search(r"\b(?:pip|conda|apt(?:-get)?) install\b", a.command)
        )
        for n, a in enumerate(self.actions):
            if a.op == "shell" and is_read_only(a.command) or not a.result or self._fixed_next(n):
                continue
            if a.op == "edit" and (a.message_index, a.tool) in self._shell_edit_at:
                continue  # a file the shell command wrote: its output is the command's, read once
            if a.op == "answer" and len(a.result) > 500:
                continue  # a submission's echo (the diff); a rejection ("Wrong flag!") is short
            found = self._errs(a)
            # the last error is what it died of; a failed build's first error is why
            for line in found[:1] if found and MAKE_RECIPE.match(found[-1]) else found[-1:]:
                norm = re.sub(r"\d+", "N", line)
                if norm in seen or self._noise(a, line, installs):
                    continue
                if self._got_past(n, line) or a.op == "shell" and self._blamed_own_script(a, line):
                    continue
                seen.add(norm)
                what = f"`{named(a.command)}`" if a.op == "shell" else f"the agent's `{a.tool}` call"
                if a.op == "edit" and a.path:
                    what = f"the agent's edit of {a.path}"
                where = self._raised_in(a, line) if a.op == "shell" else ""
                fact = Fact("error", clip(line, 160), a.message_index + 1, f"What error did {what} show{where}?")
                if self._mended_at_once(n) or self._runner_superseded(a, line):
                    mended.append(fact)
                    continue
                if a.op == "shell" and self._abandoned(a, line):
                    thrown.append(fact)
                    continue
                found_in.append((fact, a.op == "shell" and not _environment_error(line)))
        runs = [f for f, run in found_in if run]
        later = [f for f in runs if self.fix_at is not None and f.message_index > self.fix_at]
        env = [f for f, _ in found_in if _environment_error(f.answer)]
        # what went wrong first, where things stood last, the first trouble after the fix; the
        # code's errors before the editor's and tools' refusals, the environment's last
        ordered = [
            *runs[:1],
            *runs[-1:],
            *later[:1],
            *runs,
            *[f for f, _ in found_in if f not in env],
            *env,
            *thrown,
            *mended,
        ]
        yield from dict.fromkeys(ordered)

    def _fixed_next(self, n: int) -> bool:
        """The agent got past the error within its next few actions: the same edit of the same file
        went through, or the same command ran clean (as it was; or, as the very next command, with more
        to it: a flag added, a stale file removed first). A slip, not a fact to carry."""
        a = self.actions[n]
        for b in self.actions[n + 1 : n + 4]:
            if a.op == "edit" and b.op == "edit" and same_file(a.path or "", b.path or ""):
                return b.ok  # the next edit of the file went through; a refused retry is no slip
            if a.op == "shell" and b.op == "shell" and b.command == a.command and not self._errs(b):
                return True
        nxt = self.actions[n + 1] if n + 1 < len(self.actions) else None
        return nxt is not None and a.op == "shell" and nxt.op == "shell" and self._rerun_clean(a, nxt)

    def _mended_at_once(self, n: int) -> bool:
        """The agent's very next command installed what stopped the ``n``-th one, and the retry got past
        it: the environment mended at once (the rubric's trivial kind), asked only when no other error is."""
        b = self.actions[n + 1] if n + 1 < len(self.actions) else None
        return b is not None and self.actions[n].op == "shell" and b.op == "shell" and self._mended_by_install(n, b)

    def _mended_by_install(self, n: int, b: Action) -> bool:
        """``b`` installed what the ``n``-th action said was missing (any install, when its error names no
        module), the install went through (it printed, exited 0 or said no exit code, and no installer's
        failure), and the agent's next run of the same command or script no longer failed that way."""
        a = self.actions[n]
        if not INSTALLS.search(b.command) or not self._retried_past(n, b):
            return False
        missing = {
            m.split(".")[0].replace("_", "-").casefold() for e in self._errs(a) for m in MISSING_MODULE.findall(e)
        }
        words = {w.replace("_", "-").casefold() for w in PACKAGE_WORD.findall(b.command)}
        if missing and not missing & words and not re.search(r"\s-e\s+\.|\s\.(?:\s|$)", b.command):
            return False  # another package, not the missing one nor the project itself (`pip install -e .`)
        out = self._out(b)
        return bool(out.lines) and out.exit_code in (None, 0) and not INSTALL_FAILED.search(b.result)

    def _retried_past(self, n: int, install: Action) -> bool:
        """The first run after ``install`` of the ``n``-th action's command (its words, or its script) did
        not print its error again."""
        a = self.actions[n]
        script = script_run(a.command)
        last = re.sub(r"\d+", "N", self._errs(a)[-1]) if self._errs(a) else ""
        for c in self.actions[self.actions.index(install) + 1 : n + 8]:
            same = (
                set(a.command.split()) <= set(c.command.split())
                or script not in (None, "-")
                and script_run(c.command) == script
            )
            if c.op == "shell" and same and c.result:
                return last not in {re.sub(r"\d+", "N", e) for e in self._errs(c)}
        return False

    def _rerun_clean(self, a: Action, b: Action) -> bool:
        """``b`` runs ``a``'s command again with more to it (a flag added, a stale file removed first), every
        word of it (a test runner's narrower rerun aside: its failures are results), and printed no error."""
        if runs_tests(a.command) or not set(a.command.split()) < set(b.command.split()):
            return False
        return not self._errs(b) and bool(b.result)

    def _noise(self, a: Action, line: str, installs: str) -> bool:
        misnamed = MISNAMED.search(line)
        if a.op == "shell" and misnamed and _base_name(next(g for g in misnamed.groups() if g)) in a.command:
            return True  # a test id, file or backup the command named that is not there: its own slip
        missing = re.search(r"No module named '?([\w.]+)", line)
        if missing and missing.group(1).split(".")[0].replace("_", "-") in installs.replace("_", "-"):
            return True  # installed right after (lazy_object_proxy as lazy-object-proxy): the environment, fixed
        if re.search(r'File "([^"]+)", line \d+, in \S+ raise \w', line) and self._own_script(line):
            return True  # the agent's own script raising on purpose (checking an error path)
        if re.fullmatch(r"[\w.]*(?:Error|Exception)", line.strip()):
            return True  # a bare exception name says nothing
        if a.op == "shell" and self._script_bug(a, line):
            return True
        script = script_run(a.command) if a.op == "shell" else None
        if script and EXPLORATION_SCRIPT.search(script) and not self._shows_reported_error(a):
            return True  # a debugging or exploration script's error is exploration output
        if script and SETUP_ERROR.search(line) and self._own_run(a, script):
            return True  # its own script not set up (settings, a mock or a model in __main__): the script's setup
        if script and self._own_run(a, script) and self._own_setting_failed(a, line):
            return True  # what its own script's settings named could not load (an app or backend it made up)
        if script and missing and self._own_run(a, script) and self._project_package(missing.group(1)):
            return True  # its own script run where the project is not importable (from /tmp): a path slip
        slip = re.search(r"\b(?:SyntaxError|IndentationError|TabError)\b", line)
        if slip and any(self._edited_before(p, a.message_index) for p in re.findall(r'File "([^"]+)"', line)):
            return True  # the agent's own edit broke the file's syntax: a slip its next edit mends
        if UNDEFINED.search(line) and self._undefined_by_own_edit(a):
            return True  # a name its own edit of the file left undefined (an import it forgot), mended next
        if a.op != "shell":
            return False
        script = script_run(a.command)
        own = script == "-" or (script is not None and is_scratch(script))
        typo = re.match(r"(?:\S+ )*(?:SyntaxError|IndentationError|TabError|NameError)\b", line.split(" in ")[-1])
        in_source = any(same_file(path, p) for p in re.findall(r'File "([^"]+)"', line) for path in self.fix_paths)
        if script == "-" and ASKS_MODULE.search(a.command) and _environment_error(line):
            return False  # `python -c "import pytest"` failing: what the environment lacks, not a slip
        return own and not in_source and bool(typo or script == "-")

    def _own_setting_failed(self, a: Action, line: str) -> bool:
        """The error is a module or backend that would not load, named as the agent's own script sets it
        (``INSTALLED_APPS=['test_app']``, ``'ENGINE': 'django.db.backends.dummy'``): the script's setup."""
        if not LOAD_FAILED.search(line):
            return False
        text = self._script_text(a)
        return any(
            re.search(rf"""['"]{re.escape(name)}(?:\.[\w.]*)?['"]""", text) for name in QUOTED_NAME.findall(line)
        )

    def _project_package(self, module: str) -> bool:
        """The module is the project's own top-level package (``django`` of ``django/db/models/query.py``)."""
        top = module.split(".")[0]
        return any(re.search(rf"(?:^|/){re.escape(top)}/", path) for path in self.fix_paths)

    def _undefined_by_own_edit(self, a: Action) -> bool:
        """A ``NameError`` raised in a file the agent edited before the run, whose next edit (within its
        next few actions) is of that file: a slip of its own edit, mended at once."""
        if a.op != "shell" or self._shows_reported_error(a):
            return False
        frames = FRAME_FILE.findall(self._out(a).text)
        if not frames or not self._edited_before(frames[-1], a.message_index):
            return False
        n = self.actions.index(a)
        edits = [b for b in self.actions[n + 1 : n + 5] if b.op == "edit"]
        return bool(edits) and same_file(edits[0].path or "", frames[-1])

    def _own_run(self, a: Action, script: str) -> bool:
        """A run of a script the agent wrote (a file it made, a scratch name, inline code), not of the
        project's test runner."""
        name = script.rsplit("/", 1)[-1]
        return not runs_tests(a.command) and (script == "-" or name in self.made or is_scratch(script))

    def _got_past(self, n: int, line: str) -> bool:
        """The agent's own script could not start (a framework's settings not set up, a module it
        needs missing) and a later run of the same script got past that: the agent mended its
        script, the error was of its setup, not of the code."""
        a = self.actions[n]
        if a.op != "shell" or not _harness_error(line) or "command not found" in line or runs_tests(a.command):
            return False  # a missing interpreter (python, not python3) changed how the agent ran it
        script = script_run(a.command)
        if script in (None, "-"):
            return False
        later = [b for b in self.actions[n + 1 :] if b.op == "shell" and b.result and script_run(b.command) == script]
        return any(not any(_harness_error(e) for e in self._errs(b)) for b in later)

    def _blamed_own_script(self, a: Action, line: str) -> bool:
        """The agent's next words after a run of its own script put the error on that script ("There's a bug in my
        test.", "Let me fix the test script:"): the script's, not the code's. Not the environment's error (a module
        missing is asked apart, whatever the agent makes of it) nor the one the task reports."""
        script = script_run(a.command)
        if script is None or not self._own_run(a, script) or _environment_error(line) or self._shows_reported_error(a):
            return False
        said = self._reply_at
        nxt = bisect_right(said, a.message_index)
        return nxt < len(said) and bool(OWN_FAULT.search(self.replies[said[nxt]]))

    @cached_property
    def _reply_at(self) -> list[int]:
        return sorted(self.replies)

    def _runner_superseded(self, a: Action, line: str) -> bool:
        """A test runner that could not start (``No module named pytest``, Django's settings not set up) where a
        later runner's run counted tests: the suite ran another way, and that way is what carries on (asked as a
        test result). Not the agent's own script whose output is a suite's: the project's tests did not run."""
        if a.op != "shell" or not runs_tests(a.command) or not _harness_error(line):
            return False
        return a.message_index < self._last_counted_run

    @cached_property
    def _last_counted_run(self) -> int:
        """Where a test runner's run last counted tests (-1: never)."""
        counted = [
            b.message_index
            for b in self.shell
            if runs_tests(b.command)
            and suite_size(suite_summary(self._out(b).text) or "") > 0
            and not _harness_error(" ".join(self._errs(b)[-1:]))
        ]
        return max(counted, default=-1)

    def _abandoned(self, a: Action, line: str) -> bool:
        """A throwaway script's error the agent walked away from: a script of its own (one it wrote
        that the change does not keep, or named as scratch) run this once only, whose run shows
        neither the error the task reports nor a failed assert (a finding) nor a suite's result,
        and whose error is not the environment's (asked apart)."""
        script = script_run(a.command)
        if script in (None, "-") or _environment_error(line):
            return False
        name = script.rsplit("/", 1)[-1]
        if not (name in self.made or is_scratch(script)) or any(same_file(name, f) for f in self.fix_paths):
            return False
        if self._shows_reported_error(a) or suite_summary(self._out(a).text):
            return False
        if self._rewrote_script(a):
            return True  # a failed assert too: the agent mended its script's expectation, not the code
        runs = sum((script_run(b.command) or "").rsplit("/", 1)[-1] == name for b in self.shell)
        return runs == 1 and "AssertionError" not in line

    def _rewrote_script(self, a: Action) -> bool:
        """The agent's next step after the run writes a script of its own (the same one, or a new one), not the
        project's code: the run showed its script's misuse of the code (a call it got wrong, a setup it left out),
        and the agent moved past it by changing the script. Not a script that digs into the error (``debug_x.py``)
        nor one whose run writes the fix (``update_impl.py``): the error was a finding."""
        at = self._action_at
        start = bisect_right(at, a.message_index)
        step = [b for b in self.actions[start:] if b.message_index == at[start]] if start < len(at) else []
        edits = [b for b in step if b.op == "edit" and b.ok and b.path]  # a heredoc's write comes with its command
        return bool(edits) and all(self._own_script_rewrite(b.path or "") for b in edits)

    @cached_property
    def _action_at(self) -> list[int]:
        """Each action's message index, in the actions' order (they are read in message order)."""
        return [b.message_index for b in self.actions]

    @cached_property
    def _fixing_scripts(self) -> set[str | None]:
        """The scripts whose runs wrote the fix (``python update_impl.py``)."""
        return {self._run_name(b) for b in self.shell if b.message_index in self.writes}

    def _own_script_rewrite(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        if name not in self.made or any(same_file(path, f) for f in self.fix_paths):
            return False
        return not EXPLORATION_SCRIPT.search(name) and not any(same_file(name, f or "") for f in self._fixing_scripts)

    def _raised_in(self, a: Action, line: str) -> str:
        """Where the project's code raised the error a run printed, when its answer does not say:
        " (raised in `f`, schema.py line 894: `value = data[name]`)". The innermost frame outside
        installed code, and the line of code it ran (Python 3.11's ``~~~^^^`` markers under that
        line keep it out of the answer, which is quoted verbatim)."""
        if ", line " in line or not self._errs(a) or self._errs(a)[-1] != line:
            return ""
        text = self._out(a).text
        frames = [m for m in PROJECT_FRAME.finditer(text) if not INSTALLED_FRAME.search(m.group(1))]
        if not frames:
            return ""
        path, number, function = frames[-1].groups()
        script = script_run(a.command) or ""
        if is_scratch(path) or (script not in ("", "-") and same_file(path, script)) or path.startswith("<"):
            return ""  # the agent's own script: the line that called the code, not where it broke
        code = text[frames[-1].end() :].lstrip("\n").split("\n", 1)[0].strip()
        ran = f": `{code}`" if 0 < len(code) <= CODE_MAX and "`" not in code and not CODE_FREE.match(code) else ""
        return f" (raised in `{function}`, {path.rsplit('/', 1)[-1]} line {number}{ran})"

    def _script_bug(self, a: Action, line: str) -> bool:
        """The agent's own script crashed in its own code (its innermost frame): the script's bug,
        not the code's; a failed assert is a finding, the error the task reports is the bug."""
        if re.search(r"\bAssertionError\b", line):
            return False
        frames = FRAME_FILE.findall(self._out(a).text)
        return bool(frames) and self._own_script(f'File "{frames[-1]}"') and not self._shows_reported_error(a)

    def _own_script(self, line: str) -> bool:
        """The error's frame is in a script the agent wrote (not a file of its fix)."""
        frame = re.search(r'File "([^"]+)"', line)
        if frame is None or any(same_file(frame.group(1), f) for f in self.fix_paths):
            return False
        return any(a.op == "edit" and same_file(a.path or "", frame.group(1)) for a in self.actions)

    def _edited_before(self, path: str, at: int) -> bool:
        """The agent wrote the file before message ``at`` (an edit, or a script that fixed it)."""
        if any(
            a.op == "edit" and a.ok and a.message_index < at and same_file(a.path or "", path) for a in self.actions
        ):
            return True
        return any(same_file(path, f) for f in self.fix_paths) and any(i < at for i in self.writes)

    def _is_script_run(self, a: Action) -> bool:
        known = self._script_runs.get(id(a))
        if known is None:
            known = self._script_runs[id(a)] = self._runs_a_script(a)
        return known

    def _runs_a_script(self, a: Action) -> bool:
        if runs_tests(a.command) or is_read_only(a.command):
            return False
        script = script_run(a.command)
        if script is None:
            return tool_run(a.command, self.made) is not None
        return (
            script == "-"
            or is_scratch(script)
            or script.endswith((".py", ".js", ".sh", ".pony", ".rb"))
            or f"./{script}" in a.command  # a program it built or was given: ./a.out, ./rock
        )


def _base_name(path: str) -> str:
    """The last part of a path or test id as a command may spell it (`.../test_x.py::T::test_y` -> `test_y`)."""
    return re.split(r"[/:]", path.rstrip("/"))[-1]
