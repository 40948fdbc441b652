"""Reading a shell command the way an engineer would: what it runs (heredoc bodies apart), whether
it only looks around (``ls``, ``grep``, ``cat``: its string holds nothing of what it printed), and
whether it runs tests or a script the agent wrote."""

from __future__ import annotations

import re
from collections.abc import Callable

# `<<EOF`, `<< 'EOF'`, `<<-"PY"`: the body runs to a line holding only the delimiter.
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")
SEGMENT = re.compile(r"&&|\|\||[;|\n]")
READ_ONLY = {
    "ls", "ll", "find", "grep", "egrep", "rg", "ag", "cat", "head", "tail", "sed", "awk", "pwd", "cd", "echo", "wc",
    "tree", "less", "more", "nl", "file", "stat", "which", "whereis", "type", "du", "df", "sort", "uniq", "cut",
    "diff", "git", "locate", "realpath", "dirname", "basename", "printf", "true", "xargs", "env", "export", "source",
    "task_tracker", "view", "think", "clear", "history", "man", "help", "date", "id", "whoami", "uname", "ps",
}  # fmt: skip
# Commands that run a test suite: their output's summary is a test result.
TEST_RUNNER = re.compile(
    r"(?:^|[\s/;&|(])(?:py\.?test|pytest|tox|nox|runtests\.py|manage\.py\s+test|unittest|nosetests|"
    r"django(?:-admin)?\s+test|setup\.py\s+test|bin/test|"
    r"go\s+test|cargo\s+test|npm\s+(?:run\s+)?test|yarn\s+test|jest|mocha|mvn\s+test|gradle\w*\s+test|"
    r"make\s+(?:test|check)|ctest|phpunit|rspec|bundle\s+exec\s+rspec|vitest|nose2|pnpm\s+(?:run\s+)?test|"
    r"bun\s+test|dotnet\s+test|swift\s+test|mix\s+test|sbt\s+test|rake\s+(?:test|spec)|deno\s+test|"
    r"cargo\s+nextest|bazel(?:isk)?\s+test|(?:dart|flutter)\s+test|prove|(?:stack|cabal)\s+test|lein\s+test)\b(?!\.\w)"
)
INSTALLS = re.compile(
    r"\b(?:pip\d?|conda|mamba|uv|apt(?:-get)?|npm|yarn|pnpm|brew|poetry|cargo|gem)\s+(?:install|add)\b"
)
QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
# Names agents give throwaway scripts (reproductions, checks, debugging).
# `temp` only as a word of its own (temp.py, temp_check.py), not `template` or `temperature`.
SCRATCH_NAME = re.compile(
    r"(?:^|[/_.-])(?:repro\w*|reproduc\w*|debug\w*|scratch\w*|temp(?:orary)?(?![a-z])\w*|tmp\w*|check_\w+|verify\w*|demo\w*|try\w*|"
    r"test_(?:issue|fix|bug|repro\w*|pr|simple\w*|comprehensive\w*|edge\w*|standalone|final\w*|my\w*|script\w*|"
    r"direct\w*|minimal\w*|original\w*|quick\w*|manual\w*|basic)\b\w*|issue\w*|example\w*|sanity\w*|patch\.txt)"
    r"|^/tmp/|(?:^|/)test\.\w+$",
    re.IGNORECASE,
)


def strip_heredocs(command: str) -> str:
    """The command with heredoc bodies removed: a script written through ``cat > f << 'EOF'`` or
    run through ``python - << 'PY'`` is data, not more shell commands."""
    lines = command.split("\n")
    out: list[str] = []
    ending: list[str] = []
    for line in lines:
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        out.append(line)
        ending = [m.group(2) for m in HEREDOC.finditer(line)]
    return "\n".join(out)


def heredoc_bodies(command: str) -> list[str]:
    """The bodies of the command's heredocs, in order."""
    bodies: list[str] = []
    lines = command.split("\n")
    i = 0
    while i < len(lines):
        delimiters = [m.group(2) for m in HEREDOC.finditer(lines[i])]
        i += 1
        for delimiter in delimiters:
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != delimiter:
                body.append(lines[i])
                i += 1
            i += 1
            bodies.append("\n".join(body))
    return bodies


def words_of(segment: str) -> list[str]:
    return segment.replace("(", " ").replace(")", " ").split()


