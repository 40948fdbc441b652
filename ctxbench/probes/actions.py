"""What an agent did, read from its messages the way frameworks record it: shell commands,
editor views and edits (with the file and whether the edit took), and submitted answers.

Structured tool calls: SWE-agent / OpenHands ``str_replace_editor`` (``command`` = view, create,
str_replace, insert, undo_edit), OpenHands ``edit_file``, Claude Code ``Edit``/``Write``/
``MultiEdit``/``Read``, Codex's ``apply_patch`` (a tool, or a command given as a list or a
heredoc), Gemini CLI's ``replace``/``write_file``, Cursor's ``edit_file``/``search_replace``, Cline's and Roo
Code's ``write_to_file`` and SEARCH/REPLACE diffs (``replace_in_file``, ``apply_diff``), an MCP server's tools
by their own names (``developer__text_editor``), SWE-agent function-calling ``open``/``create``/``edit``/
``insert``/``submit``, shell tools (``bash``, ``execute_bash``, ``Bash``...). Text actions (classic SWE-agent): the last
fenced block of an assistant message; tools called as XML in the text (Cline, Roo Code: ``<execute_command>``,
``<replace_in_file>``, ``<attempt_completion>``...), each parameter a tag. Shell commands that write files
(``sed -i``, ``> FILE``, ``tee FILE``) count as edits of those files.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from ctxbench.probes.delimited import bodies, closing_tag, delimited
from ctxbench.probes.shell import heredoc_bodies, strip_heredocs
from ctxbench.transcripts.model import Message, Transcript, json_strings

EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool", "text_editor"}
EDITOR_EDITS = {"create", "str_replace", "insert", "undo_edit", "write"}
# Claude Code, OpenHands, Gemini CLI (replace, write_file), Cursor (edit_file, search_replace), Cline and Roo
# Code (write_to_file), Amp (edit_file, create_file): a file and the text written, under each agent's names.
WRITE_TOOLS = {
    "Write", "Edit", "MultiEdit", "NotebookEdit", "edit_file", "write_file", "create_file", "replace", "search_replace",
    "write_to_file",
}  # fmt: skip
# Cline's replace_in_file and Roo Code's apply_diff: the edit is a diff of SEARCH/REPLACE blocks.
DIFF_TOOLS = {"replace_in_file", "apply_diff"}
SEARCH_OPEN = re.compile(r"^(?:<{7}|-{7}) SEARCH[^\n]*\n", re.MULTILINE)
SEARCH_END = re.compile(r"^={7}[^\n]*\n", re.MULTILINE)
REPLACE_END = re.compile(r"^(?:>{7}|\+{7}) REPLACE", re.MULTILINE)
# Roo Code's block starts its search text with where it is: ":start_line:12" (":end_line:"), then "-------".
BLOCK_PLACE = re.compile(r"\A(?::(?:start|end)_line:\s*\d+\s*\n)+(?:-{7}\s*\n)?")
PATH_KEYS = ("file_path", "path", "target_file", "absolute_path", "notebook_path", "filename")
READ_TOOLS = {"Read", "NotebookRead", "read_file", "view_file"}
SHELL_TOOLS = {"bash", "execute_bash", "Bash", "shell", "run_shell_command", "terminal", "execute_command", "run"}
ANSWER_TOOLS = {"submit", "finish", "attempt_completion"}
PATCH_TOOLS = {"apply_patch"}
# Codex's patch format: "*** Update File: path" (or Add/Delete), then hunks of -/+ lines.
PATCH_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)
# Classic SWE-agent interface commands (not shell commands).
INTERFACE = {
    "open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert", "append", "search_dir", "search_file",
    "find_file", "submit", "decompile", "disassemble", "debug_start", "debug_add_breakpoint", "debug_continue",
    "debug_step", "debug_exec", "debug_stop", "connect_start", "connect_sendline", "connect_exec", "connect_stop",
    "exit_forfeit", "filemap", "str_replace", "view", "undo_edit", "exit", "skip", "set_cursors",
}  # fmt: skip
FAILED_EDIT = re.compile(
    r"^\s*(?:ERROR\b|Error:|<tool_use_error>)|No replacement was performed|"
    r"Your proposed edit has introduced new syntax error|The tool execution failed\b",
)
OPEN_FILE = re.compile(r"\(Open file: ([^)\n]+)\)")
FILE_HEADER = re.compile(r"^\[File: ([^\]\n]+?) \(\d+ lines total\)\]", re.MULTILINE)
# A fenced block and its language tag: ```bash, mini-swe-agent's ```mswea_bash_command
FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.DOTALL)
# SWE-agent's xml configs (XMLThoughtActionParser): the action is what the last <command> ... </command> holds.
XML_COMMAND = re.compile(r"<command>(.*?)</command>", re.DOTALL)
# A quoted word; `'it'\''s'` (a quote closed, an escaped quote, a quote reopened) is one word, not two quotes
# with the `|` or `>` of a sed pattern between them.
QUOTED = re.compile(r"'[^']*'(?:\\''[^']*')*|\"(?:\\.|[^\"\\])*\"")
QUOTE_MARK = re.compile(r"['\"]")
DOUBLE_BODY = re.compile(r"(?:\\.|[^\"\\])*")  # a double-quoted word's text, up to where it could close


def mask_quoted(text: str, mask: str) -> str:
    """``QUOTED.sub(mask, text)`` in linear time. Each character of a double-quoted word's text is read one way, so a
    `"` left open (thousands of `\\"`) stops where any `"` inside it would: those are not tried again."""
    parts, kept, at, open_until = [], 0, 0, -1
    while (mark := QUOTE_MARK.search(text, at)) is not None:
        start = mark.start()
        found = QUOTED.match(text, start) if text[start] == "'" or start > open_until else None
        if found is None:
            if text[start] == '"' and start > open_until:
                body = DOUBLE_BODY.match(text, start + 1)
                open_until = body.end() if body else start
            at = start + 1
            continue
        parts += [text[kept:start], mask]
        kept = at = found.end()
    return "".join(parts) + text[kept:]


# Tools called in the text as XML (Cline, Roo Code, Kilo Code): "<execute_command><command>npm test</command>
# </execute_command>", each parameter a tag of its own; the environment answers in the next user message.
XML_TOOLS = (
    "execute_command", "write_to_file", "replace_in_file", "apply_diff", "read_file", "insert_content",
    "search_and_replace", "attempt_completion",
)  # fmt: skip
XML_TOOL = re.compile(rf"<({'|'.join(XML_TOOLS)})>")
XML_PARAM = re.compile(r"<(\w+)>")
REDIRECT = re.compile(r"(?<![<>&\d])>{1,2}\s*([^\s;&|<>()]+)")
SEGMENT = re.compile(r"&&|\|\||[;|\n]")


@dataclass(frozen=True)
class Action:
    message_index: int
    tool: str
    op: str  # "shell", "edit", "read", "answer" or "other"
    value: str = ""  # the command's first line; the answer
    path: str | None = None
    ok: bool = True  # an edit that the tool reported as failed is not ok
    new_text: str = ""
    old_text: str = ""  # what an edit replaced, where the tool call says (str_replace's old_str, sed's pattern)
    command: str = ""  # a shell action's whole command
    result: str = ""  # the observation that answered the action


def same_file(a: str, b: str) -> bool:
    """Two spellings of one path: equal, or one is the other's tail after a "/"."""
    a, b = a.removeprefix("./"), b.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def decoded_arguments(arguments: str) -> str:
    """Tool-call arguments as the agent meant them: JSON string values, unescaped."""
    try:
        data = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a parser goes
        return arguments
    return "\n".join(json_strings(data)) if isinstance(data, dict | list) else str(data)


