"""OpenHands V1 (software-agent-sdk) event histories, in the shape the SDK's event classes serialize.

Parallel tool calls of one ``llm_response_id`` are one assistant message, observations are tool
messages (an error one with the SDK's header), usage comes from ``metrics.token_usages`` by response
id, and a bad row is skipped with a warning naming its line.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from ctxbench.transcripts.detect import detect_format
from ctxbench.transcripts.importer import import_file


def _text(s: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": s}]


def _action(eid: str, call: str, command: str, response: str, thought: str = "") -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {
        "kind": "ActionEvent",
        "id": eid,
        "source": "agent",
        "thought": _text(thought) if thought else [],
        "action": {"kind": "TerminalAction", "command": command},
        "tool_name": "terminal",
        "tool_call_id": call,
        "tool_call": {"id": call, "name": "terminal", "arguments": arguments, "origin": "completion"},
        "llm_response_id": response,
    }


def _observation(eid: str, call: str, text: str, error: bool = False) -> dict[str, Any]:
    return {
        "kind": "ObservationEvent",
        "id": eid,
        "source": "environment",
        "tool_name": "terminal",
        "tool_call_id": call,
        "action_id": eid,
        "observation": {"kind": "TerminalObservation", "content": _text(text), "is_error": error},
    }


def events() -> list[dict[str, Any]]:
    return [
        {"kind": "SystemPromptEvent", "id": "e0", "source": "agent", "system_prompt": {"type": "text", "text": "S"}},
        {
            "kind": "MessageEvent",
            "id": "e1",
            "source": "user",
            "llm_message": {"role": "user", "content": _text("Fix calc.py")},
        },
        _action("e2", "c1", "cat calc.py", "r1", "Look first."),
        _action("e3", "c2", "pytest", "r1"),
        _observation("e4", "c1", "def add(a, b): return a - b"),
        _observation("e5", "c2", "1 failed", error=True),
        {"kind": "ConversationStateUpdateEvent", "id": "e6", "source": "environment", "key": "k", "value": 1},
        _action("e6b", "c9", "x", "r2"),
        {
            "kind": "AgentErrorEvent",
            "id": "e7",
            "source": "agent",
            "tool_name": "x",
            "tool_call_id": "c9",
            "error": "no tool x",
        },
        {
            "kind": "MessageEvent",
            "id": "e8",
            "source": "agent",
            "llm_response_id": "r3",
            "llm_message": {"role": "assistant", "content": _text("Done.")},
        },
    ]


def test_eval_rows_import_with_usage_and_skip_a_bad_row(tmp_path: Path) -> None:
    usages = [{"model": "gpt-5", "prompt_tokens": 100, "completion_tokens": 9, "response_id": "r1"}]
    row = {"instance_id": "a__b-1", "history": events(), "metrics": {"token_usages": usages}}
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({"instance_id": "bad", "history": "x"}) + "\n")
    assert detect_format(path) == "openhands-v1"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (t,) = import_file(path)
    assert any("line 2" in str(w.message) and "skipped" in str(w.message) for w in caught)
    roles = [m.role for m in t.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]
    first = t.messages[2]
    assert [c.id for c in first.tool_calls] == ["c1", "c2"] and first.content == "Look first."
    assert first.metadata["usage"]["prompt_tokens"] == 100
    assert t.messages[4].content.startswith("[An error occurred during execution.]")
    assert t.messages[6].content == "no tool x"
    assert t.source["model"] == "gpt-5" and t.id.endswith("#a__b-1")


def test_bare_event_list_and_jsonl_events(tmp_path: Path) -> None:
    as_json, as_jsonl = tmp_path / "events.json", tmp_path / "events2.jsonl"
    as_json.write_text(json.dumps(events()))
    as_jsonl.write_text("\n".join(json.dumps(e) for e in events()) + "\n")
    assert detect_format(as_json) == detect_format(as_jsonl) == "openhands-v1"
    (a,), (b,) = import_file(as_json), import_file(as_jsonl)
    assert [m.to_dict() for m in a.messages] == [m.to_dict() for m in b.messages]
