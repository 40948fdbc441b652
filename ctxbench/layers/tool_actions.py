"""What a real agent's tool call does, in the 5-layer seed's categories (strategy 2's whitelist).

The seed names categories ("Read File, Bash, Grep, Glob, Search Files, Web Fetch, Edit" compacted;
"Write/Create-type tools" kept), and real agents do not call their tools that: OpenHands and SWE-agent
read, edit and create files through one ``str_replace_editor``; SWE-agent's own commands are ``open``,
``find_file``, ``search_dir``; mini-swe-agent's text actions are shell commands (imported as ``bash``
calls); tau-bench's are API calls. ``action_category`` maps a call by what it does:

* ``str_replace_editor`` (OpenHands, SWE-agent): ``view`` -> Read File; ``str_replace``, ``insert``,
  ``undo_edit`` -> Edit; ``create`` -> Write.
* a shell tool (``bash``, ``execute_bash``, mini-swe-agent's actions): by its command's first program:
  ``cat``/``head``/``tail``/``nl``/``sed -n`` -> Read File, ``grep``/``rg`` -> Grep, ``find``/``ls`` -> Glob,
  ``sed -i``/``patch``/``git apply`` -> Edit, writing a file (``cat > f``, ``cat <<EOF > f``, ``tee f``)
  -> Write, anything else -> Bash.
* named tools of SWE-agent, OpenHands and Claude Code (``_NAMED``), e.g. ``open``/``goto`` -> Read File,
  ``find_file`` -> Glob, ``search_dir`` -> Grep, ``Read`` -> Read File, ``WebFetch`` -> Web Fetch,
  ``MultiEdit`` -> Edit, ``Write`` -> Write.
* API tools (tau-bench and the like) by their verb: ``get_``/``search_``/``list_``/``find_``/``calculate``
  -> Web Fetch (a look-up the agent can repeat); ``book_``/``cancel_``/``update_``/``send_``/
  ``transfer_``... -> Write (the service's state changed: kept, later steps build on it).
* ``think``, ``finish``, ``submit``, ``TodoWrite``: Other (a bookkeeping result, never worth compacting).
* an older SWE-agent's text action (its output a user message the importer marked, ``observation_call``):
  by its command (``open`` -> Read File, ``create`` -> Write, ...), anything else as a shell command.

What none of these name is ``None`` (unknown): the layer then reads the name literally, as the seed's
list (``tool_matches``), and what matches nothing is compacted or not by ``compact_unknown`` (OpenClaw's
guard compacts every tool result, reference.md 9).
"""

from __future__ import annotations

import json
import re
import shlex

from ctxbench.transcripts.model import OBSERVATION_OF, Message, ToolCall

READ_FILE, BASH, GREP, GLOB, SEARCH_FILES, WEB_FETCH, EDIT = (
    "Read File",
    "Bash",
    "Grep",
    "Glob",
    "Search Files",
    "Web Fetch",
    "Edit",
)
WRITE, CREATE, OTHER = "Write", "Create", "Other"

_EDITOR_COMMANDS = {"view": READ_FILE, "str_replace": EDIT, "insert": EDIT, "undo_edit": EDIT, "create": WRITE}
_SHELL_TOOLS = frozenset({"bash", "execute_bash", "shell", "run_shell", "terminal", "run", "execute_command"})
_NAMED = {
    # OpenHands
    "execute_ipython_cell": BASH,
    "web_read": WEB_FETCH,
    "browser": WEB_FETCH,
    "edit_file": EDIT,
    "think": OTHER,
    "finish": OTHER,
    # SWE-agent's commands (its tool bundles; function calling or not)
    "open": READ_FILE,
    "open_file": READ_FILE,
    "goto": READ_FILE,
    "scroll_up": READ_FILE,
    "scroll_down": READ_FILE,
    "view": READ_FILE,
    "find_file": GLOB,
    "search_dir": GREP,
    "search_file": GREP,
    "edit": EDIT,
    "insert": EDIT,
    "create": WRITE,
    "submit": OTHER,
    # Claude Code
    "Read": READ_FILE,
    "NotebookRead": READ_FILE,
    "Grep": GREP,
    "Glob": GLOB,
    "LS": GLOB,
    "WebFetch": WEB_FETCH,
    "WebSearch": WEB_FETCH,
    "Edit": EDIT,
    "MultiEdit": EDIT,
    "NotebookEdit": EDIT,
    "Write": WRITE,
    "TodoWrite": OTHER,
    "ExitPlanMode": OTHER,
}
_READ_VERBS = ("get", "search", "list", "find", "lookup", "fetch", "read", "calculate", "query", "check")
_WRITE_VERBS = (
    "book",
    "cancel",
    "update",
    "modify",
    "exchange",
    "return",
    "send",
    "transfer",
    "create",
    "delete",
    "write",
    "set",
    "add",
    "remove",
)
_READ_PROGRAMS = frozenset({"cat", "head", "tail", "nl", "less", "more", "wc", "file", "stat", "diff"})
_GREP_PROGRAMS = frozenset({"grep", "rg", "ag", "ack", "egrep", "fgrep"})
_GLOB_PROGRAMS = frozenset({"find", "ls", "tree", "fd", "locate"})
_EDIT_PROGRAMS = frozenset({"patch"})
_WRITES_FILE = re.compile(r"(?<![0-9&])>>?\s*(?!&|/dev/null)[\w./~'\"-]")  # `> file`, `>> file`; not 2>&1, >/dev/null
_VERB = re.compile(r"^([a-z]+)_")
_SEGMENTS = re.compile(r"&&|\|\||;|\|")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# What shlex.split(comments=True) reads apart from words between its whitespace (space, tab, CR, LF):
# quotes, the escape, the comment sign, and whitespace it does not split on but str.split does.
_SHLEX_SPECIAL = re.compile(r"['\"\\#]|[^\S \t\r\n]")


