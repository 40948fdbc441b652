"""Probes extracted from real transcripts: each gold value is stated by its message at the
recorded span, each probe is kept against the full history, and agent actions are read the way
frameworks record them (editor command, shell edits, failed edits, boilerplate)."""

from collections import Counter

from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes.actions import probe_text, shell_edits
from ctxbench.probes.boilerplate import find_boilerplate
from ctxbench.probes.extract import extract_candidates, extract_probes
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
    assert {"task", "file_edited", "file_read", "command", "constraint", "identifier", "final"} <= set(labels)


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
    assert ("file_read", "/repo/a.py") in got
    assert ("file_edited", "/repo/b.py") not in got  # the edit failed
    assert {("file_edited", "/repo/c.py"), ("file_edited", "/repo/d.py")} <= got
    commands = {a for label, a in got if label == "command"}
    assert commands == {"sed -i s/a/b/ /repo/c.py && python -m pytest -q"}  # no "view", no "str_replace"


def test_shell_edits_read_redirections_sed_and_tee_but_not_quoted_arrows():
    assert shell_edits('cd /w && echo "x => y" > t.pony && ponyc t.pony') == ["t.pony"]
    assert shell_edits("cat > notes.md << 'EOF'") == ["notes.md"]
    assert shell_edits("sed -i 's/a/b/' src/x.py") == ["src/x.py"]
    assert shell_edits("make 2>&1 | tee build.log") == ["build.log"]
    assert shell_edits("grep -n foo src/x.py > /dev/null") == []


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
    assert ("file_edited", "/repo/src/fields.py") in by
    assert not any(label == "file_read" for label, _ in by)  # viewed, then edited: edited
    assert {a for label, a in by if label == "command"} == {"python reproduce.py"}
    assert ("final", "return int(round(x))") in by


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
    assert idents == {"mia_li_3668", "HATHAT", "HAT136"}


def test_the_agents_tool_vocabulary_is_not_a_remembered_identifier():
    """Tool names, argument names and editor subcommands come back in every later call: an error that
    says "Parameter `old_str` is required" is not a fact the agent must keep (the dev set's OpenHands
    runs gave old_str, str_replace and view_range; SWE-agent's find_file)."""
    edit = '{"command": "str_replace", "path": "/src/parse_args.py", "old_str": "x", "new_str": "y"}'
    messages = [
        Message("user", "Fix parse_args in /src/parse_args.py."),
        Message("assistant", "", tool_calls=(_call("a", "str_replace_editor", '{"command": "view", "path": "/src"}'),)),
        Message(
            "tool",
            "ERROR: Parameter `old_str` is required for command: str_replace. Try find_file or view_range.",
            tool_call_id="a",
        ),
        Message("assistant", "", tool_calls=(_call("b", "str_replace_editor", edit),)),
        Message("tool", "The file was edited; the helper split_tokens now handles quotes.", tool_call_id="b"),
        Message("assistant", "", tool_calls=(_call("c", "find_file", '{"file_name": "split_tokens"}'),)),
        Message("assistant", "Done: split_tokens and view_range fixed."),
    ]
    schemas = [
        {"type": "function", "function": {"name": "find_file", "parameters": {"properties": {"view_range": {}}}}}
    ]
    t = Transcript("t", messages, metadata={"tools": schemas})
    idents = {c.answer for c in extract_candidates(t) if c.label == "identifier"}
    assert idents == {"parse_args", "split_tokens"}  # the task's names stay


def test_a_test_that_failed_then_passed():
    messages = [
        Message("user", "Make the parser tests pass please"),
        Message("assistant", "", tool_calls=(_call("a", "bash", '{"command": "pytest -q"}'),)),
        Message(
            "tool",
            "FAILED tests/test_parse.py::test_empty - ValueError\nFAILED tests/test_parse.py::test_other",
            tool_call_id="a",
        ),
        Message("assistant", "", tool_calls=(_call("b", "bash", '{"command": "pytest -q -rA"}'),)),
        Message("tool", "PASSED tests/test_parse.py::test_empty", tool_call_id="b"),
    ]
    fixed = [c for c in extract_candidates(Transcript("t", messages)) if c.label == "test_fixed"]
    assert [(c.answer, c.message_index, c.needed_at) for c in fixed] == [("tests/test_parse.py::test_empty", 2, 4)]


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
    assert ("file_edited", "src/frame.py") in by
    assert not [a for label, a in by if label == "constraint"]  # tool output and the template are not the user
    assert ("command", "cat src/frame.py | head -50") in by


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
    assert {a for label, a in by if label == "command"} == {"python -m pytest -q tests"}
    assert ("file_read", "/testbed/src/loader.py") in by and ("file_edited", "/testbed/src/cache.py") in by
