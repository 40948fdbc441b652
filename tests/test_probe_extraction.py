"""Probes extracted from real transcripts: each gold value is stated by its message at the
recorded span, each probe is kept against the full history, and agent actions are read the way
frameworks record them (editor command, shell edits, failed edits, boilerplate)."""

import json
from collections import Counter

from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes.actions import probe_text, shell_edits
from ctxbench.probes.boilerplate import find_boilerplate
from ctxbench.probes.extract import extract_candidates, extract_probes
from ctxbench.probes.outputs import errors, read_output, suite_summary
from ctxbench.probes.shell import heredoc_bodies, is_read_only, is_scratch, runs_tests, script_run, strip_heredocs
from ctxbench.transcripts.importer import import_file
from ctxbench.transcripts.model import Message, Probe, ToolCall, Transcript


def test_real_transcripts_yield_sound_probes(shared_transcripts):
    labels: Counter[str] = Counter()
    for path in sorted(shared_transcripts.rglob("*")):
        if path.suffix not in (".traj", ".jsonl", ".json"):
            continue
        for transcript in import_file(path)[:20]:  # tau-bench holds 200 similar ones
            judge = DeterministicJudge()
            for probe in extract_probes(transcript, max_probes=100):
                labels[probe.label] += 1
                text = probe_text(transcript.messages[probe.message_index])
                if probe.span is not None:
                    assert text[probe.span[0] : probe.span[1]] == probe.answer, probe
                assert judge.judge(probe, transcript.messages).status == "kept", probe
                assert probe.needed_at is None or probe.needed_at > probe.message_index
                assert Probe.from_dict(probe.to_dict()) == probe
    assert {"task", "file_changed", "change", "test_result", "error", "reproduction", "identifier"} <= set(labels)
    assert not {"command", "file_read", "file_edited", "final"} & set(labels)  # the trivial types are gone


def _call(i: str, name: str, args: str) -> ToolCall:
    return ToolCall(i, name, args)


def test_editor_views_are_not_edits_and_subcommands_are_not_commands():
    messages = [
        Message("system", "You are an agent."),
        Message(
            "user",
            "<uploaded_files>\n/repo\n</uploaded_files>\n"
            "<issue_description>\nParser crashes on empty input\n</issue_description>",
        ),
        Message(
            "assistant", "", tool_calls=(_call("a", "str_replace_editor", '{"command": "view", "path": "/repo/a.py"}'),)
        ),
        Message("tool", "Here's the result of running `cat -n` on /repo/a.py", tool_call_id="a"),
        Message(
            "assistant",
            "",
            tool_calls=(
                _call(
                    "b",
                    "str_replace_editor",
                    '{"command": "str_replace", "path": "/repo/b.py", "old_str": "x", "new_str": "y = 1"}',
                ),
            ),
        ),
        Message("tool", "ERROR:\nNo replacement was performed, old_str `x` did not appear verbatim", tool_call_id="b"),
        Message(
            "assistant",
            "",
            tool_calls=(_call("c", "execute_bash", '{"command": "sed -i s/a/b/ /repo/c.py && python -m pytest -q"}'),),
        ),
        Message("tool", "1 passed", tool_call_id="c"),
        Message(
            "assistant",
            "",
            tool_calls=(_call("d", "Edit", '{"file_path": "/repo/d.py", "old_string": "p", "new_string": "q = 2"}'),),
        ),
        Message("tool", "ok", tool_call_id="d"),
    ]
    got = {(c.label, c.answer) for c in extract_candidates(Transcript("t", messages))}
    assert ("task", "Parser crashes on empty input") in got
    assert not any(a == "/repo/a.py" for _, a in got)  # only viewed: not a fact worth a probe
    assert ("file_changed", "/repo/b.py") not in got  # the edit failed
    assert {("file_changed", "/repo/c.py"), ("file_changed", "/repo/d.py")} <= got
    assert ("change", "q = 2") not in got  # too short to say anything
    assert ("test_result", "1 passed") in got


def test_shell_edits_read_redirections_sed_and_tee_but_not_quoted_arrows():
    assert shell_edits('cd /w && echo "x => y" > t.pony && ponyc t.pony') == ["t.pony"]
    assert shell_edits("cat > notes.md << 'EOF'") == ["notes.md"]
    assert shell_edits("sed -i 's/a/b/' src/x.py") == ["src/x.py"]
    assert shell_edits("make 2>&1 | tee build.log") == ["build.log"]
    assert shell_edits("grep -n foo src/x.py > /dev/null") == []


