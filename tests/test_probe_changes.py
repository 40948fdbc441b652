"""The change probe: which line of an edit carries it, the line it replaced, and which edit of a
file is the last one that carries a line (ctxbench.probes.work)."""

from __future__ import annotations

import json

from ctxbench.probes.extract import extract_candidates
from ctxbench.transcripts.model import Message, ToolCall, Transcript

TASK = Message("user", "<pr_description>\nPersonName cannot be iterated like a str\n</pr_description>")


def _call(i: str, name: str, args: dict[str, object]) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(i, name, json.dumps(args)),))


def _changes(messages: list[Message]) -> list[tuple[str, str]]:
    return [(c.question, c.answer) for c in extract_candidates(Transcript("t", messages)) if c.label == "change"]


def _diff(path: str, *hunks: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


def _shown(diff: str) -> list[Message]:
    return [_call("d", "bash", {"command": "git diff"}), Message("tool", diff, tool_call_id="d")]


def test_a_new_definitions_key_line_is_its_body_and_the_question_names_it():
    """Methods added whole: the header only names the method, its body says what it does."""
    diff = _diff(
        "pkg/valuerep.py",
        "@@ -755,6 +755,9 @@ class PersonName:\n"
        "     def __hash__(self):\n"
        "         return hash(self.components)\n"
        "+    def __contains__(self, item):\n"
        '+        """Return True if item is in the name\'s string form."""\n'
        "+        return item in str(self)\n",
    )
    got = _changes([TASK, *_shown(diff), Message("assistant", "Done.")])
    assert len(got) == 1, got
    question, answer = got[0]
    assert answer == "return item in str(self)"
    assert "`def __contains__(self, item):`" in question and "pkg/valuerep.py" in question


def test_a_string_literal_weighs_less_than_the_logic_of_a_new_script():
    """A long literal copied from what the agent read is data; the line computing on it is the change."""
    script = (
        'solution = bytearray(b"FLAG23456912365453475897834567")\n'
        "for i in range(len(solution)):\n"
        "    solution[i] = ((solution[i] - 9) ^ 0x10) & 0xFF\n"
        'print(solution.decode("utf-8"))\n'
    )
    messages = [
        Message("user", "Reverse the binary rock and find the flag, the target is FLAG23456912365453475897834567."),
        _call("w", "str_replace_editor", {"command": "create", "path": "/ctf/solve.py", "file_text": script}),
        Message("tool", "File created successfully at: /ctf/solve.py", tool_call_id="w"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _changes(messages)] == ["solution[i] = ((solution[i] - 9) ^ 0x10) & 0xFF"]


def test_a_line_the_change_kept_or_moved_is_not_the_line_it_replaced():
    """A removed line that comes back re-indented was kept, and a removed line closer to another
    added line became that one: neither is the key line's old form."""
    diff = _diff(
        "pkg/iam.py",
        "@@ -10,3 +10,5 @@ def physical(aoi, n=1.526):\n"
        "-    rho12_s = ((n1costheta1 - n2costheta2) / (n1costheta1 + n2costheta2)) ** 2\n"
        "+    with np.errstate(invalid='ignore'):\n"
        "+        rho12_s = ((n1costheta1 - n2costheta2) / (n1costheta1 + n2costheta2)) ** 2\n"
        "+    denom_zero_s = np.abs(n1costheta1 + n2costheta2) < 1e-12\n",
        "@@ -40,2 +42,3 @@ def infer(node):\n"
        "-    value: nodes.Const = node.value\n"
        "+    value = node.value\n"
        "+    if not isinstance(value, nodes.Const) or not isinstance(value.value, str):\n",
    )
    got = _changes([TASK, *_shown(diff), Message("assistant", "Done.")])
    assert [a for _, a in got] == [
        "denom_zero_s = np.abs(n1costheta1 + n2costheta2) < 1e-12",
        "if not isinstance(value, nodes.Const) or not isinstance(value.value, str):",
    ], got
    assert all("what key line" in q.lower() and "change `" not in q for q, _ in got), got


def test_every_hunk_is_a_change_after_each_files_first():
    diff = _diff(
        "pkg/response.py",
        "@@ -111,1 +111,1 @@ class HttpResponseBase:\n"
        "-        if not isinstance(value, (bytes, str)):\n"
        "+        if not isinstance(value, (bytes, str, memoryview)):\n",
        "@@ -234,1 +234,3 @@ class HttpResponseBase:\n"
        "+        if isinstance(value, (memoryview, bytearray)):\n"
        "+            return bytes(value)\n"
        "         return str(value).encode(self.charset)\n",
    ) + _diff("pkg/utils.py", "@@ -3,1 +3,1 @@ def wrap(x):\n-    return list(x)\n+    return tuple(x)\n")
    got = [a for _, a in _changes([TASK, *_shown(diff), Message("assistant", "Done.")])]
    assert got == [
        "if not isinstance(value, (bytes, str, memoryview)):",
        "return tuple(x)",
        "if isinstance(value, (memoryview, bytearray)):",
    ], got


REJECTED = (
    "Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your edit.\n"
    "This is how your edit would have looked if applied\n"
    "[File: /repo/pkg/handler.py (374 lines total)]\n"
    "290:    if 'PixelData' in ds:\n"
    "291:        required_elements.append('PixelRepresentation')\n"
    "292:        )\n"
    "Your changes have NOT been applied."
)
FIX = "    if 'PixelData' in ds:\n        required_elements.append('PixelRepresentation')\n"


def test_a_rejected_edits_preview_is_not_the_file_the_agent_had_seen():
    """The reply to a rejected edit shows the proposed lines: they were never in the file, so the
    edit that lands with them still carries them."""
    messages = [
        TASK,
        _call("a", "edit", {"start_line": 287, "end_line": 290, "replacement_text": FIX + "        )\n"}),
        Message("tool", REJECTED, tool_call_id="a"),
        Message("tool", "(Open file: /repo/pkg/handler.py)"),
        _call("b", "edit", {"start_line": 287, "end_line": 290, "replacement_text": FIX}),
        Message("tool", "[File: /repo/pkg/handler.py (373 lines total)]\nFile updated.", tool_call_id="b"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _changes(messages)] == ["required_elements.append('PixelRepresentation')"]


def test_a_later_edit_that_only_reindents_leaves_the_change_to_the_edit_before():
    line = "if (ast_id(pattern_type) == TK_ISO) pattern_type = set_cap(pattern_type, TK_TRN);"
    path = "/workspace/src/match.c"
    messages = [
        TASK,
        _call("a", "str_replace_editor", {"command": "insert", "path": path, "insert_line": 316, "new_str": line}),
        Message("tool", f"The file {path} has been edited.", tool_call_id="a"),
        _call("b", "execute_bash", {"command": f"sed -i '317s/^/\\t      /' {path}"}),
        Message("tool", "", tool_call_id="b"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _changes(messages)] == [line]


PATCH = (
    "*** Begin Patch\n"
    "*** Update File: src/cookie.py\n"
    "@@ class Encoder:\n"
    "-            if obj.tags:\n"
    "+            if obj.tags is not None:\n"
    "*** End Patch"
)


def _files_and_changes(messages: list[Message]) -> set[tuple[str, str]]:
    return {(c.label, c.answer) for c in extract_candidates(Transcript("t", messages)) if c.label != "task"}


def test_claude_codes_multiedit_is_read_by_its_edits():
    edits = [
        {"old_string": "if obj.tags:", "new_string": "if obj.tags is not None:"},
        {"old_string": "import json", "new_string": "import json\nimport logging"},
    ]
    messages = [
        TASK,
        _call("m", "MultiEdit", {"file_path": "/repo/src/cookie.py", "edits": edits}),
        Message("tool", "Applied 2 edits to /repo/src/cookie.py", tool_call_id="m"),
        Message("assistant", "Done."),
    ]
    got = _files_and_changes(messages)
    assert ("change", "if obj.tags is not None:") in got and ("file_changed", "/repo/src/cookie.py") in got, got


def test_codex_apply_patch_as_a_tool_a_command_list_and_a_heredoc():
    """Codex edits through apply_patch: a tool of its own, a shell call whose command is a list,
    or a shell command with the patch in a heredoc. Each names the file and the lines it changed."""
    ways = [
        _call("p", "apply_patch", {"input": PATCH}),
        _call("p", "shell", {"command": ["apply_patch", PATCH]}),
        _call("p", "shell", {"command": f"apply_patch <<'EOF'\n{PATCH}\nEOF"}),
    ]
    for call in ways:
        messages = [
            TASK,
            call,
            Message("tool", "Success. Updated src/cookie.py", tool_call_id="p"),
            Message("assistant", "Done."),
        ]
        got = _files_and_changes(messages)
        assert ("change", "if obj.tags is not None:") in got and ("file_changed", "src/cookie.py") in got, (call, got)


def test_codex_bash_lc_command_list_is_the_shell_command_it_runs():
    messages = [
        TASK,
        _call(
            "s",
            "shell",
            {"command": ["bash", "-lc", "sed -i 's/if obj.tags:/if obj.tags is not None:/' src/cookie.py"]},
        ),
        Message("tool", "", tool_call_id="s"),
        Message("assistant", "Done."),
    ]
    assert ("change", "if obj.tags is not None:") in _files_and_changes(messages)


def test_a_header_that_is_the_key_line_is_not_named_by_the_header_above_it():
    """Two new stubs with no body worth a line: the second header is the key line, and the first
    header is no definition it sits in."""
    diff = _diff(
        "pkg/api.py",
        "@@ -1,1 +1,4 @@\n+def first_handler(request):\n+    pass\n"
        "+def second_handler_with_args(request, extra):\n+    pass\n",
    )
    got = _changes([TASK, *_shown(diff), Message("assistant", "Done.")])
    assert got == [
        ("What key line did the agent's change to pkg/api.py add?", "def second_handler_with_args(request, extra):")
    ], got


def test_other_agents_editor_tools_name_the_file_and_the_line_they_changed():
    """The editors of Gemini CLI (replace, write_file), Cursor (edit_file's code_edit, search_replace),
    Cline (replace_in_file's SEARCH/REPLACE diff, write_to_file), Roo Code (apply_diff), Amp
    (edit_file with old_str/new_str) and MCP servers' editors (Goose's developer__text_editor):
    each call, in its agent's own argument names, is an edit of its file with the line it wrote."""
    old, new = "if obj.tags:", "if obj.tags is not None:"
    cline_diff = f"------- SEARCH\n    {old}\n=======\n    {new}\n+++++++ REPLACE"
    roo_diff = f"<<<<<<< SEARCH\n:start_line:12\n-------\n    {old}\n=======\n    {new}\n>>>>>>> REPLACE"
    ways = [
        ("replace", {"file_path": "/repo/src/cookie.py", "old_string": old, "new_string": new}),
        ("search_replace", {"file_path": "/repo/src/cookie.py", "old_string": old, "new_string": new}),
        ("edit_file", {"target_file": "/repo/src/cookie.py", "instructions": "fix", "code_edit": f"// ...\n{new}"}),
        ("edit_file", {"path": "/repo/src/cookie.py", "old_str": old, "new_str": new}),
        ("replace_in_file", {"path": "/repo/src/cookie.py", "diff": cline_diff}),
        ("apply_diff", {"path": "/repo/src/cookie.py", "diff": roo_diff}),
        (
            "developer__text_editor",
            {"command": "str_replace", "path": "/repo/src/cookie.py", "old_str": old, "new_str": new},
        ),
        ("write_to_file", {"path": "/repo/src/cookie.py", "content": f"import json\n\n{new}\n    return 1\n"}),
    ]
    for name, args in ways:
        messages = [
            TASK,
            _call("e", name, args),
            Message("tool", "The file /repo/src/cookie.py was updated.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        got = _files_and_changes(messages)
        assert ("change", new) in got and ("file_changed", "/repo/src/cookie.py") in got, (name, got)


def test_other_agents_shell_tools_are_commands_run():
    """Cursor's run_terminal_cmd, Codex's exec_command ({"cmd": ...}) and an MCP server's shell
    (developer__shell) run shell commands: a sed -i through them is an edit."""
    sed = "sed -i 's/if obj.tags:/if obj.tags is not None:/' src/cookie.py"
    for name, args in (
        ("run_terminal_cmd", {"command": sed, "is_background": False}),
        ("exec_command", {"cmd": sed}),
        ("developer__shell", {"command": sed}),
    ):
        messages = [TASK, _call("s", name, args), Message("tool", "", tool_call_id="s"), Message("assistant", "Done.")]
        assert ("change", "if obj.tags is not None:") in _files_and_changes(messages), name


def _files_changed(messages: list[Message]) -> list[str]:
    return [c.answer for c in extract_candidates(Transcript("t", messages)) if c.label == "file_changed"]


def test_a_project_file_named_like_a_scratch_word_is_still_the_change():
    """`template` starts with `temp` and Django's own `views/debug.py` is named `debug`: a file the
    submitted diff shows as modified was in the repository before the run, so it is the fix, not a
    throwaway script, and the scripts the agent wrote beside it are not the change."""
    diff = _diff(
        "django/template/autoreload.py",
        "@@ -51,4 +51,4 @@ def template_changed(sender, file_path, **kwargs):\n"
        "         if template_dir in file_path.parents:\n"
        "             reset_loaders()\n"
        "-            return True\n"
        "+            pass\n",
    ) + _diff(
        "django/views/debug.py",
        "@@ -90,3 +90,5 @@ class SafeExceptionReporterFilter:\n"
        "         if isinstance(value, dict):\n"
        "             cleansed = {k: self.cleanse_setting(k, v) for k, v in value.items()}\n"
        "+        elif isinstance(value, (list, tuple)):\n"
        "+            cleansed = type(value)(self.cleanse_setting(key, v) for v in value)\n",
    )
    messages = [
        TASK,
        _call("w", "bash", {"command": "cat > run_real_test.py << 'EOF'\nprint('checking the autoreloader')\nEOF"}),
        Message("tool", "<returncode>0</returncode>\n<output>\n</output>", tool_call_id="w"),
        *_shown(diff),
        Message("assistant", "Done."),
    ]
    assert _files_changed(messages) == ["django/template/autoreload.py", "django/views/debug.py"]
    answers = [answer for _, answer in _changes(messages)]
    assert "pass" in answers[0] or any("cleanse_setting" in a for a in answers), answers
    assert all("checking the autoreloader" not in a for a in answers)


def test_a_new_file_in_the_diff_named_as_scratch_is_still_scratch():
    """A reproduction script the agent added to the diff is new there, and named as one: not the change."""
    new = (
        "diff --git a/reproduce_issue.py b/reproduce_issue.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/reproduce_issue.py\n@@ -0,0 +1,2 @@\n+from pkg import valuerep\n+print(valuerep.PersonName('A^B'))\n"
    )
    fix = _diff(
        "pkg/valuerep.py",
        "@@ -10,2 +10,3 @@ class PersonName:\n     def __str__(self):\n+        return self.original_string\n",
    )
    assert _files_changed([TASK, *_shown(fix + new), Message("assistant", "Done.")]) == ["pkg/valuerep.py"]


def test_a_template_folder_is_not_a_temp_file():
    """No diff shown: the editor's edit of `django/template/loader.py` is the change (`temp` names a
    throwaway file only as a word of its own: temp.py, temp_check.py)."""
    messages = [
        TASK,
        _call(
            "e",
            "str_replace_editor",
            {
                "command": "str_replace",
                "path": "/testbed/django/template/loader.py",
                "old_str": "    return engine.from_string(template_code)",
                "new_str": "    return engine.from_string(str(template_code))",
            },
        ),  # fmt: skip
        Message("tool", "The file /testbed/django/template/loader.py has been edited.", tool_call_id="e"),
        _call("s", "str_replace_editor", {"command": "create", "path": "/testbed/temp_check.py", "file_text": "1\n"}),
        Message("tool", "File created successfully at: /testbed/temp_check.py", tool_call_id="s"),
        Message("assistant", "Done."),
    ]
    assert _files_changed(messages) == ["/testbed/django/template/loader.py"]


def test_a_patch_file_the_agent_wrote_and_applied_is_an_edit_of_the_files_it_patches():
    """mini-swe-agent DeepSeek writes a unified diff (`cat > fix.patch << 'EOF'`) and applies it (`patch -p1 <
    fix.patch`, `git apply fix.patch`): the patched file is the change, its added line the key line, not the
    patch file; a dry run or `git apply --check` patches nothing."""
    patch = (
        "--- a/django/contrib/admin/helpers.py\n+++ b/django/contrib/admin/helpers.py\n"
        "@@ -211,7 +211,7 @@ class AdminReadonlyField:\n"
        "-            url = reverse(url_name, args=[quote(remote_obj.pk)])\n"
        "+            url = reverse(url_name, args=[quote(remote_obj.pk)], current_app=self.site_name)\n"
    )
    for apply, out in (
        ("patch -p1 < fix.patch", "patching file django/contrib/admin/helpers.py\n"),
        ("git apply fix.patch", ""),
    ):
        messages = [
            TASK,
            _call("w", "bash", {"command": f"cat > fix.patch << 'EOF'\n{patch}EOF"}),
            Message("tool", "<returncode>0</returncode>\n<output>\n</output>", tool_call_id="w"),
            _call("a", "bash", {"command": f"cd /testbed && {apply} 2>&1"}),
            Message("tool", f"<returncode>0</returncode>\n<output>\n{out}</output>", tool_call_id="a"),
            Message("assistant", "Done."),
        ]
        got = _files_and_changes(messages)
        assert ("file_changed", "django/contrib/admin/helpers.py") in got, (apply, got)
        assert ("change", "url = reverse(url_name, args=[quote(remote_obj.pk)], current_app=self.site_name)") in got
        assert not any(answer.endswith("fix.patch") for _, answer in got), got
        messages[3] = _call(
            "a", "bash", {"command": apply.replace("apply", "apply --check").replace("-p1", "--dry-run")}
        )
        assert ("file_changed", "django/contrib/admin/helpers.py") not in _files_and_changes(messages), apply


def test_an_import_the_change_added_is_asked_only_when_the_change_has_no_other_line():
    """A hunk that only adds an import brings in what the change uses: the change is its other hunks'
    lines. An import the change replaced (`from collections import Mapping` -> a compat module) is one, and
    an import that is the change's only line is asked."""
    imported = "@@ -1,3 +1,4 @@\n import os\n+from asgiref.sync import sync_to_async\n from x import y\n"
    method = (
        "@@ -40,6 +41,9 @@ class Handler:\n     def serve(self, request):\n         return serve(request)\n"
        "+    async def get_response_async(self, request):\n+        return await sync_to_async(self.serve)(request)\n"
    )
    got = [a for _, a in _changes([TASK, *_shown(_diff("pkg/handlers.py", imported, method))])]
    assert got == ["return await sync_to_async(self.serve)(request)"], got
    replaced = "@@ -1,3 +1,3 @@\n import os\n-from collections import Mapping\n+from pkg.compat import Mapping\n"
    got = [a for _, a in _changes([TASK, *_shown(_diff("pkg/fields.py", replaced, method))])]
    assert got == ["from pkg.compat import Mapping", "return await sync_to_async(self.serve)(request)"], got
    got = [a for _, a in _changes([TASK, *_shown(_diff("pkg/handlers.py", imported))])]
    assert got == ["from asgiref.sync import sync_to_async"], got
