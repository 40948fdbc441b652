"""OpenHands outputs from before about Oct 2024: ``history`` as ``[action, observation]`` pairs.

The pair form must import as the equivalent flat event list does (the events of each pair in order),
whether the file is one JSON object, a JSON list of rows or JSONL rows, and Gorilla-style rows carry
``question_id`` instead of ``instance_id``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxbench.cli import main
from ctxbench.transcripts.detect import detect_format
from ctxbench.transcripts.importer import import_file

TASK = "Fix the off-by-one error in count.py."
NULL_OBS = {"id": -1, "message": "No observation", "observation": "null", "content": "", "extras": {}}


def pairs() -> list[list[dict[str, Any]]]:
    """A user message, a run action (with tool-call metadata), a write, and finish."""
    tcm = {
        "function_name": "execute_bash",
        "tool_call_id": "call_1",
        "model_response": {
            "id": "resp_1",
            "model": "gpt-4o",
            "choices": [
                {
                    "message": {
                        "content": "Let me look.",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "execute_bash", "arguments": '{"command": "cat count.py"}'},
                            }
                        ],
                    }
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 9},
        },
        "total_calls_in_response": 1,
    }
    return [
        [
            {"id": 0, "action": "message", "source": "user", "message": TASK, "args": {"content": TASK}},
            NULL_OBS,
        ],
        [
            {
                "id": 1,
                "action": "run",
                "source": "agent",
                "message": "Running command: cat count.py",
                "args": {"command": "cat count.py", "thought": "Let me look."},
                "tool_call_metadata": tcm,
            },
            {
                "id": 2,
                "cause": 1,
                "observation": "run",
                "source": "agent",
                "content": "for i in range(n + 1):",
                "extras": {"command": "cat count.py", "metadata": {"exit_code": 0}},
                "tool_call_metadata": tcm,
            },
        ],
        [
            {
                "id": 3,
                "action": "write",
                "source": "agent",
                "message": "Writing file count.py",
                "args": {"path": "count.py", "content": "for i in range(n):", "thought": "Drop the + 1."},
            },
            {
                "id": 4,
                "cause": 3,
                "observation": "write",
                "source": "agent",
                "content": "File written: count.py",
                "extras": {"path": "count.py"},
            },
        ],
        [
            {"id": 5, "action": "finish", "source": "agent", "message": "Done.", "args": {"thought": "Fixed it."}},
            NULL_OBS,
        ],
    ]


def row(history: list[Any], **ids: Any) -> dict[str, Any]:
    return {
        **ids,
        "instruction": TASK,
        "metadata": {"agent_class": "CodeActAgent"},
        "test_result": {},
        "history": history,
    }


def flat(history: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [event for pair in history for event in pair]


def write(path: Path, value: Any, jsonl: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(v) for v in value) + "\n" if jsonl else json.dumps(value))
    return path


def dicts(transcript: Any) -> list[dict[str, Any]]:
    return [m.to_dict() for m in transcript.messages]


@pytest.mark.parametrize("shape", ["object", "list", "jsonl"])
def test_pair_history_imports_as_its_flat_event_list(tmp_path: Path, shape: str) -> None:
    rows_pairs = [row(pairs(), instance_id="repo__x-1"), row(pairs(), question_id=7)]
    rows_flat = [{**r, "history": flat(r["history"])} for r in rows_pairs]
    if shape == "object":
        rows_pairs, rows_flat = rows_pairs[:1], rows_flat[:1]
    jsonl = shape == "jsonl"
    name = "output.jsonl" if jsonl else "output.json"
    as_pairs = write(tmp_path / "pairs" / name, rows_pairs[0] if shape == "object" else rows_pairs, jsonl)
    as_flat = write(tmp_path / "flat" / name, rows_flat[0] if shape == "object" else rows_flat, jsonl)
    assert detect_format(as_pairs) == "openhands"

    got, want = import_file(as_pairs), import_file(as_flat)
    expected_ids = ["output#repo__x-1"] if shape == "object" else ["output#repo__x-1", "output#7"]
    assert [t.id for t in got] == [t.id for t in want] == expected_ids
    assert [t.source["instance_id"] for t in got] == ["repo__x-1", "7"][: len(got)]
    for g, w in zip(got, want, strict=True):
        assert g.source["format"] == "openhands"
        assert dicts(g) == dicts(w)
        roles = [m.role for m in g.messages]
        # the task; the run call and its tool result; the write (no tool call) and its output; finish
        assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
        assert g.messages[0].content == TASK
        assert [c.id for c in g.messages[1].tool_calls] == ["call_1"] and g.messages[2].tool_call_id == "call_1"
        assert g.messages[1].metadata["usage"]["prompt_tokens"] == 120
        assert g.messages[2].content.startswith("for i in range(n + 1):")
        # an action without a tool call is read as the flat form reads it: its args' content comes first
        assert g.messages[3].content == "for i in range(n):" and g.messages[4].content == "File written: count.py"
        assert g.messages[5].content == "Fixed it."
        assert "No observation" not in [m.content for m in g.messages]


def test_cli_imports_pair_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(
        tmp_path / "src" / "output.jsonl", [row(pairs(), instance_id="a-1"), row(pairs(), question_id="q2")], True
    )
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "format=openhands transcripts=2 messages=12" in printed
    lines = [json.loads(line) for line in (out / "output.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == ["output#a-1", "output#q2"]