def program_words(command: str) -> list[str]:
    """The program each segment of the command runs (``cd x && python y`` -> cd, python)."""
    out = []
    for segment in SEGMENT.split(strip_heredocs(command)):
        words = [w for w in words_of(segment) if "=" not in w or w.startswith("-")]  # VAR=x prefixes
        words = _drop_while(words, lambda w: w in ("sudo", "time", "timeout", "nohup", "env", "exec") or w.isdigit())
        if words:
            out.append(words[0].rsplit("/", 1)[-1])
    return out


def is_read_only(command: str) -> bool:
    """Only looks around: every program it runs lists, searches or prints (``sed -i`` edits)."""
    programs = program_words(command)
    if not programs or "sed -i" in command or re.search(r"(?<![<>&\d])>{1,2}\s*[^\s&]", strip_heredocs(command)):
        return False
    if "git" in programs and re.search(r"\bgit\s+(?:apply|checkout|commit|stash|reset|am|cherry-pick)\b", command):
        return False
    return all(p in READ_ONLY for p in programs)


# Runners named by the program alone; others by a subcommand (`go test`, `npm run test`, `make check`).
RUNNER_PROGRAMS = {
    "pytest", "py.test", "pytest-3", "tox", "nox", "nosetests", "nose2", "unittest", "runtests.py", "jest", "mocha",
    "vitest", "ctest", "phpunit", "rspec", "trial", "ava", "karma", "behave", "prove",
}  # fmt: skip
SUBCOMMAND_RUNNERS = {
    "go", "cargo", "dotnet", "swift", "mix", "sbt", "bun", "deno", "stack", "cabal", "zig", "bazel", "bazelisk", "dart",
    "flutter", "lein",
}  # fmt: skip
BUILD_GOALS = re.compile(r"^(?::?[\w-]+:)*(?:test|check|verify|integrationTest)$")  # mvn/gradle (`:core:test`)
# A suite's own program (not an agent's `./test` built from test.c): run_tests.sh, libponyc.tests, unit_tests.
TEST_BINARY = re.compile(r"run[_-]?tests?(?:\.sh)?|unit[_-]?tests|[\w-]+[._]tests|[\w-]+_unittests?")
# Asking a runner about itself, or only listing or building the tests: nothing ran.
NO_RUN_FLAGS = {
    "--help", "-h", "--version", "--collect-only", "--co", "--no-run", "--list", "--listenvs", "--listTests",
    "--list-tests", "-list", "--fixtures", "--markers",
}  # fmt: skip
# Wrappers ahead of the program a segment runs: `timeout 300 pytest`, `npx jest`, `xargs -n1 pytest`.
WRAPPERS = {"sudo", "time", "nohup", "exec", "nice", "env", "xargs", "npx", "pnpx", "bunx", "command", "timeout"}
EXEC_WRAPPERS = {"bundle", "pnpm", "yarn"}  # `bundle exec rspec`
RUN_WRAPPERS = {"poetry", "uv", "pipenv", "pdm", "hatch", "rye", "conda", "pixi", "coverage"}  # `poetry run pytest`
# An inline script that runs a suite: `python -c "import pytest; pytest.main([...])"`, unittest's runner,
# Django's (`get_runner(settings)().run_tests([...])`).
INLINE_SUITE = re.compile(
    r"\b(?:pytest|unittest)\.main\(|call_command\(\s*['\"]test['\"]|\bTextTestRunner\(|\bget_runner\(|"
    r"\bDiscoverRunner\(|\.run_tests\(|\bdoctest\.testmod\(|\bTestLoader\(\)"
)


DURATION = re.compile(r"\d+\w?")  # timeout's first argument: 60, 5m


def _wrapper_option(timeout: bool) -> Callable[[str], bool]:
    """A wrapper's option (``nice -n``), or timeout's duration."""
    return lambda w: w.startswith("-") or timeout and bool(DURATION.fullmatch(w))


def _drop_while(words: list[str], keep_going: Callable[[str], bool]) -> list[str]:
    """The words from the first one ``keep_going`` refuses (one slice: slicing off a word at a time is
    quadratic on a command of thousands of ``A=1`` words)."""
    return words[next((n for n, w in enumerate(words) if not keep_going(w)), len(words)) :]


