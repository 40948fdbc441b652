"""Gemini conversations (ctxbench/transcripts/formats/gemini.py): a Gemini CLI session file and a Gemini
API contents list, in the shapes they are written, become the conversation with each call's usage,
and the probes read their tool calls (Gemini CLI's replace / run_shell_command)."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.probes.extract import extract_candidates
from ctxbench.transcripts.detect import detect_format
from ctxbench.transcripts.importer import import_file

OLD, NEW = "    if obj.tags:", "    if obj.tags is not None:"


def _response(call_id: str, name: str, output: str) -> list[dict[str, object]]:
    return [{"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}]


def _cli_session(tmp_path: Path) -> Path:
    def gemini(text: str, calls: list[dict[str, object]], inputs: int, cached: int) -> dict[str, object]:
        tokens = {"input": inputs, "output": 50, "cached": cached, "thoughts": 10, "tool": 0, "total": inputs + 60}
        return {"id": f"m{inputs}", "timestamp": "2025-10-01T10:00:00Z", "type": "gemini", "content": text,
                "toolCalls": calls, "thoughts": [{"subject": "Plan", "description": "run the tests",
                                                  "timestamp": "2025-10-01T10:00:00Z"}],
                "tokens": tokens, "model": "gemini-2.5-pro"}  # fmt: skip

    def call(call_id: str, name: str, args: dict[str, object], output: str) -> dict[str, object]:
        return {"id": call_id, "name": name, "args": args, "result": _response(call_id, name, output),
                "status": "success", "timestamp": "2025-10-01T10:00:01Z", "resultDisplay": output}  # fmt: skip

    test = "python -m pytest -q tests/test_cookie.py"
    session = {
        "sessionId": "5f1c-session",
        "projectHash": "ab12",
        "startTime": "2025-10-01T10:00:00Z",
        "lastUpdated": "2025-10-01T10:05:00Z",
        "messages": [
            {"id": "u1", "timestamp": "2025-10-01T10:00:00Z", "type": "user",
             "content": "parse() drops the tags of an empty cookie"},
            gemini("Let me run the tests.", [call("c1", "run_shell_command", {"command": test},
                                                  "Command: ...\nStdout: 1 failed, 3 passed in 0.21s\nExit Code: 1")],
                   4000, 0),
            gemini("", [call("c2", "replace", {"file_path": "/repo/src/cookie.py", "old_string": OLD,
                                               "new_string": NEW}, "Successfully modified file: /repo/src/cookie.py")],
                   4300, 3900),
            {"id": "i1", "timestamp": "2025-10-01T10:03:00Z", "type": "info", "content": "Checkpoint saved"},
            gemini("Fixed.", [], 4500, 4200),
        ],
    }  # fmt: skip
    path = tmp_path / "session-2025-10-01T10-00-5f1c.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    return path


def test_a_gemini_cli_session_is_its_conversation_with_each_calls_usage(tmp_path):
    path = _cli_session(tmp_path)
    assert detect_format(path) == "gemini"
    (t,) = import_file(path)
    assert t.id == "5f1c-session" and t.source["model"] == "gemini-2.5-pro"
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert t.messages[2].content.endswith("Exit Code: 1") and t.messages[2].tool_call_id == "c1"
    usages = [m.metadata["usage"] for m in t.messages if m.role == "assistant"]
    assert [(u["prompt_tokens"], u["cached_tokens"]) for u in usages] == [(4000, 0), (4300, 3900), (4500, 4200)]
    assert t.messages[1].metadata["reasoning"] == "Plan: run the tests"
    got = {(c.label, c.answer) for c in extract_candidates(t)}
    assert ("change", NEW.strip()) in got and ("file_changed", "/repo/src/cookie.py") in got, got


def test_a_gemini_api_contents_list_pairs_each_response_with_its_call(tmp_path):
    contents = {
        "model": "gemini-2.5-flash",
        "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Fix parse()"}]},
            {"role": "model", "parts": [{"text": "Thinking about tags", "thought": True},
                                        {"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}}},
                                        {"functionCall": {"name": "read_file", "args": {"file_path": "a.py"}}}]},
            {"role": "user", "parts": [_response("", "read_file", "x = 1")[0], _response("", "run_shell_command",
                                                                                          "a.py\nb.py")[0]]},
            {"role": "model", "parts": [{"text": "Done."}]},
        ],
    }  # fmt: skip
    path = tmp_path / "request.json"
    path.write_text(json.dumps(contents), encoding="utf-8")
    assert detect_format(path) == "gemini"
    (t,) = import_file(path)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    calls = {c.id: c.name for c in t.messages[2].tool_calls}
    assert {calls[m.tool_call_id]: m.content for m in t.messages[3:5]} == {
        "read_file": "x = 1",
        "run_shell_command": "a.py\nb.py",
    }
    assert t.messages[2].content == "" and t.messages[2].metadata["reasoning"] == "Thinking about tags"
    assert t.source["model"] == "gemini-2.5-flash"


def test_a_gemini_cli_shell_result_is_read_as_what_the_command_printed(tmp_path):
    from ctxbench.probes.outputs import read_output

    printed = read_output(
        "Command: python -m pytest -q\nDirectory: (root)\nStdout: F...\n1 failed, 3 passed in 0.21s\n"
        "Stderr: (empty)\nError: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\n"
        "Process Group PGID: 4242"
    )
    assert printed.exit_code == 1 and printed.lines == ["F...", "1 failed, 3 passed in 0.21s"]
    (t,) = import_file(_cli_session(tmp_path))
    got = {(c.label, c.answer) for c in extract_candidates(t)}
    assert ("test_result", "1 failed, 3 passed in 0.21s") in got, got