def test_shell_edits_read_a_single_quoted_word_that_escapes_its_own_quotes():
    # `'a'\''b'` is one word in the shell (a quote closed, an escaped quote, a quote reopened): the `|` and
    # `>` inside it are the sed pattern's, not a pipe or a redirect
    command = "cd /t && sed -i '35s/re.compile(r'\\''(.*)\\s(ASC|DESC)'\\'')/x/' django/sql/compiler.py"
    assert shell_edits(command) == ["django/sql/compiler.py"]
    assert shell_edits("sed -i 's/it'\\''s|x/it is/' a.py && cat a.py > b.txt") == ["a.py", "b.txt"]


def test_classic_swe_agent_edits_the_open_file_and_submits():
    messages = [
        Message("system", "SETTING: interface"),
        Message(
            "user",
            "We're currently solving the following issue within our repository. Here's the issue text:\n"
            "ISSUE:\nTimeDelta loses precision\n",
        ),
        Message("assistant", "Open it.\n```\nopen src/fields.py 10\n```"),
        Message("user", "[File: /repo/src/fields.py (100 lines total)]\n(Open file: /repo/src/fields.py)\nbash-$"),
        Message("assistant", "Fix.\n```\nedit 10:10\n        return int(round(x))\nend_of_edit\n```"),
        Message(
            "user", "[File: /repo/src/fields.py (100 lines total)]\nFile updated.\n(Open file: /repo/src/fields.py)"
        ),
        Message("assistant", "```\npython reproduce.py\n```"),
        Message("user", "345\n(Open file: /repo/src/fields.py)"),
        Message("assistant", "```\nsubmit\n```"),
    ]
    got = extract_candidates(Transcript("t", messages, source={"format": "swe-agent"}))
    by = {(c.label, c.answer) for c in got}
    assert ("task", "TimeDelta loses precision") in by
    assert ("file_changed", "/repo/src/fields.py") in by
    assert ("change", "return int(round(x))") in by
    assert not any(label == "command" for label, _ in by)


def test_swe_agent_xml_command_and_cursor_edit_are_read():
    """SWE-agent's xml configs wrap the action in <command> tags; its cursor tools' `edit` names no
    lines (it replaces the lines between the cursors set with `set_cursors`) and edits the open file."""
    messages = [
        Message("system", "SETTING: interface"),
        Message("user", "ISSUE:\nTimeDelta loses precision\n(Open file: n/a)"),
        Message("assistant", "Open it.\n<command>\nopen src/fields.py 10\n</command>"),
        Message("user", "[File: /repo/src/fields.py (100 lines total)]\n(Open file: /repo/src/fields.py)\nbash-$"),
        Message("assistant", "Select line 10.\n<command>\nset_cursors 10 10\n</command>"),
        Message("user", "START_CURSOR moved to 10\n(Open file: /repo/src/fields.py)"),
        Message("assistant", "Fix.\n<command>\nedit\n        return int(round(x))\nend_of_edit\n</command>"),
        Message("user", "File updated.\n(Open file: /repo/src/fields.py)"),
        Message("assistant", "<command>\nsubmit\n</command>"),
    ]
    got = extract_candidates(Transcript("t", messages, source={"format": "swe-agent"}))
    by = {(c.label, c.answer) for c in got}
    assert ("file_changed", "/repo/src/fields.py") in by
    assert ("change", "return int(round(x))") in by
    assert not any(label == "command" for label, _ in by)


def test_boilerplate_recurring_across_runs_is_not_a_user_constraint():
    def run(i: int, ask: str) -> Transcript:
        return Transcript(
            f"r{i}",
            [
                Message("system", "You are a helpful agent."),
                Message("user", ask),
                Message("user", "ALWAYS use the GitLab API instead of the web UI."),
                Message("assistant", "ok"),
                Message("user", "Please never touch the vendor folder."),
            ],
            source={"format": "openhands"},
        )

    runs = [run(i, f"Fix bug number {i} in the parser module") for i in range(3)]
    boilerplate = find_boilerplate(runs)
    constraints = [c.answer for c in extract_candidates(runs[0], boilerplate) if c.label == "constraint"]
    # The vendor rule recurs too, so it is dropped: recurring text is the framework's by definition.
    assert constraints == []
    alone = [c.answer for c in extract_candidates(runs[0]) if c.label == "constraint"]
    assert "Please never touch the vendor folder." in alone


