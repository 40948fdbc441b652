"""scripts/trivial_patterns.py's checks on hand-made probes: each pattern of issue 23's audit is
matched where it is, and not where a probe only looks like it."""

import importlib.util
import sys
from typing import Any

from ctxbench.probes.actions import Action
from ctxbench.transcripts.model import Probe
from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("trivial_patterns", ROOT / "scripts" / "trivial_patterns.py")
assert _spec is not None and _spec.loader is not None
script = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = script  # its dataclasses look their module up
_spec.loader.exec_module(script)

TASK = "<pr_description>\nEncoder drops empty tags when serializing (reservation ABC123)\n</pr_description>"


def _run(actions: tuple[Action, ...] = (), calls: tuple[int, ...] = (), diffed: frozenset[str] = frozenset()) -> Any:
    return script.Run(TASK, list(actions), list(calls), set(diffed))


def _probe(label: str, answer: str, question: str = "?", at: int = 5) -> Probe:
    return Probe(id="p", question=question, answer=answer, message_index=at, source="extracted", label=label)


def test_read_only_exploration_is_matched_by_the_command_a_probe_asks_about():
    run = _run()
    assert script.matches(_probe("test_result", "a.py b.py", "What did `ls -la && pwd` print after the change?"), run)
    assert script.matches(_probe("outcome", "sed -n '1,40p' src/x.py", "What was the agent doing?"), run)
    # a test run, and a submission's command, are not exploration
    assert not script.matches(_probe("test_result", "3 passed", "What did `python -m pytest t.py | tail` report?"), run)
    assert not script.matches(
        _probe(
            "outcome",
            "git diff -- x.py > patch.txt",
            "What did the agent submit at the end (`echo DONE && cat patch.txt`)?",
        ),
        run,
    )
    # code that starts with a shell word is no command
    assert not script.matches(_probe("change", "source = inspect.getsource(f)", "What key line did x.py add?"), run)


def test_a_heredoc_opener_alone_carries_nothing():
    run = _run()
    assert "heredoc_first_line" in script.matches(_probe("outcome", "cat > fix.py << 'EOF'", "What was it doing?"), run)
    assert "heredoc_first_line" not in script.matches(
        _probe("error", "ValueError: x", "What error did `cat > t.py << 'EOF' ... python t.py` show?"), run
    )


def test_throwaway_scripts_and_directories_as_changed_files():
    run = _run(diffed=frozenset({"django/views/debug.py"}))
    assert script.matches(_probe("file_changed", "reproduce_issue.py"), run) == ["scratch_file"]
    assert script.matches(_probe("change", "print(x)", "What key line did the agent's change to /tmp/t.py add?"), run)
    assert script.matches(_probe("file_changed", "src/pkg/"), run) == ["directory"]
    assert not script.matches(_probe("file_changed", "django/views/debug.py"), run)  # in the diff: the fix
    assert not script.matches(_probe("file_changed", "Makefile"), run)


def test_identifiers_from_the_task_or_without_a_digit():
    run = _run()
    assert script.matches(_probe("identifier", "ABC123"), run) == ["copied_from_task"]
    assert script.matches(_probe("identifier", "MasterCard"), run) == ["generic_identifier"]
    assert not script.matches(_probe("identifier", "NQNU5R"), run)


def test_a_missing_module_counts_only_when_the_agent_installed_it_afterwards():
    install = Action(9, "bash", "shell", command="pip install pytest -q")
    probe = _probe("test_result", "/opt/bin/python: No module named pytest", "What did `python -m pytest` report?")
    assert script.matches(probe, _run((install,))) == ["installed_after"]
    assert not script.matches(probe, _run())  # never installed: the suite could not start
    timed_out = Action(9, "bash", "shell", command="pip install pytest", result="Command timed out after 60 seconds")
    assert not script.matches(probe, _run((timed_out,)))
    before = Action(2, "bash", "shell", command="pip install pytest")
    assert not script.matches(probe, _run((before,)))
    other = _probe("error", "ModuleNotFoundError: No module named 'pytz'", "What error did `python r.py` show?")
    assert not script.matches(other, _run((install,)))


def test_outcome_read_off_an_edit_and_editor_refusals_then_made():
    edit = Action(3, "str_replace_editor", "edit", path="src/x.py", new_text="    return value or default\n")
    assert script.matches(_probe("outcome", "return value or default"), _run((edit,))) == ["outcome_from_edit"]
    refusal = _probe(
        "error",
        "No replacement was performed, old_str `x` did not appear",
        "What error did the agent's edit of src/x.py show?",
        at=1,
    )
    assert script.matches(refusal, _run((edit,))) == ["edit_refused_then_made"]
    assert not script.matches(refusal, _run())  # never made: where the run stood


def test_syntax_errors_of_inline_code_and_constraints_in_the_last_rounds():
    run = _run(calls=(2, 6, 10))
    inline = _probe("error", "SyntaxError: invalid syntax", 'What error did `python -c "print(1"` show?')
    assert script.matches(inline, run) == ["own_code_syntax_error"]
    project = _probe("error", "SyntaxError: invalid syntax", "What error did `python -m pytest` show?")
    assert not script.matches(project, run)
    assert script.matches(_probe("constraint", "Only aisle seats.", at=8), run) == ["constraint_kept_by_all"]
    assert not script.matches(_probe("constraint", "Only aisle seats.", at=4), run)


def test_exploration_scripts_unless_they_print_what_the_task_reports():
    run = _run()
    assert script.matches(_probe("test_result", "DEBUG: segments", "What did `python debug_parse.py` print?"), run)
    reproduced = _probe("reproduction", "Encoder drops empty tags", "What did `python debug_issue.py` print?")
    assert not script.matches(reproduced, run)