def _command(arguments: str) -> str:
    """The shell command of a shell tool call (``{"command": ...}`` JSON, or the raw text)."""
    try:
        parsed = json.loads(arguments) if arguments.strip().startswith("{") else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        for key in ("command", "cmd", "code", "input"):
            if isinstance(parsed.get(key), str):
                return str(parsed[key])
        return ""
    return arguments


def _split(segment: str) -> list[str]:
    if _SHLEX_SPECIAL.search(segment) is None:
        return segment.split()  # nothing shlex reads otherwise: the same words, without its Python lexer
    try:
        return shlex.split(segment, comments=True)
    except ValueError:  # an unclosed quote (a heredoc's body follows): split on spaces
        return segment.split()


def _program(line: str) -> tuple[list[str], str]:
    """(words, segment) of the first command of ``line`` that is not ``cd`` (``cd repo && cat f``),
    without leading ``VAR=value`` assignments and ``sudo``/``time``."""
    for segment in _SEGMENTS.split(line):
        words = _split(segment)
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words and words[0] in ("sudo", "time"):
            words = words[1:]
        if words and words[0] != "cd":
            return words, segment
    return [], ""


def shell_category(command: str) -> str:
    """A shell command's category by its first program."""
    lines = command.strip().splitlines()
    words, segment = _program(lines[0]) if lines else ([], "")
    if not words:
        return BASH
    program = words[0].rsplit("/", 1)[-1]
    if program in ("cat", "echo", "printf", "tee") and (program == "tee" or _WRITES_FILE.search(segment)):
        return WRITE
    if program == "sed":
        return EDIT if any(w.startswith("-i") for w in words[1:]) else READ_FILE
    if program == "git":
        return EDIT if words[1:2] == ["apply"] else READ_FILE if words[1:2] in (["diff"], ["show"], ["log"]) else BASH
    if program in _EDIT_PROGRAMS:
        return EDIT
    if program in _READ_PROGRAMS:
        return READ_FILE
    if program in _GREP_PROGRAMS:
        return GREP
    if program in _GLOB_PROGRAMS:
        return GLOB
    return BASH


def action_category(name: str, arguments: str = "") -> str | None:
    """The seed category of a call of tool ``name`` with ``arguments`` (its raw JSON text); None when
    the tool is not known by what it does."""
    if name == "str_replace_editor":
        try:
            command = json.loads(arguments).get("command") if arguments else None
        except (ValueError, AttributeError):
            command = None
        return _EDITOR_COMMANDS.get(str(command), EDIT) if command else READ_FILE
    if name in _SHELL_TOOLS:
        return shell_category(_command(arguments))
    named = _NAMED.get(name)
    if named is not None:
        return named
    verb = _VERB.match(name)
    if verb is not None or name in _READ_VERBS:
        word = verb.group(1) if verb else name
        if word in _READ_VERBS:
            return WEB_FETCH
        if word in _WRITE_VERBS:
            return WRITE
    return None


def observation_call(message: Message) -> ToolCall | None:
    """The call an observation the importer marked answers (``OBSERVATION_OF``: an older SWE-agent's text
    action): a SWE-agent command (``open f.py``) as a call of that command, anything else as a ``bash`` call
    of the command line. None for other messages."""
    action = message.metadata.get(OBSERVATION_OF) if message.role == "user" else None
    if not isinstance(action, str) or not action.strip():
        return None
    command, *rest = action.split(None, 1)
    if command in _NAMED:
        return ToolCall("", command, rest[0] if rest else "")
    return ToolCall("", "bash", json.dumps({"command": action.strip()}))