def test_reruns_of_one_task_do_not_make_the_task_boilerplate():
    """Runs of the same issue (a rerun, another model, trials of one task) repeat its text; the
    issue is still the task, not the framework's template, which recurs across different tasks."""

    def run(i: int, issue: str) -> Transcript:
        return Transcript(
            f"r{i}",
            [
                Message("system", "You are a helpful assistant that can interact with a computer."),
                Message(
                    "user",
                    "We're currently solving the following issue within our repository. Here's the issue text:\n"
                    f"ISSUE:\n{issue}\n\nINSTRUCTIONS:\nNow, you're going to solve this issue on your own.\n"
                    "Remember, YOU CAN ONLY ENTER ONE COMMAND AT A TIME.",
                ),
                Message("assistant", "Look.\n```\nls\n```"),
                Message("user", "src tests"),
            ],
            source={"format": "swe-agent"},
        )

    same = "TypeError: 'NoneType' object is not subscriptable in Schema.validate"
    runs = [run(0, same), run(1, same), run(2, "TimeDelta loses precision when serialising")]
    boilerplate = find_boilerplate(runs)
    tasks = [next(c.answer for c in extract_candidates(r, boilerplate) if c.label == "task") for r in runs]
    assert tasks == [same, same, "TimeDelta loses precision when serialising"]
    # One issue under two templates (SWE-agent's text and function-calling prompts) is two first
    # messages: its sentences recur in two of three tasks, yet inside ISSUE: ... INSTRUCTIONS: they are the issue.
    other = run(3, same)
    other.messages[1] = Message("user", other.messages[1].content.replace("ONE COMMAND AT A TIME", "ONE TOOL CALL"))
    runs = [run(0, same), other, run(2, "TimeDelta loses precision when serialising")]
    boilerplate = find_boilerplate(runs)
    assert [next(c.answer for c in extract_candidates(r, boilerplate) if c.label == "task") for r in runs[:2]] == [
        same,
        same,
    ]


def test_identifiers_are_reused_ids_not_timestamps_or_hashes():
    messages = [
        Message("user", "Book it for me please, user mia_li_3668."),
        Message("assistant", "", tool_calls=(_call("a", "get_user", '{"user_id": "mia_li_3668"}'),)),
        Message(
            "tool",
            '{"reservation_id": "HATHAT", "created_at": "2024-05-15T15:00:00.755601Z", '
            '"sha": "c8429a430278283c0e571baebca3d139", "flight_number": "HAT136"}',
            tool_call_id="a",
        ),
        Message("assistant", "Booked HAT136 as HATHAT at 755601Z, commit c8429a430278283c0e571baebca3d139."),
    ]
    idents = {c.answer for c in extract_candidates(Transcript("t", messages)) if c.label == "identifier"}
    assert idents == {"HATHAT", "HAT136"}  # mia_li_3668 is the task's own: already there


def test_the_agents_tool_vocabulary_is_not_a_remembered_identifier():
    """Tool names, argument names and enum values come back in every later call: an error that
    says "Parameter `flight_id` is required" is not a fact the agent must keep."""
    messages = [
        Message("user", "Please change my booking."),
        Message("assistant", "", tool_calls=(_call("a", "get_booking", '{"booking_ref": "AB12CD"}'),)),
        Message(
            "tool",
            "ERROR: Parameter `flight_id` is required for get_booking. The seat_class is premium_plus.",
            tool_call_id="a",
        ),
        Message("assistant", "", tool_calls=(_call("b", "get_booking", '{"flight_id": "QX4471"}'),)),
        Message("tool", '{"flight_id": "QX4471", "seat_map": "S9P2QZ"}', tool_call_id="b"),
        Message("assistant", "Booking QX4471 has seat map S9P2QZ in premium_plus; flight_id noted."),
    ]
    schemas = [
        {"type": "function", "function": {"name": "get_booking", "parameters": {"properties": {"flight_id": {}}}}}
    ]
    t = Transcript("t", messages, metadata={"tools": schemas})
    idents = {c.answer for c in extract_candidates(t) if c.label == "identifier"}
    # flight_id is the interface's; QX4471 the agent's own; premium_plus a word (no digit, no ID field)
    assert idents == {"S9P2QZ"}