def _run_words(segment: str) -> list[str]:
    """The words of what a segment runs, wrappers and interpreter left out: ``timeout 60 python -m
    pytest -x t.py`` -> pytest -x t.py; ``bash -c 'cd w && go test'``'s second segment -> go test.
    Empty for an inline script (``python -c``)."""
    words = [w.strip("'\"`") for w in words_of(segment)]
    words = [w for w in words if w]
    while words:
        head = words[0].rsplit("/", 1)[-1]
        if "=" in words[0] and not words[0].startswith("-"):
            words = _drop_while(words, lambda w: "=" in w and not w.startswith("-"))  # VAR=x
        elif head in WRAPPERS:
            words = _drop_while(words[1:], _wrapper_option(head == "timeout"))
        elif words[1:2] == ["run"] and head in RUN_WRAPPERS or words[1:2] == ["exec"] and head in EXEC_WRAPPERS:
            words = words[2:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-n", "-p", "--name", "-e", "--env") else words[1:]
        elif head in ("yarn", "pnpm") and len(words) > 1 and words[1] in RUNNER_PROGRAMS:
            words = words[1:]  # `yarn jest`
        elif head in ("bash", "sh", "zsh") and len(words) > 1 and re.fullmatch(r"-\w*c\w*", words[1]):
            words = words[2:]
        elif re.fullmatch(r"python[\d.]*", head):
            options = []
            at = 1
            while at < len(words) and words[at].startswith("-") and words[at] != "-m":
                options.append(words[at])
                at += 2 if words[at] in ("-W", "-X") else 1  # and the option's value
            words = words[at:]
            if "-c" in options or any(o.startswith("-") and not o.startswith("--") and "c" in o for o in options):
                return []
            if words[:1] == ["-m"]:
                words = words[1:]
        else:
            break
    return words


def _runs_suite(words: list[str]) -> bool:
    """The words (wrappers left out) run a test suite."""
    if not words:
        return False
    name, rest = words[0].rsplit("/", 1)[-1], words[1:]
    args = [w for w in rest if not w.startswith("-")]
    if any(w in NO_RUN_FLAGS for w in rest) or "--" in rest and "--list" in rest:
        return False
    if name in ("pytest", "py.test", "pytest-3") and "-V" in rest or name == "tox" and "-l" in rest:
        return False
    if name in RUNNER_PROGRAMS or words[0].endswith("bin/test") or any(w.startswith("--gtest_") for w in rest):
        return True
    if words[0].startswith(("./", "/")) and TEST_BINARY.fullmatch(name):
        return True  # a built or shipped suite: ./run_tests.sh, ./build/libponyc.tests
    first = args[0] if args else ""
    if name in ("manage.py", "django-admin", "django-admin.py", "django", "setup.py") or name in SUBCOMMAND_RUNNERS:
        return first == "test" or name == "cargo" and args[1:2] == ["run"] and first == "nextest"  # cargo-nextest
    if name in ("npm", "pnpm", "yarn"):
        return first in ("test", "t") or first == "run" and len(args) > 1 and args[1].startswith("test")
    if re.fullmatch(r"mvnw?|gradlew?|gradle\w*", name):
        return any(BUILD_GOALS.match(w) for w in args)
    if name == "make":
        return any(re.fullmatch(r"(?:test|check)(?:s|[-_:]\w[\w-]*)?", w) for w in args)  # test-ci, check_all
    return name == "rake" and first in ("test", "spec")


def _segment_runs_tests(segment: str) -> bool:
    return not INSTALLS.search(segment) and _runs_suite(_run_words(segment))


def runs_tests(command: str) -> bool:
    """Runs a test suite: the runner is what a segment runs, not a file it reads (``head
    tests/runtests.py``), a word it prints or searches for, a package it installs (``pip install
    pytest``) or finds (``which pytest``), and it is not asked for its help, version or list."""
    stripped = strip_heredocs(command)
    if INLINE_SUITE.search(stripped) and re.search(r"\bpython[\d.]*\s+-\w*c", stripped):
        return True
    return any(_segment_runs_tests(part) for part in SEGMENT.split(stripped))


def test_command(command: str) -> str:
    """The part of a command that runs the tests, as the same tests' runs share it (its options,
    a verbosity's count, redirections and pipes left out): ``cd /testbed && python -m pytest
    tests/x.py -xvs 2>&1 | tail -20`` -> ``python -m pytest tests/x.py``."""
    for segment in SEGMENT.split(strip_heredocs(command)):
        if _segment_runs_tests(segment):
            return " ".join(w for w in segment.split() if not re.match(r"^(?:\d?[<>]|-|\d+$)", w))
    return command.strip()


# A project's test file: under tests/ or test/, or named as runners collect them (test_x.py, x_test.go, x.test.ts).
TEST_FILE = re.compile(
    r"(?:^|/)(?:tests?|testing|__tests__|spec)/|(?:^|/)test_\w+\.py$|_test\.\w+$|\.(?:test|spec)\.\w+$"
)


def is_test_file(path: str) -> bool:
    return bool(TEST_FILE.search(path))


def is_scratch(path: str) -> bool:
    return bool(SCRATCH_NAME.search(path))


# Programs that run no code of the project on the agent's input: installers, version control, file and
# archive tools, editors, compilers' drivers and interpreters (``script_run`` reads those).
NOT_A_TOOL_RUN = {
    "pip", "pip3", "conda", "mamba", "uv", "apt", "apt-get", "brew", "npm", "yarn", "pnpm", "gem", "poetry", "git",
    "cp", "mv", "rm", "mkdir", "rmdir", "touch", "chmod", "chown", "ln", "tee", "patch", "tar", "unzip", "zip",
    "gzip", "vi", "vim", "nano", "ed", "perl", "python", "python3", "node", "ruby", "php", "bash", "sh", "kill",
    "sleep", "curl", "wget", "make", "cmake", "strace", "black", "ruff", "flake8", "isort", "mypy", "diff", "cmp",
}  # fmt: skip
# `python -m` modules of the interpreter's or an installer's, not the project's command line.
TOOL_MODULES = re.compile(
    r"(?:pip|ensurepip|venv|virtualenv|pytest|unittest|doctest|pdb|timeit|cProfile|profile|trace|py_compile|"
    r"compileall|pydoc|site|http\.server|json\.tool|tokenize|dis|ast|black|ruff|flake8|isort|mypy|pylint\.epylint)$"
)


def tool_run(command: str, made: set[str]) -> str | None:
    """The project's own command line run on input the agent made (``sqlfluff fix test.sql`` after
    ``cat > test.sql``, ``python -m sqlfluff lint x.sql``, ``pylint repro.py``), named by that
    segment without its redirections: the same name is the same run again. ``made``: the names of
    the files the agent wrote. Not a test runner, an installer, a look around, or an interpreter
    running a script (``script_run`` reads those)."""
    unquoted = QUOTED.sub(lambda m: "Q" * len(m.group(0)), strip_heredocs(command))  # a `|` in a grep pattern
    for segment in SEGMENT.split(unquoted):
        words = [w for w in words_of(segment) if not re.match(r"^\d?[<>]", w)]
        words = _drop_while(words, lambda w: "=" in w or w in ("sudo", "time", "timeout", "env", "nohup"))
        if len(words) < 2 or TEST_RUNNER.search(segment):
            continue
        program = words[0].rsplit("/", 1)[-1]
        module = re.fullmatch(r"python[\d.]*", program) and words[1] == "-m" and len(words) > 2
        if module and TOOL_MODULES.match(words[2]):
            continue
        if not module and (
            program in READ_ONLY or program in NOT_A_TOOL_RUN or not re.fullmatch(r"[A-Za-z][\w-]*", program)
        ):
            continue
        inputs = [w for w in words[2 if module else 1 :] if not w.startswith("-")]
        if any("." in w and (w.rsplit("/", 1)[-1] in made or is_scratch(w)) for w in inputs):
            return " ".join(words)
    return None


def script_run(command: str) -> str | None:
    """The script a command runs (``python reproduce.py`` -> reproduce.py; ``node x.js``), or
    "-" for an inline script (``python -c``, ``python - << 'PY'``)."""
    for segment in SEGMENT.split(strip_heredocs(command)):
        words = words_of(segment)
        words = _drop_while(words, lambda w: "=" in w or w in ("sudo", "time", "timeout", "env"))
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if re.fullmatch(r"python[\d.]*|node|ruby|perl|php|bash|sh|go|ponyc|java", program) and len(words) > 1:
            rest = [w for w in words[1:] if not w.startswith("-") or w in ("-", "-c")]
            if not rest:
                continue
            if rest[0] in ("-", "-c") or words[1] == "-c":
                return "-"
            if rest[0] == "run" and len(rest) > 1:
                return rest[1]
            return rest[0]
        if words[0].startswith("./") and len(words[0]) > 2:
            return words[0][2:]
    return None
