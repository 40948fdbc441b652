"""Agents that call tools as XML in their text (Cline, Roo Code: ``api_conversation_history.json``, Anthropic
content blocks): their commands, edits and completion are read as actions, the environment's answers as
observations, not as the person's requests."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.probes.extract import extract_candidates
from ctxbench.transcripts.importer import import_file

ENV = (
    "\n\n<environment_details>\n# VSCode Visible Files\nsrc/cookie.py\n# Current Time\n10/1/2025, 10:00 AM\n"
    "</environment_details>"
)


def _text(role: str, text: str) -> dict[str, object]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _history(tmp_path: Path) -> Path:
    diff = "------- SEARCH\n    if obj.tags:\n=======\n    if obj.tags is not None:\n+++++++ REPLACE"
    messages = [
        _text("user", "<task>\nparse() drops the tags of an empty cookie\n</task>" + ENV),
        _text("assistant", "<thinking>Run the tests first.</thinking>\n<execute_command>\n<command>python -m pytest -q"
              "</command>\n<requires_approval>false</requires_approval>\n</execute_command>"),
        _text("user", "[execute_command for 'python -m pytest -q'] Result:\nCommand executed.\nOutput:\n"
              "FAILED tests/test_cookie.py::test_empty - AssertionError\n1 failed, 3 passed in 0.21s" + ENV),
        _text("assistant", f"<replace_in_file>\n<path>src/cookie.py</path>\n<diff>\n{diff}\n</diff>\n"
              "</replace_in_file>"),
        _text("user", "[replace_in_file for 'src/cookie.py'] Result:\nThe content was successfully saved to "
              "src/cookie.py." + ENV),
        _text("assistant", "<execute_command>\n<command>python -m pytest -q</command>\n"
              "<requires_approval>false</requires_approval>\n</execute_command>"),
        _text("user", "[execute_command for 'python -m pytest -q'] Result:\nCommand executed.\nOutput:\n"
              "4 passed in 0.19s" + ENV),
        _text("assistant", "<attempt_completion>\n<result>parse() now keeps empty tags: the check is "
              "`obj.tags is not None`.</result>\n</attempt_completion>"),
    ]  # fmt: skip
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_cline_xml_tool_calls_are_its_actions(tmp_path):
    (t,) = import_file(_history(tmp_path))
    got = {(c.label, c.answer) for c in extract_candidates(t)}
    assert ("change", "if obj.tags is not None:") in got and ("file_changed", "src/cookie.py") in got, got
    assert ("test_result", "4 passed in 0.19s") in got and ("test_result", "1 failed, 3 passed in 0.21s") in got, got
    # the tool results are the environment's, not later requests of the person
    assert not any(label in ("task", "constraint") and "Result:" in answer for label, answer in got), got
