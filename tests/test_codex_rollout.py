"""Codex CLI session rollouts (ctxbench/transcripts/formats/codex.py): a file in the shape Codex writes
(``{"timestamp", "type", "payload"}`` lines) is recognised, its response items become the conversation,
each ``token_count`` event's usage lands on its call, and the probes read its shell and apply_patch calls."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.probes.extract import extract_candidates
from ctxbench.transcripts.detect import detect_format
from ctxbench.transcripts.importer import import_file

PATCH = (
    "*** Begin Patch\n*** Update File: src/cookie.py\n@@ def parse(obj):\n-    if obj.tags:\n"
    "+    if obj.tags is not None:\n         return obj.tags\n*** End Patch"
)


def _line(kind: str, payload: dict[str, object]) -> str:
    return json.dumps({"timestamp": "2025-10-01T10:00:00.000Z", "type": kind, "payload": payload})


def _usage(inputs: int, cached: int, outputs: int) -> str:
    last = {"input_tokens": inputs, "cached_input_tokens": cached, "output_tokens": outputs,
            "reasoning_output_tokens": 0, "total_tokens": inputs + outputs}  # fmt: skip
    return _line("event_msg", {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": last}})


def _rollout(tmp_path: Path) -> Path:
    def text(role: str, kind: str, words: str) -> dict[str, object]:
        return {"type": "message", "role": role, "content": [{"type": kind, "text": words}]}

    lines = [
        _line("session_meta", {"id": "0199a1b2-c3d4", "timestamp": "2025-10-01T10:00:00Z", "cwd": "/repo",
                               "cli_version": "0.46.0", "instructions": None}),
        _line("turn_context", {"cwd": "/repo", "approval_policy": "never", "model": "gpt-5-codex"}),
        _line("response_item", text("user", "input_text", "parse() returns the tags of an empty cookie wrongly")),
        _line("event_msg", {"type": "user_message", "message": "parse() returns ..."}),  # the UI's copy
        _line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Run tests"}]}),
        _line("response_item", {"type": "function_call", "name": "shell_command", "call_id": "call_1",
                                "arguments": json.dumps({"command": "python -m pytest -q tests/test_cookie.py"})}),
        _usage(5000, 0, 40),
        _line("response_item", {"type": "function_call_output", "call_id": "call_1",
                                "output": "Exit code: 1\nWall time: 0.4 seconds\nOutput:\n"
                                          "FAILED tests/test_cookie.py::test_empty\n1 failed, 3 passed in 0.21s"}),
        _line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_2",
                                "input": PATCH, "status": "completed"}),
        _usage(5200, 4992, 60),
        _line("response_item", {"type": "custom_tool_call_output", "call_id": "call_2",
                                "output": "Success. Updated the following files:\nM src/cookie.py"}),
        _line("response_item", {"type": "local_shell_call", "call_id": "call_3", "status": "completed",
                                "action": {"type": "exec", "command": ["bash", "-lc", "python -m pytest -q"]}}),
        _usage(5400, 5184, 30),
        _line("response_item", {"type": "function_call_output", "call_id": "call_3",
                                "output": "Exit code: 0\nWall time: 0.5 seconds\nOutput:\n4 passed in 0.19s"}),
        _line("response_item", text("assistant", "output_text", "Fixed: parse() now checks `obj.tags is not None`.")),
        _usage(5500, 5376, 20),
    ]  # fmt: skip
    path = tmp_path / "rollout-2025-10-01T10-00-00-0199a1b2-c3d4.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_codex_rollout_is_its_conversation_with_each_calls_usage(tmp_path):
    path = _rollout(tmp_path)
    assert detect_format(path) == "codex"
    (t,) = import_file(path)
    assert t.id == "0199a1b2-c3d4" and t.source["model"] == "gpt-5-codex"
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
                                            "assistant"]  # fmt: skip
    assert [c.name for m in t.messages for c in m.tool_calls] == ["shell_command", "apply_patch", "local_shell"]
    assert t.messages[3].tool_calls[0].arguments == PATCH  # the freeform input, as it was sent
    assert t.messages[1].metadata["reasoning"] == "Run tests"
    usages = [m.metadata.get("usage") for m in t.messages if m.role == "assistant"]
    assert [u["prompt_tokens"] for u in usages] == [5000, 5200, 5400, 5500]
    assert [u["cached_tokens"] for u in usages] == [0, 4992, 5184, 5376]
    assert all(m.tool_call_id for m in t.messages if m.role == "tool")


def test_a_codex_rollouts_probes_read_its_patch_and_its_test_runs(tmp_path):
    (t,) = import_file(_rollout(tmp_path))
    got = {(c.label, c.answer) for c in extract_candidates(t)}
    assert ("change", "if obj.tags is not None:") in got and ("file_changed", "src/cookie.py") in got, got
    assert ("test_result", "4 passed in 0.19s") in got and ("test_result", "1 failed, 3 passed in 0.21s") in got, got


def test_a_line_that_is_not_codex_is_named_and_skipped(tmp_path, recwarn):
    path = _rollout(tmp_path)
    path.write_text(path.read_text() + '{"hello": 1}\n', encoding="utf-8")
    (t,) = import_file(path)
    assert len(t.messages) == 8
    assert any("line 17" in str(w.message) and "not a Codex rollout line" in str(w.message) for w in recwarn)


def test_an_output_recorded_as_json_text_is_read_as_what_the_command_printed():
    """Earlier Codex versions record a shell call's output as JSON text with its exit code."""
    from ctxbench.probes.outputs import read_output

    printed = "Traceback (most recent call last):\nValueError: empty header\n"
    out = read_output(json.dumps({"output": printed, "metadata": {"exit_code": 1, "duration_seconds": 0.2}}))
    assert out.exit_code == 1 and out.lines == ["Traceback (most recent call last):", "ValueError: empty header"]
    assert read_output('{"output": broken').text == '{"output": broken'