def probe_text(message: Message) -> str:
    """The text a probe's char span points into: the content, then per tool call a line with its
    name and its decoded arguments."""
    return message.content + "".join(f"\n{c.name} {decoded_arguments(c.arguments)}" for c in message.tool_calls)


def call_arguments(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as an object ({} when they are not a JSON object)."""
    try:
        data = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a parser goes
        return {}
    return data if isinstance(data, dict) else {}


def _results(transcript: Transcript) -> dict[tuple[int, str | None], str]:
    """The observation answering each action: by tool_call_id, else the next non-assistant message."""
    out: dict[tuple[int, str | None], str] = {}
    messages = transcript.messages
    by_call = {m.tool_call_id: m.content for m in messages if m.role == "tool" and m.tool_call_id}
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        following = messages[i + 1].content if i + 1 < len(messages) and messages[i + 1].role != "assistant" else ""
        out[(i, None)] = following
        for c in m.tool_calls:
            out[(i, c.id)] = by_call.get(c.id, following)
    return out


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")


SED_SUBSTITUTE = re.compile(r"""s([/|#,])((?:\\.|(?!\1).)*)\1((?:\\.|(?!\1).)*)\1[gIp0-9]*""")


def shell_edits(command: str) -> list[str]:
    """Files a shell command writes (``sed -i``, output redirection, ``tee``), spelled as in the
    command: that spelling is what a context holds and what a judge can find. Heredoc bodies are
    the written text, not more commands."""
    plain = mask_quoted(strip_heredocs(command), "Q")
    out: list[str] = []
    for segment in SEGMENT.split(plain):
        try:
            words = shlex.split(segment)
        except ValueError:
            words = segment.split()
        if not words:
            continue
        targets: list[str] = []
        if words[0] == "sed" and any(w.startswith("-i") or w == "--in-place" for w in words) and len(words) > 2:
            targets.append(words[-1])
        elif words[0] == "tee":
            targets += [w for w in words[1:] if not w.startswith("-")]
        targets += REDIRECT.findall(segment)
        for target in targets:
            if target in ("Q", "/dev/null") or target.startswith("&"):
                continue
            out.append(target)
    return out


def _shell_edit_texts(command: str) -> tuple[str, str]:
    """(old, new) text of a shell edit: a heredoc's body is the new text; ``sed -i 's/a/b/'`` replaces a by b."""
    bodies = heredoc_bodies(command)
    if bodies:
        return "", bodies[0]
    if "sed" in command:
        pairs = SED_SUBSTITUTE.findall(command)
        if pairs:
            return "\n".join(p[1] for p in pairs), "\n".join(p[2] for p in pairs)
    return "", ""


def _shell(i: int, tool: str, command: str, result: str) -> list[Action]:
    first = _first_line(command)
    if not first:
        return []
    actions = [Action(i, tool, "shell", first, command=command, result=result)]
    if re.match(r"\s*apply_patch\b", command):  # Codex's patch tool run from the shell, the patch in a heredoc
        bodies = heredoc_bodies(command)
        ok = not FAILED_EDIT.search(result)
        return actions + _patch_edits(i, tool, bodies[0] if bodies else command, ok, result)
    paths = list(dict.fromkeys(shell_edits(command)))  # a file written twice by one command is one edit
    if paths:
        old, new = _shell_edit_texts(command)
        ok = not FAILED_EDIT.search(result)
        actions += [Action(i, tool, "edit", path=p, ok=ok, new_text=new, old_text=old, result=result) for p in paths]
    return actions


# A unified diff's files ("+++ b/django/db/backends/base/schema.py") and a run of ``patch``/``git apply`` that
# changed nothing (a dry run, a check, a patch rejected whole).
UNIFIED_FILE = re.compile(r"^\+\+\+ (?:[ab]/)?(\S+)", re.MULTILINE)
NOT_APPLIED = re.compile(
    r"\bpatch does not apply\b|\bcorrupt patch\b|Only garbage was found|\bmalformed patch\b|"
    r"can't find file to patch|^error: ",
    re.IGNORECASE | re.MULTILINE,
)


def applied_patch(command: str) -> str | None:
    """The patch file a command applies (``patch -p1 < fix.patch``, ``git apply fix.diff``), or "-" for
    one given in a heredoc; None when it applies none (a dry run, ``git apply --check``)."""
    for segment in SEGMENT.split(strip_heredocs(command)):
        try:
            words = shlex.split(segment)
        except ValueError:
            words = segment.split()
        if words[:1] == ["patch"]:
            args = words[1:]
        elif words[:2] == ["git", "apply"]:
            args = words[2:]
        else:
            continue
        if any(w in ("--dry-run", "--check", "--stat", "--numstat", "--summary") for w in args):
            return None
        if "<" in args and args.index("<") + 1 < len(args):
            return args[args.index("<") + 1]
        glued = [w[1:] for w in args if w.startswith("<") and not w.startswith("<<") and len(w) > 1]
        if glued:  # patch -p1 <fix.patch
            return glued[0]
        if "-i" in args and args.index("-i") + 1 < len(args):
            return args[args.index("-i") + 1]
        files = [w for w in args if not re.match(r"-|<|&?\d*>", w)]  # no option, no redirection
        return files[-1] if files and words[0] == "git" else "-" if "<<" in segment else None
    return None


def _unified_edits(i: int, tool: str, patch: str, ok: bool, result: str) -> list[Action]:
    """One edit per file of a unified diff: its removed lines are the old text, its added lines the new."""
    heads = list(UNIFIED_FILE.finditer(patch))
    out = []
    for n, head in enumerate(heads):
        body = patch[head.end() : heads[n + 1].start() if n + 1 < len(heads) else len(patch)]
        lines = [ln for ln in body.splitlines() if not ln.startswith(("---", "+++"))]
        old = "\n".join(ln[1:] for ln in lines if ln.startswith("-"))
        new = "\n".join(ln[1:] for ln in lines if ln.startswith("+"))
        out.append(Action(i, tool, "edit", path=head.group(1), ok=ok, new_text=new, old_text=old, result=result))
    return out


def _applied_patches(actions: list[Action]) -> list[Action]:
    """Edits made by applying a patch file the agent wrote before (``cat > fix.patch << 'EOF'`` then
    ``patch -p1 < fix.patch``): each file of the diff is an edit of that file at the applying call, and
    writing the patch file is no edit of a file of the run's own."""
    out: list[Action] = []
    for a in actions:
        out.append(a)
        source = applied_patch(a.command) if a.op == "shell" else None
        if source is None:
            continue
        bodies = heredoc_bodies(a.command)
        if source == "-":
            patch = bodies[0] if bodies else ""
        else:
            written = [w for w in out if w.op == "edit" and w.path and same_file(w.path, source) and w.new_text]
            patch = written[-1].new_text if written else ""
            if UNIFIED_FILE.search(patch):  # the patch file is the means, not a file the run changed
                out = [w for w in out if w not in written]
        ok = not NOT_APPLIED.search(a.result)
        out += _unified_edits(a.message_index, a.tool, patch, ok, a.result)
    return out


def _tool_call(i: int, name: str, args: dict[str, Any], result: str, open_file: str | None) -> list[Action]:
    ok = not FAILED_EDIT.search(result)
    name = name.rsplit("__", 1)[-1]  # an MCP server's tool (mcp__server__tool, Goose's developer__shell): its own name
    if name in EDITOR_TOOLS:
        sub, path = str(args.get("command") or ""), args.get("path")
        if sub == "view":
            return [Action(i, name, "read", path=path)]
        if sub in EDITOR_EDITS:
            text = str(args.get("new_str") or args.get("file_text") or "")
            old = str(args.get("old_str") or "")
            return [Action(i, name, "edit", path=path, ok=ok, new_text=text, old_text=old, result=result)]
        return [Action(i, name, "other")]
    if name in WRITE_TOOLS:
        path = next((args[k] for k in PATH_KEYS if args.get(k)), None)
        if not isinstance(path, str):
            return [Action(i, name, "other", result=result)]  # a tool of that name that writes no file
        text = str(
            next((args[k] for k in ("content", "new_string", "new_str", "new_source", "code_edit") if args.get(k)), "")
        )
        old = str(args.get("old_string") or args.get("old_str") or "")
        edits = args.get("edits")  # Claude Code's MultiEdit: a list of old_string/new_string pairs
        if isinstance(edits, list) and not text:
            pairs = [e for e in edits if isinstance(e, dict)]
            text = "\n".join(str(e.get("new_string") or "") for e in pairs)
            old = "\n".join(str(e.get("old_string") or "") for e in pairs)
        return [Action(i, name, "edit", path=path, ok=ok, new_text=text, old_text=old, result=result)]
    if name in DIFF_TOOLS:
        blocks = search_replace_blocks(str(args.get("diff") or ""))
        old = "\n".join(BLOCK_PLACE.sub("", search).rstrip("\n") for search, _ in blocks)
        text = "\n".join(replace.rstrip("\n") for _, replace in blocks)
        path = next((args[k] for k in PATH_KEYS if args.get(k)), None)
        return [Action(i, name, "edit", path=path, ok=ok, new_text=text, old_text=old, result=result)]
    if name in PATCH_TOOLS:
        patch = next((v for v in args.values() if isinstance(v, str) and PATCH_FILE.search(v)), "")
        return _patch_edits(i, name, patch, ok, result)
    if name in READ_TOOLS:
        return [Action(i, name, "read", path=args.get("file_path") or args.get("path"))]
    if name == "open":
        return [Action(i, name, "read", path=args.get("path") or args.get("file"))]
    if name == "create":
        return [Action(i, name, "edit", path=args.get("filename") or args.get("path"), ok=ok)]
    if name in ("edit", "insert", "append"):
        header = FILE_HEADER.search(result)
        path = header.group(1) if header else open_file
        text = str(args.get("replace") or args.get("text") or args.get("replacement_text") or "")
        return [Action(i, name, "edit", path=path, ok=ok, new_text=text, result=result)]
    if name in ANSWER_TOOLS:
        value = str(args.get("message") or args.get("answer") or args.get("flag") or args.get("result") or "")
        return [Action(i, name, "answer", value, result=result)]
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        if command[:1] == ["apply_patch"] and len(command) > 1:
            return _patch_edits(i, name, command[1], ok, result)
        command = command[-1] if command[:1] in (["bash"], ["sh"]) and "-lc" in command else shlex.join(command)
    if name in SHELL_TOOLS or (isinstance(command, str) and name not in EDITOR_TOOLS):
        return _shell(i, name, str(command or ""), result) if isinstance(command, str) else []
    return [Action(i, name, "other", result=result)]


def _patch_edits(i: int, tool: str, patch: str, ok: bool, result: str) -> list[Action]:
    """One edit per file of a Codex-style patch: its removed lines are the old text, its added
    lines the new (a deleted file is an edit with no new text)."""
    heads = list(PATCH_FILE.finditer(patch))
    out = []
    for n, head in enumerate(heads):
        body = patch[head.end() : heads[n + 1].start() if n + 1 < len(heads) else len(patch)]
        lines = [ln for ln in body.splitlines() if not ln.startswith("***")]
        old = "\n".join(ln[1:] for ln in lines if ln.startswith("-"))
        new = "\n".join(ln[1:] for ln in lines if ln.startswith("+"))
        out.append(Action(i, tool, "edit", path=head.group(2), ok=ok, new_text=new, old_text=old, result=result))
    return out


def _text_action(i: int, block: str, result: str, open_file: str | None) -> list[Action]:
    first = _first_line(block)
    word, _, rest = first.partition(" ")
    rest = rest.strip()
    if word == "submit":
        return [Action(i, word, "answer", rest, result=result)]
    if word in EDITOR_TOOLS or word in WRITE_TOOLS or word in READ_TOOLS:
        # An editor called in text: `str_replace_editor view PATH`, `str_replace_editor create PATH ...`
        try:
            words = shlex.split(first)
        except ValueError:
            words = first.split()
        sub = words[1] if len(words) > 1 and word in EDITOR_TOOLS else ""
        path = next((w for w in words[1:] if w.startswith(("/", "./")) or "." in w.rsplit("/", 1)[-1]), None)
        if sub == "view" or word in READ_TOOLS:
            return [Action(i, word, "read", path=path)]
        if sub in EDITOR_EDITS or word in WRITE_TOOLS:
            return [Action(i, word, "edit", path=path, ok=not FAILED_EDIT.search(result))]
        return [Action(i, word, "other")]
    if word == "open":
        return [Action(i, word, "read", path=rest.split()[0].strip("\"'") if rest else None)]
    if word == "create":
        return [Action(i, word, "edit", path=rest.strip("\"'") or None, ok=not FAILED_EDIT.search(result))]
    if word == "edit":
        header = FILE_HEADER.search(result)
        body = block.strip().split("\n", 1)[1] if "\n" in block.strip() else ""
        body = body.rsplit("end_of_edit", 1)[0]
        path = header.group(1) if header else open_file
        return [Action(i, word, "edit", path=path, ok=not FAILED_EDIT.search(result), new_text=body, result=result)]
    if word in INTERFACE:
        return [Action(i, word, "other")]
    return _shell(i, "shell", block, result)


def search_replace_blocks(diff: str) -> list[tuple[str, str]]:
    """``(search, replace)`` of each SEARCH/REPLACE block of a diff, in order (linear time: an
    unclosed block makes no later one close either)."""
    out = []
    for block in delimited(diff, SEARCH_OPEN, lambda _: REPLACE_END):
        inner = diff[block.body_start : block.body_end]
        split = SEARCH_END.search(inner)
        if split is not None:
            out.append((inner[: split.start()], inner[split.end() :]))
    return out


def xml_tool_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The tools an assistant message calls as XML, with their parameters, in order."""
    calls = []
    for name, body in bodies(text, XML_TOOL, closing_tag()):
        params = bodies(body, XML_PARAM, closing_tag())
        calls.append((name, {k: v.removeprefix("\n").removesuffix("\n") for k, v in params}))
    return calls


def observation_indices(transcript: Transcript) -> set[int]:
    """User-role messages that are the environment's answer to a text action (classic SWE-agent,
    mini-swe-agent): the message right after an assistant message with a fenced action block."""
    messages = transcript.messages
    if any(m.tool_calls for m in messages):
        return set()
    return {
        i + 1
        for i, m in enumerate(messages[:-1])
        if m.role == "assistant"
        and (
            FENCE.search(m.content)
            or XML_COMMAND.search(m.content)
            or next(delimited(m.content, XML_TOOL, closing_tag()), None)
        )
        and messages[i + 1].role == "user"
    }


def agent_actions(transcript: Transcript) -> list[Action]:
    """Every action of the agent in order."""
    messages = transcript.messages
    results = _results(transcript)
    text_actions = not any(m.tool_calls for m in messages)
    actions: list[Action] = []
    open_file: str | None = None
    for i, m in enumerate(messages):
        if m.role != "assistant":
            seen = OPEN_FILE.findall(m.content)
            if seen and seen[-1].strip() != "n/a":
                open_file = seen[-1].strip()
            continue
        for call in m.tool_calls:
            args = call_arguments(call.arguments)
            if not args and PATCH_FILE.search(call.arguments):  # a freeform tool's input (Codex's apply_patch)
                args = {"input": call.arguments}
            actions += _tool_call(i, call.name, args, results.get((i, call.id), ""), open_file)
        if text_actions:
            called = xml_tool_calls(m.content)
            for name, args in called:
                actions += _tool_call(i, name, args, results.get((i, None), ""), open_file)
            blocks = [] if called else FENCE.findall(m.content) or XML_COMMAND.findall(m.content)
            if blocks:
                actions += _text_action(i, blocks[-1], results.get((i, None), ""), open_file)
    return _applied_patches(actions)
