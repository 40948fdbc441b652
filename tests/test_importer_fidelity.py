"""Importers reconstruct what the agent sent (issue 13.2): fixtures in the shapes of the dev set's
OpenHands output.jsonl, SWE-agent function-calling .traj, DeepSeek/OpenAI/Anthropic reasoning, and
files that share transcript ids."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from ctxbench.cli import main
from ctxbench.transcripts.canonical import read_transcripts
from ctxbench.transcripts.importer import TranscriptWarning, import_file
from ctxbench.transcripts.model import Transcript

TRUNCATED = "\n[... Observation truncated due to length ...]\n"


def quiet_import(path: Path) -> tuple[list[Transcript], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TranscriptWarning)
        transcripts = import_file(path)
    return transcripts, [str(w.message) for w in caught if issubclass(w.category, TranscriptWarning)]


def _response(rid: str, call_id: str, name: str, args: dict[str, Any], prompt: int, **message: Any) -> dict[str, Any]:
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "model_response": {
            "id": rid,
            "model": "meta-llama/llama-4-maverick",
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": message.get("content", ""),
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                        ],
                        **{k: v for k, v in message.items() if k != "content"},
                    }
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10},
        },
        "total_calls_in_response": 1,
    }


def openhands_instance(
    max_chars: int | None = 120, output: str = "line of build output\n" * 20, agent_config: Any = None
) -> dict[str, Any]:
    """One OpenHands v0.35 evaluation instance (the dev set's shape): system with tools, the task,
    a workspace recall, a bash call whose long output OpenHands truncated, a final text-only reply."""
    llm_config: dict[str, Any] = {"model": "openai/openrouter-llama-4-maverick"}
    if max_chars is not None:
        llm_config["max_message_chars"] = max_chars
    run = _response("gen-1", "toolu_01", "execute_bash", {"command": "make"}, 5920, content="Let me build it.")
    history = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands agent.", "tools": []}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the parser crash."}},
        {"id": 2, "source": "user", "action": "recall", "args": {"recall_type": "workspace_context"}},
        {
            "id": 4,
            "source": "environment",
            "cause": 2,
            "observation": "recall",
            "content": "Added workspace context",
            "extras": {"recall_type": "workspace_context", "runtime_hosts": {"http://localhost:5": 5}, "date": "2025"},
        },
        {"id": 5, "source": "agent", "action": "run", "tool_call_metadata": run, "args": {"command": "make"}},
        {
            "id": 6,
            "source": "agent",
            "cause": 5,
            "observation": "run",
            "tool_call_metadata": run,
            "content": output,
            "extras": {
                "command": "make",
                "metadata": {
                    "exit_code": 0,
                    "working_dir": "/workspace/ponyc",
                    "py_interpreter_path": "",
                    "prefix": "",
                    "suffix": "\n[The command completed with exit code 0.]",
                },
            },
        },
        {
            "id": 7,
            "source": "agent",
            "action": "message",
            "args": {"content": "The crash is fixed.", "wait_for_response": True},
            "llm_metrics": {"accumulated_token_usage": {"prompt_tokens": 5920 + 6400}},
        },
    ]
    usages = [
        {"prompt_tokens": 5920, "completion_tokens": 10, "response_id": "gen-1"},
        {"prompt_tokens": 6400, "completion_tokens": 8, "response_id": "gen-2"},
    ]
    return {
        "instance_id": "ponylang__ponyc-4595",
        "instance": {"repo": "ponylang/ponyc"},
        "test_result": {},
        "metadata": {"agent_class": "CodeActAgent", "llm_config": llm_config, "agent_config": agent_config},
        "history": history,
        "metrics": {"accumulated_token_usage": {"prompt_tokens": 12320}, "token_usages": usages},
        "error": None,
    }


def write_jsonl(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def test_openhands_command_output_is_what_openhands_sent(tmp_path: Path) -> None:
    [t], _ = quiet_import(write_jsonl(tmp_path / "output.jsonl", [openhands_instance(max_chars=120)]))
    tool = next(m for m in t.messages if m.role == "tool")
    # CmdOutputObservation.to_agent_observation(), then truncate_content(text, max_message_chars)
    full = (
        "line of build output\n" * 20
        + "\n[The command completed with exit code 0.]"
        + "\n[Current working directory: /workspace/ponyc]"
        + "\n[Command finished with exit code 0]"
    )
    assert tool.content == full[:60] + TRUNCATED + full[-60:]


def test_openhands_without_a_limit_uses_its_default_and_keeps_short_output(tmp_path: Path) -> None:
    big = "x" * 100_000
    [t], _ = quiet_import(write_jsonl(tmp_path / "output.jsonl", [openhands_instance(max_chars=None, output=big)]))
    tool = next(m for m in t.messages if m.role == "tool")
    assert TRUNCATED in tool.content and len(tool.content) == 30_000 + len(TRUNCATED)  # LLMConfig's default


def test_openhands_limit_configured_off_keeps_output_whole(tmp_path: Path) -> None:
    doc = openhands_instance(output="y" * 50_000)
    doc["metadata"]["llm_config"]["max_message_chars"] = None
    [t], _ = quiet_import(write_jsonl(tmp_path / "output.jsonl", [doc]))
    tool = next(m for m in t.messages if m.role == "tool")
    assert TRUNCATED not in tool.content and tool.content.startswith("y" * 50_000)


def test_openhands_final_text_reply_keeps_its_usage(tmp_path: Path) -> None:
    [t], _ = quiet_import(write_jsonl(tmp_path / "output.jsonl", [openhands_instance()]))
    calls = [m for m in t.messages if m.role == "assistant"]
    assert [c.metadata["usage"]["prompt_tokens"] for c in calls] == [5920, 6400]


def test_openhands_evaluation_recall_is_not_sent(tmp_path: Path) -> None:
    """SWE-bench-style evaluations run with enable_prompt_extensions=False: the workspace recall
    never reaches the prompt. An agent_config that enables them keeps it."""
    [t], _ = quiet_import(write_jsonl(tmp_path / "output.jsonl", [openhands_instance()]))
    assert not any("localhost" in m.content for m in t.messages)
    enabled = openhands_instance(agent_config={"enable_prompt_extensions": True})
    [t], _ = quiet_import(write_jsonl(tmp_path / "output2.jsonl", [enabled]))
    assert any("localhost:5" in m.content for m in t.messages)


def test_openhands_condensation_is_recorded(tmp_path: Path) -> None:
    doc = openhands_instance()
    doc["history"].insert(
        6,
        {
            "id": 9,
            "source": "agent",
            "action": "condensation",
            "args": {"forgotten_event_ids": [5, 6], "summary": "Built once; make failed.", "summary_offset": 2},
        },
    )
    [t], _ = quiet_import(write_jsonl(tmp_path / "output.jsonl", [doc]))
    [event] = t.metadata["condensations"]
    assert event["summary"] == "Built once; make failed." and event["summary_offset"] == 2
    forgotten = [t.messages[i] for i in event["forgotten"]]
    assert [m.role for m in forgotten] == ["assistant", "tool"]
    assert all(i < event["at"] for i in event["forgotten"])


def test_openhands_reasoning_content_is_its_own_part(tmp_path: Path) -> None:
    doc = openhands_instance()
    tcm = doc["history"][4]["tool_call_metadata"]
    tcm["model_response"]["choices"][0]["message"]["reasoning_content"] = "The build log will show the crash."
    [t], _ = quiet_import(write_jsonl(tmp_path / "output.jsonl", [doc]))
    call = next(m for m in t.messages if m.role == "assistant")
    assert call.metadata["reasoning"] == "The build log will show the crash."
    assert "crash" not in call.content


def test_deepseek_reasoning_content_is_kept(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "content": "How many rows?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I should count the rows with SQL.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sql", "arguments": "{}"}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 30},
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "assistant", "content": "42 rows.", "usage": {"prompt_tokens": 90, "completion_tokens": 5}},
    ]
    path = tmp_path / "deepseek.json"
    path.write_text(json.dumps({"model": "deepseek-reasoner", "messages": msgs}))
    [t], _ = quiet_import(path)
    assert t.messages[1].metadata["reasoning"] == "I should count the rows with SQL."


def test_openai_reasoning_items_attach_to_the_next_assistant_message(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "content": "How many rows?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Count them with SQL."}]},
        {"role": "assistant", "content": "Let me count."},
    ]
    path = tmp_path / "responses.json"
    path.write_text(json.dumps(msgs))
    [t], warned = quiet_import(path)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.messages[1].metadata["reasoning"] == "Count them with SQL."
    assert not warned


def test_anthropic_thinking_is_the_reasoning_part(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "content": "List files"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Use ls.", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
    ]
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(msgs))
    [t], _ = quiet_import(path)
    assert t.messages[1].metadata["reasoning"] == "Use ls."


def test_sweagent_function_calling_action_is_counted_once(tmp_path: Path) -> None:
    """A tool-only response (empty content) is its tool call; the action text is not added again."""
    doc = {
        "history": [
            {"role": "system", "content": "SETTING: ...", "agent": "main", "message_type": "system_prompt"},
            {"role": "user", "content": "Fix TimeDelta", "agent": "main", "message_type": "observation"},
            {
                "role": "assistant",
                "content": "",
                "thought": "",
                "action": "create reproduce.py",
                "agent": "main",
                "message_type": "action",
                "tool_calls": [
                    {
                        "function": {"arguments": '{"filename":"reproduce.py"}', "name": "create"},
                        "id": "call_1",
                        "type": "function",
                    }
                ],
            },
            {"role": "tool", "content": "[File: reproduce.py]", "tool_call_ids": ["call_1"], "agent": "main"},
        ],
        "trajectory": [],
        "info": {},
    }
    path = tmp_path / "x.traj"
    path.write_text(json.dumps(doc))
    [t], _ = quiet_import(path)
    call = t.messages[2]
    assert call.content == "" and [c.name for c in call.tool_calls] == ["create"]


def test_duplicate_ids_across_files_get_a_stable_suffix_and_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    src = tmp_path / "src"
    for run in ("run1", "run2"):
        (src / run).mkdir(parents=True)
        doc = openhands_instance()
        doc["history"][1]["args"]["content"] = f"Fix the parser crash ({run})."
        write_jsonl(src / run / "output.jsonl", [doc])
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "duplicate transcript id 'output#ponylang__ponyc-4595'" in err
    ids = [t.id for f in sorted(out.rglob("*.jsonl")) for t in read_transcripts(f)]
    assert ids[0] == "output#ponylang__ponyc-4595" and ids[1].startswith("output#ponylang__ponyc-4595~")
    again = tmp_path / "again"
    assert main(["import", str(src), "--out", str(again)]) == 0
    assert [t.id for f in sorted(again.rglob("*.jsonl")) for t in read_transcripts(f)] == ids  # stable


def test_duplicate_ids_within_a_file_warn(tmp_path: Path) -> None:
    [a, b], warned = quiet_import(write_jsonl(tmp_path / "output.jsonl", [openhands_instance()] * 2))
    assert a.id != b.id and b.id.startswith(a.id)
    assert any("duplicate transcript id" in w for w in warned)


def test_a_dataset_with_repeated_ids_keeps_both_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hydra.utils
    from omegaconf import OmegaConf

    from ctxbench.run_app import load_dataset
    from ctxbench.transcripts.canonical import write_transcripts

    for run in ("a", "b"):
        doc = openhands_instance()
        doc["history"][1]["args"]["content"] = f"Fix the parser crash ({run})."
        (tmp_path / run).mkdir()
        [t], _ = quiet_import(write_jsonl(tmp_path / run / "output.jsonl", [doc]))
        write_transcripts(tmp_path / "data" / f"{run}.jsonl", [t])
    cfg = OmegaConf.create({"dataset": {"paths": [str(tmp_path / "data")], "include": [], "limit": None}})
    monkeypatch.setattr(hydra.utils, "get_original_cwd", lambda: str(tmp_path))  # as inside a Hydra run
    with pytest.warns(TranscriptWarning, match="duplicate transcript id"):
        loaded = load_dataset(cfg)
    assert len({t.id for t, _ in loaded}) == 2


def test_openai_responses_items_become_calls_results_and_reasoning(tmp_path: Path) -> None:
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "How many rows in orders?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Count with SQL."}]},
        {"type": "function_call", "call_id": "call_1", "name": "sql", "arguments": '{"q": "SELECT count(*)"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "Report it."}]},
        {"role": "assistant", "type": "message", "content": [{"type": "output_text", "text": "42 rows."}]},
    ]
    path = tmp_path / "responses.json"
    path.write_text(json.dumps(items))
    [t], warned = quiet_import(path)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    call, result, answer = t.messages[1], t.messages[2], t.messages[3]
    assert [c.name for c in call.tool_calls] == ["sql"] and call.metadata["reasoning"] == "Count with SQL."
    assert result.tool_call_id == "call_1" and result.content == "42"
    assert answer.content == "42 rows." and answer.metadata["reasoning"] == "Report it."
    assert not warned