def test_test_results_before_and_after_the_change():
    edit = {"command": "str_replace", "path": "/r/parse.py", "old_str": "return tokens[0]",
            "new_str": "return tokens[0] if tokens else None"}  # fmt: skip
    messages = [
        Message("user", "Make the parser tests pass please"),
        Message("assistant", "", tool_calls=(_call("a", "bash", '{"command": "pytest -q tests/test_parse.py"}'),)),
        Message("tool", "F.\nFAILED tests/test_parse.py::test_empty\n1 failed, 1 passed in 0.12s", tool_call_id="a"),
        Message("assistant", "", tool_calls=(_call("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/parse.py has been edited.", tool_call_id="b"),
        Message("assistant", "", tool_calls=(_call("c", "bash", '{"command": "pytest -q tests/test_parse.py"}'),)),
        Message("tool", "..\n2 passed in 0.10s", tool_call_id="c"),
        Message("assistant", "Done."),
    ]
    by = {(p.label, p.answer): p for p in extract_probes(Transcript("t", messages))}
    assert ("test_result", "2 passed in 0.10s") in by and ("test_result", "1 failed, 1 passed in 0.12s") in by
    after = by[("test_result", "2 passed in 0.10s")].question
    assert "after the change" in after and "`pytest -q tests/test_parse.py`" in after
    change = by[("change", "return tokens[0] if tokens else None")]
    assert "`return tokens[0]`" in change.question  # names the old line: one right answer


def test_mini_swe_agent_style_text_actions_with_observations_as_user_messages():
    messages = [
        Message("system", "You are a helpful assistant that can interact with a computer."),
        Message(
            "user",
            "<pr_description>\nConsider the following PR description:\nDataFrame.rename drops the index name\n"
            "</pr_description>\n<instructions>Never edit tests.</instructions>",
        ),
        Message("assistant", "THOUGHT: look.\n```bash\ncat src/frame.py | head -50\n```"),
        Message("user", "<returncode>0</returncode>\n<output>\n# You must only call this once\n</output>"),
        Message("assistant", "THOUGHT: fix.\n```bash\nsed -i 's/name=None/name=self.name/' src/frame.py\n```"),
        Message("user", "<returncode>0</returncode>\n<output>\n</output>"),
        Message("assistant", "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```"),
    ]
    got = extract_candidates(Transcript("t", messages, source={"format": "openai"}))
    by = {(c.label, c.answer) for c in got}
    assert ("task", "DataFrame.rename drops the index name") in by
    assert ("file_changed", "src/frame.py") in by
    assert ("change", "name=self.name") in by  # sed's replacement
    assert not [a for label, a in by if label == "constraint"]  # tool output and the template are not the user
    assert not [a for label, a in by if "cat src/frame.py" in a]  # looking around is no fact


def test_editor_commands_written_as_text_actions_are_not_shell_commands():
    messages = [
        Message("user", "<pr_description>\nFix the slow path in the loader module\n</pr_description>"),
        Message("assistant", "Look.\n```\nstr_replace_editor view /testbed/src/loader.py\n```"),
        Message("user", "Here's the result of running `cat -n` on /testbed/src/loader.py"),
        Message(
            "assistant", "```\nstr_replace_editor str_replace /testbed/src/cache.py --old_str 'a' --new_str 'b'\n```"
        ),
        Message("user", "The file /testbed/src/cache.py has been edited."),
        Message("assistant", "```\npython -m pytest -q tests\n```"),
        Message("user", "3 passed"),
    ]
    by = {(c.label, c.answer) for c in extract_candidates(Transcript("t", messages, source={"format": "swe-agent"}))}
    assert ("test_result", "3 passed") in by
    assert ("file_changed", "/testbed/src/cache.py") in by
    assert not any(a == "/testbed/src/loader.py" for _, a in by)


def test_shell_reading_heredocs_read_only_tests_and_scripts():
    cmd = "cd /t && cat > repro.py << 'EOF'\nx = a > b\nprint(x)\nEOF\npython repro.py"
    assert strip_heredocs(cmd) == "cd /t && cat > repro.py << 'EOF'\npython repro.py"
    assert heredoc_bodies(cmd) == ["x = a > b\nprint(x)"]
    assert shell_edits(cmd) == ["repro.py"]  # the body's ">" is Python, not a redirect
    assert script_run(cmd) == "repro.py" and script_run("python - << 'PY'\nprint(1)\nPY") == "-"
    assert is_read_only("cd /t && ls -la && grep -rn foo src | head") and is_read_only("sed -n '1,20p' a.py")
    assert not is_read_only("sed -i 's/a/b/' a.py") and not is_read_only("python repro.py")
    assert runs_tests("cd /t && python -m pytest tests/x.py -q") and runs_tests("./runtests.py messages_tests")
    assert not runs_tests("cat pytest.ini")


def test_outputs_errors_with_their_frame_and_test_summaries():
    out = read_output(
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
        '  File "/t/schema.py", line 10, in _invoke\n    value = data[name]\n'
        "TypeError: 'NoneType' object is not subscriptable\n</output>"
    )
    assert out.exit_code == 1
    assert errors(out.text) == [
        'File "/t/schema.py", line 10, in _invoke value = data[name] '
        "TypeError: 'NoneType' object is not subscriptable"
    ]
    assert errors("bash: ponyc: command not found\n[The command completed with exit code 127.]") == [
        "bash: ponyc: command not found"
    ]
    assert suite_summary("=== 3 failed, 10 passed, 1 warning in 2.01s ===") == "3 failed, 10 passed, 1 warning in 2.01s"
    assert suite_summary("Ran 4 tests in 0.003s\n\nFAILED (failures=1)") == "Ran 4 tests in 0.003s FAILED (failures=1)"


def _bash(i: str, command: str) -> Message:
    return Message("assistant", "", tool_calls=(_call(i, "bash", json.dumps({"command": command})),))


def test_scratch_scripts_are_not_files_changed_and_the_diff_decides():
    diff = (
        "diff --git a/src/cookie.py b/src/cookie.py\n--- a/src/cookie.py\n+++ b/src/cookie.py\n"
        "@@ -19,3 +19,3 @@ class Encoder:\n-            if obj.tags:\n+            if obj.tags is not None:\n"
    )
    messages = [
        Message("user", "<pr_description>\nEncoder drops empty tags when serializing\n</pr_description>"),
        _bash("a", "cat > /t/reproduce_bug.py << 'EOF'\nprint(encode(''))\nEOF"),
        Message("tool", "<returncode>0</returncode>", tool_call_id="a"),
        _bash("b", "python /t/reproduce_bug.py"),
        Message("tool", "<returncode>0</returncode>\n<output>\ndecoded tags: None\n</output>", tool_call_id="b"),
        _bash("c", "sed -i 's/if obj.tags:/if obj.tags is not None:/' src/cookie.py"),
        Message("tool", "<returncode>0</returncode>", tool_call_id="c"),
        _bash("d", "git diff"),
        Message("tool", diff, tool_call_id="d"),
        Message("assistant", "Done."),
    ]
    by = {(c.label, c.answer) for c in extract_candidates(Transcript("t", messages))}
    assert ("file_changed", "src/cookie.py") in by
    assert not any(label == "file_changed" and "reproduce" in a for label, a in by)
    assert ("change", "if obj.tags is not None:") in by
    assert ("reproduction", "decoded tags: None") in by


def _trivial_pattern(probe: Probe, task: str) -> bool:
    """The trivial patterns the issue-23 audit counted: a read-only command, a directory, a throwaway
    script, a name copied from the task."""
    answer = probe.answer.strip()
    if is_read_only(answer) and " " in answer and probe.label != "task":
        return True
    if probe.label == "file_changed" and (answer.endswith("/") or "." not in answer.rsplit("/", 1)[-1]):
        return True
    if probe.label == "file_changed" and is_scratch(answer):
        return True
    return probe.label == "identifier" and answer in task


def test_probes_of_every_dev_transcript_rarely_match_a_trivial_pattern(shared_transcripts):
    probes = trivial = 0
    for path in sorted(shared_transcripts.rglob("*")):
        if path.suffix not in (".traj", ".jsonl", ".json"):
            continue
        for transcript in import_file(path)[:20]:
            task = next((m.content for m in transcript.messages if m.role == "user"), "")
            for probe in extract_probes(transcript):
                probes += 1
                trivial += _trivial_pattern(probe, task)
    assert probes > 200 and trivial / probes <= 0.10, (trivial, probes)
