"""Importers: real transcripts (shared folder), hand-made fixtures of the other formats, bad input, CLI."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections import Counter
from pathlib import Path

import pytest

from ctxbench.cli import main
from ctxbench.errors import InputError
from ctxbench.transcripts.canonical import read_transcripts, write_transcripts
from ctxbench.transcripts.importer import TranscriptWarning, detect_format, import_file
from ctxbench.transcripts.model import Transcript

FIXTURES = Path(__file__).parent / "fixtures" / "importers"


def _shared_dir() -> Path | None:
    env = os.environ.get("CTXBENCH_SHARED_TRANSCRIPTS")
    candidate = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "transcripts"
    return candidate if candidate.is_dir() else None


SHARED = _shared_dir()
needs_shared = pytest.mark.skipif(
    SHARED is None,
    reason="real transcripts not found (../shared/transcripts or $CTXBENCH_SHARED_TRANSCRIPTS); they are not shipped",
)


def quiet_import(path: Path, fmt: str = "auto") -> tuple[list[Transcript], list[str]]:
    """Import and return the TranscriptWarnings as strings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TranscriptWarning)
        transcripts = import_file(path, fmt)
    return transcripts, [str(w.message) for w in caught if issubclass(w.category, TranscriptWarning)]


def assert_linked(transcript: Transcript) -> None:
    """Every tool message answers a call made by an earlier assistant message, with its name."""
    calls: dict[str, str] = {}
    for i, m in enumerate(transcript.messages):
        if m.role == "assistant":
            calls.update({c.id: c.name for c in m.tool_calls})
        if m.role == "tool":
            assert m.tool_call_id in calls, f"{transcript.id} message {i}: unlinked tool result"
            assert m.name == calls[m.tool_call_id]


def first(transcript: Transcript, role: str) -> str:
    return next(m.content for m in transcript.messages if m.role == role)


def tool_names(transcript: Transcript) -> set[str]:
    return {c.name for m in transcript.messages for c in m.tool_calls}


# --- real transcripts ---------------------------------------------------------------------------------

SWE = "swe-agent-official"
MARSHMALLOW = (
    f"{SWE}/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace__"
    "install-1/marshmallow-code__marshmallow-1867.traj"
)
PYDICOM = (
    f"{SWE}/tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__"
    "install-1/pydicom__pydicom-1458.traj"
)
OPENHANDS = "openhands-multi-swe-bench-example/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"
TAU = "tau-bench/historical_trajectories/gpt-4o-airline.json"
CC = "claude-code-fasthooks-pypi/specs"
CC_MAIN = f"{CC}/data/sample_main_transcript.jsonl"
CC_SIDE = f"{CC}/data/sample_agent_sidechain.jsonl"
CC_STUDIO = f"{CC}/studio/samples/sample-transcript.jsonl"
REAL = {
    MARSHMALLOW: ("swe-agent", 1),
    PYDICOM: ("swe-agent", 1),
    f"{SWE}/trajectories/demonstrations/ctf/crypto/katy.traj": ("swe-agent", 1),
    f"{SWE}/trajectories/demonstrations/ctf/forensics/flash.traj": ("swe-agent", 1),
    f"{SWE}/trajectories/demonstrations/ctf/rev/rock.traj": ("swe-agent", 1),
    f"{SWE}/trajectories/demonstrations/ctf/web/i_got_id_demo.traj": ("swe-agent", 1),
    OPENHANDS: ("openhands", 3),
    TAU: ("tau-bench", 200),
    CC_MAIN: ("claude-code", 1),
    CC_SIDE: ("claude-code", 1),
    CC_STUDIO: ("claude-code", 1),
    # mini-swe-agent's DeepSeek runs (OpenAI-style messages, DeepSeek usage on every call).
    **{
        str(p.relative_to(SHARED)): ("openai", 1)
        for p in sorted((SHARED / "mini-swe-agent-deepseek").rglob("*.traj.json"))
        if SHARED.is_dir()
    },
}


@needs_shared
@pytest.mark.parametrize("rel", sorted(REAL))
def test_real_file_imports_linked_without_warnings(rel: str) -> None:
    fmt, count = REAL[rel]
    path = SHARED / rel
    assert detect_format(path) == fmt
    transcripts, caught = quiet_import(path)
    # Replayed trajectories reuse a call id after its result: renamed so results pair, with one warning.
    assert [w for w in caught if "used by an earlier call renamed" not in w] == []
    assert len(transcripts) == count
    assert len({t.id for t in transcripts}) == count
    for t in transcripts:
        assert t.source["format"] == fmt and t.source["path"] == str(path)
        # One DeepSeek run timed out on its first call: it has no reply.
        assert t.messages and (t.call_indices or t.metadata.get("exit_status") == "Timeout")
        assert_linked(t)


@needs_shared
def test_real_folder_has_only_the_manifest_files() -> None:
    found = {str(p.relative_to(SHARED)) for p in SHARED.rglob("*") if p.is_file() and p.name != "MANIFEST.md"}
    assert found == set(REAL)


@needs_shared
def test_swe_agent_function_calling_history() -> None:
    (t,) = import_file(SHARED / MARSHMALLOW)
    assert t.id == "marshmallow-code__marshmallow-1867"
    assert t.source["model"] == "gpt-4o" and t.source["agent"] == "main"
    assert first(t, "user").startswith(
        "We're currently solving the following issue within our repository. Here's the issue text:\nISSUE:\n"
        "TimeDelta serialization precision"
    )
    assert first(t, "system").startswith("SETTING: You are an autonomous programmer")
    roles = Counter(m.role for m in t.messages)
    assert roles == {"system": 1, "user": 1, "assistant": 11, "tool": 11}
    assert {"create", "submit"} <= tool_names(t)
    assert t.messages[-1].tool_call_id == "call_submit"
    assert t.metadata["exit_status"] == "submitted"


@needs_shared
def test_swe_agent_text_history_keeps_demo_and_totals() -> None:
    (t,) = import_file(SHARED / PYDICOM)
    assert first(t, "user").startswith("Here is a demonstration of how to correctly accomplish this task.")
    assert any(m.metadata.get("is_demo") for m in t.messages)
    assert tool_names(t) == set()  # actions are text in this older agent
    raw = json.loads((SHARED / PYDICOM).read_text())
    assert t.metadata["model_stats"]["tokens_sent"] == raw["info"]["model_stats"]["tokens_sent"]
    assert len(t.messages) == len(raw["history"])


def older_swe_agent_traj() -> dict:
    """A SWE-agent run before function calling, shaped as its .traj files (the dev set's pydicom run):
    the action in the assistant message's ``action``, its output in the next user message."""
    return {
        "environment": "swe_main",
        "history": [
            {"role": "system", "content": "SETTING: You are an autonomous programmer ...", "agent": "primary"},
            {"role": "user", "content": "Here is a demonstration ...", "agent": "primary", "is_demo": True},
            {"role": "user", "content": "We're currently solving the following issue ...", "agent": "primary"},
            {
                "role": "assistant",
                "content": "First, reproduce the bug.\n```\ncreate reproduce_bug.py\n```",
                "thought": "First, reproduce the bug.",
                "action": "create reproduce_bug.py\n",
                "agent": "primary",
            },
            {"role": "user", "content": "[File: /repo/reproduce_bug.py (1 lines total)]\n1:", "agent": "primary"},
            {
                "role": "assistant",
                "content": "Run it.\n```\npython reproduce_bug.py\n```",
                "thought": "Run it.",
                "action": "python reproduce_bug.py\n",
                "agent": "primary",
            },
            {"role": "user", "content": "Traceback (most recent call last): ...", "agent": "primary"},
        ],
        "trajectory": [],
        "info": {"exit_status": "submitted", "model_stats": {"tokens_sent": 10, "api_calls": 2}},
    }


def test_older_swe_agent_observations_are_marked_with_their_action(tmp_path: Path) -> None:
    from ctxbench.transcripts.model import OBSERVATION_OF, is_tool_result

    path = tmp_path / "run.traj"
    path.write_text(json.dumps(older_swe_agent_traj()))
    (t,) = import_file(path)
    assert [m.role for m in t.messages] == ["system", "user", "user", "assistant", "user", "assistant", "user"]
    marked = [m.metadata.get(OBSERVATION_OF) for m in t.messages]
    assert marked == [None, None, None, None, "create reproduce_bug.py", None, "python reproduce_bug.py"]
    assert [is_tool_result(m) for m in t.messages] == [False, False, False, False, True, False, True]
    # Rebuilt from trajectory steps (no history): the same mark.
    doc = older_swe_agent_traj()
    doc["history"] = []
    doc["trajectory"] = [
        {"response": "Run it.", "thought": "Run it.", "action": "python x.py\n", "observation": "ok", "state": "{}"}
    ]
    path.write_text(json.dumps(doc))
    (t,) = import_file(path, "swe-agent")
    assert t.messages[-1].role == "user" and t.messages[-1].metadata[OBSERVATION_OF] == "python x.py"


@needs_shared
def test_real_older_swe_agent_runs_mark_every_observation() -> None:
    from ctxbench.transcripts.model import OBSERVATION_OF

    (t,) = import_file(SHARED / PYDICOM)
    users = [m for m in t.messages if m.role == "user"]
    assert sum(OBSERVATION_OF in m.metadata for m in users) == len(users) - 2  # all but the demo and the task
    (fc,) = import_file(SHARED / MARSHMALLOW)  # function calling: its observations are tool messages
    assert not any(OBSERVATION_OF in m.metadata for m in fc.messages)


@needs_shared
def test_openhands_events_become_calls_with_usage() -> None:
    transcripts = import_file(SHARED / OPENHANDS)
    assert [t.id for t in transcripts] == [
        "output#ponylang__ponyc-4595",
        "output#ponylang__ponyc-4593",
        "output#ponylang__ponyc-4588",
    ]
    raw = [json.loads(line) for line in (SHARED / OPENHANDS).read_text().splitlines()]
    for t, inst in zip(transcripts, raw, strict=True):
        assert t.source["model"] == "openai/openrouter-llama-4-maverick"
        assert first(t, "system").startswith("You are OpenHands agent")
        assert first(t, "user") == inst["instruction"]
        # one assistant message per distinct model response, each with the response's own usage
        responses = {
            e["tool_call_metadata"]["model_response"]["id"]: e["tool_call_metadata"]["model_response"]["usage"]
            for e in inst["history"]
            if "action" in e and e.get("tool_call_metadata")
        }
        calls = [m for m in t.messages if m.role == "assistant"]
        assert len(calls) == len(responses)
        assert [m.metadata["usage"]["prompt_tokens"] for m in calls] == [u["prompt_tokens"] for u in responses.values()]
        assert "execute_bash" in tool_names(t)
    assert next(m for m in transcripts[0].messages if m.role == "assistant").metadata["usage"]["prompt_tokens"] == 5920
    errors = [m for m in transcripts[1].messages if m.content.endswith("[Error occurred in processing last action]")]
    assert len(errors) == 1 and errors[0].role == "user"


@needs_shared
def test_tau_bench_matches_manifest_counts() -> None:
    transcripts = import_file(SHARED / TAU)
    t0 = transcripts[0]
    assert t0.id == "gpt-4o-airline#task0.trial0" and t0.source["model"] == "gpt-4o"
    assert t0.messages[1].content == "Hi! I'm looking to book a flight from New York to Seattle on May 20th."
    call = next(c for m in t0.messages for c in m.tool_calls)
    assert (call.name, json.loads(call.arguments)) == ("get_user_details", {"user_id": "mia_li_3668"})
    # MANIFEST.md: 5308 messages, 1164 observations over 200 transcripts
    assert sum(len(t.messages) for t in transcripts) == 5308
    assert sum(m.role == "tool" for t in transcripts for m in t.messages) == 1164
    assert t0.metadata["reward"] == 0.0


@needs_shared
def test_claude_code_merges_split_responses_and_sums_prompt_usage() -> None:
    path = SHARED / CC_MAIN
    (t,) = import_file(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assistant_ids = [e["message"]["id"] for e in lines if e.get("type") == "assistant"]
    calls = [m for m in t.messages if m.role == "assistant"]
    assert len(calls) == len(dict.fromkeys(assistant_ids)) < len(assistant_ids)
    first_usage = next(e["message"]["usage"] for e in lines if e.get("type") == "assistant")
    usage = calls[0].metadata["usage"]
    expected = sum(first_usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    assert usage["prompt_tokens"] == expected
    assert usage["cache_read_input_tokens"] == first_usage["cache_read_input_tokens"]
    assert first(t, "user").startswith("can you run a command ls -la")
    assert t.source["model"] == "claude-haiku-4-5-20251001"
    assert {"Bash", "Write", "Read"} <= tool_names(t)
    assert sum(m.role == "tool" for m in t.messages) == 10  # MANIFEST.md: 10 observations
    assert any(m.metadata.get("is_error") for m in t.messages if m.role == "tool")
    assert any(m.metadata.get("compact_summary") for m in t.messages)


@needs_shared
def test_claude_code_sidechain_and_summary() -> None:
    (side,) = import_file(SHARED / CC_SIDE)
    assert side.metadata["sidechain"] is True and first(side, "user") == "Warmup"
    (studio,) = import_file(SHARED / CC_STUDIO)
    assert studio.metadata["summary"] == "Exploring .claude directory and studio.db"
    assert studio.source["model"] == "claude-opus-4-5-20251101"
    assert "reasoning" in next(m for m in studio.messages if m.role == "assistant").metadata


# --- hand-made fixtures ----------------------------------------------------------------------------------

FIXTURE_FORMATS = {
    "openai_chat.json": "openai",
    "minisweagent.traj.json": "openai",
    "openai_messages.jsonl": "openai",
    "openai_conversations.jsonl": "openai",
    "anthropic_messages.json": "anthropic",
    "anthropic_list.json": "anthropic",
    "react_dbgpt.txt": "react",
    "claude_code_rewind.jsonl": "claude-code",
}


@pytest.mark.parametrize("name", sorted(FIXTURE_FORMATS))
def test_fixture_detected_and_linked(name: str) -> None:
    assert detect_format(FIXTURES / name) == FIXTURE_FORMATS[name]
    transcripts, _ = quiet_import(FIXTURES / name)
    for t in transcripts:
        assert t.source["format"] == FIXTURE_FORMATS[name]
        assert_linked(t)


def test_openai_tool_calls_legacy_function_pin_and_usage() -> None:
    (t,) = import_file(FIXTURES / "openai_chat.json")
    assert t.source["model"] == "gpt-4o-2024-08-06"
    assert t.messages[0].pinned and not t.messages[1].pinned
    assert t.messages[1].content == "Fix the failing test in calc.py."
    call = t.messages[2]
    assert call.content == ""  # null content
    assert [c.id for c in call.tool_calls] == ["call_a1", "call_a2"]
    assert json.loads(call.tool_calls[1].arguments) == {"target": "tests/"}  # dict arguments become JSON text
    assert call.metadata["usage"] == {
        "prompt_tokens": 412,
        "completion_tokens": 38,
        "total_tokens": 450,
        "cached_tokens": 128,
    }
    assert t.messages[3].name == "read_file"  # filled in from the call
    legacy = t.messages[5]
    assert legacy.tool_calls[0].name == "write_file"
    assert t.messages[6].role == "tool" and t.messages[6].tool_call_id == legacy.tool_calls[0].id


def test_mini_swe_agent_usage_under_extra_response() -> None:
    (t,) = import_file(FIXTURES / "minisweagent.traj.json")
    assert t.id == "minisweagent"
    assert t.source["model"] == "anthropic/claude-sonnet-4-5-20250929"
    usages = [m.metadata["usage"]["prompt_tokens"] for m in t.messages if m.role == "assistant"]
    assert usages == [1520, 1610]
    assert t.messages[3].role == "tool" and t.messages[3].name == "bash"  # linked without an id


def test_openai_jsonl_one_message_per_line() -> None:
    (t,) = import_file(FIXTURES / "openai_messages.jsonl")
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [m.metadata["usage"]["prompt_tokens"] for m in t.messages if m.role == "assistant"] == [96, 131]


def test_jsonl_bad_line_skipped_with_warning_naming_line() -> None:
    path = FIXTURES / "openai_conversations.jsonl"
    transcripts, caught = quiet_import(path)
    assert [t.id for t in transcripts] == ["openai_conversations#conv-1", "openai_conversations#conv-3"]
    assert len(caught) == 1 and caught[0].startswith(f"{path}:line 2: skipped, not valid JSON")


def test_anthropic_blocks() -> None:
    (t,), caught = quiet_import(FIXTURES / "anthropic_messages.json")
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.messages[0].content == "You are a careful data analyst."
    assert t.messages[1].content.endswith("[image omitted]")
    assert len(caught) == 1 and "image" in caught[0] and "$.messages[0]" in caught[0]
    call = t.messages[2]
    assert call.metadata["reasoning"] == "I should query the orders table."
    assert call.metadata["usage"]["prompt_tokens"] == 20 + 1500 + 0
    assert call.metadata["usage"]["cache_creation_input_tokens"] == 1500
    assert t.messages[3].content == "count\n1842" and t.messages[3].name == "sql_query"
    (plain,) = import_file(FIXTURES / "anthropic_list.json")
    assert [m.role for m in plain.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert plain.messages[3].content == "Also: ignore hidden files."


def test_react_text_rounds_like_dbgpt() -> None:
    from ctxbench.transcripts.rounds import dbgpt_rounds, is_observation

    (t,) = import_file(FIXTURES / "react_dbgpt.txt")
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert t.messages[0].content.startswith("Question: Which city")
    assert "Action Input:" in t.messages[1].content and t.messages[1].metadata["react_action"] == "sql_query"
    assert [is_observation(m) for m in t.messages] == [False, False, True, False, True, False]
    assert t.messages[2].content.endswith("Lille | 60450")
    assert len(dbgpt_rounds(t.messages)) == 3


def test_claude_code_rewind_keeps_active_branch_and_splits_sidechain() -> None:
    transcripts, caught = quiet_import(FIXTURES / "claude_code_rewind.jsonl")
    main_t, side = transcripts
    assert main_t.id == "claude_code_rewind#main" and side.id == "claude_code_rewind#sidechain-a1"
    assert all("ABANDONED" not in m.content for m in main_t.messages)
    assert any("off the active branch" in w for w in caught)
    merged = main_t.messages[1]
    assert merged.content == "I'll look at util.py first." and merged.tool_calls[0].name == "Read"
    assert merged.metadata["usage"]["completion_tokens"] == 42  # last line of the split response
    assert main_t.metadata["summary"] == "Renaming a helper"


# --- bad input -------------------------------------------------------------------------------------------


def test_truncated_json_is_one_line_input_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    text = (FIXTURES / "openai_chat.json").read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(InputError) as info:
        import_file(path)
    assert str(path) in str(info.value) and "line " in str(info.value) and "\n" not in str(info.value)
    assert "not valid JSON" in str(info.value)


@pytest.mark.parametrize(
    "content",
    ["Just some notes about my day.\nNothing to import here.\n", '{"name": "config", "values": [1, 2]}'],
)
def test_unknown_format(tmp_path: Path, content: str) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(content)
    with pytest.raises(InputError, match="unknown transcript format"):
        import_file(path)


def test_orphan_tool_result_kept_as_user_message(tmp_path: Path) -> None:
    path = tmp_path / "orphan.json"
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_missing", "content": "result nobody asked for"},
        {"role": "assistant", "content": "hello"},
    ]
    path.write_text(json.dumps(messages))
    (t,), caught = quiet_import(path)
    orphan = t.messages[1]
    assert orphan.role == "user" and orphan.content == "result nobody asked for"
    assert orphan.metadata["orphan_tool_result"] == "call_missing" and orphan.tool_call_id is None
    assert len(caught) == 1 and "message 1" in caught[0] and "call_missing" in caught[0]


@pytest.mark.parametrize("content", ["[]", '{"messages": []}'])
def test_file_with_no_message_is_an_error_not_an_empty_transcript(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.json"
    path.write_text(content)
    with pytest.raises(InputError, match="nothing usable"):
        import_file(path)
    out = write_transcripts(tmp_path / "out.jsonl", [Transcript("empty", [])])  # the model still allows one
    assert [r.id for r in read_transcripts(out)] == ["empty"]


def test_empty_file_is_input_error(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text("\n  \n")
    with pytest.raises(InputError, match="empty"):
        import_file(path)


def test_images_and_null_content(tmp_path: Path) -> None:
    path = tmp_path / "images.json"
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {}}],
        },
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..."}}]},
        {"role": "assistant", "content": None},
    ]
    path.write_text(json.dumps(messages))
    (t,), caught = quiet_import(path)
    assert t.messages[0].content == "what is this?\n[image omitted]"
    assert t.messages[1].content == "[image omitted]"
    assert t.messages[2].content == ""
    assert len(caught) == 1 and "2 image block(s)" in caught[0] and "$[0]" in caught[0]


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"role": "user", "content": "ok"}\n{"role": "user", "content": "caf\xe9"}\n')
    with pytest.raises(InputError) as info:
        import_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:line 2: invalid UTF-8") and "\n" not in message


def test_forced_wrong_format_is_input_error() -> None:
    with pytest.raises(InputError, match="cannot read as tau-bench"):
        import_file(FIXTURES / "react_dbgpt.txt", fmt="tau-bench")
    with pytest.raises(InputError, match="unknown format"):
        import_file(FIXTURES / "react_dbgpt.txt", fmt="nope")


# --- canonical round trip and CLI ------------------------------------------------------------------------


def test_round_trip_read_transcripts_and_datasets(tmp_path: Path) -> None:
    import datasets  # a dependency of ctxbench: always installed

    datasets.disable_progress_bars()
    transcripts = [t for name in sorted(FIXTURE_FORMATS) for t in quiet_import(FIXTURES / name)[0]]
    out = write_transcripts(tmp_path / "all.jsonl", transcripts)
    back = list(read_transcripts(out))
    assert [t.to_dict() for t in back] == [t.to_dict() for t in transcripts]
    ds = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == len(transcripts)
    assert ds[0]["id"] == transcripts[0].id
    usage = [m["metadata"]["usage"] for row in ds for m in row["messages"] if m["metadata"].get("usage")]
    assert len(usage) == sum(1 for t in transcripts for m in t.messages if "usage" in m.metadata)


def test_cli_imports_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES, src / "nested")
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl"))
    assert written == sorted(f"nested/{Path(n).with_suffix('.jsonl').name}" for n in FIXTURE_FORMATS)
    assert "format=react transcripts=1 messages=6" in stdout
    assert "total   files=8 failed=0" in stdout
    (chat,) = read_transcripts(out / "nested" / "openai_chat.jsonl")
    assert chat.id == "openai_chat" and chat.source["format"] == "openai"


def test_cli_reports_bad_file_and_keeps_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(FIXTURES / "react_dbgpt.txt", src)
    (src / "broken.json").write_text('{"messages": [{"role": "user", "content": "cut')
    out = src / "out"  # inside the input: must not be re-imported
    assert main(["import", str(src), "--out", str(out)]) == 2
    lines = capsys.readouterr().out.splitlines()
    failed = [line for line in lines if line.startswith("FAILED")]
    assert len(failed) == 1 and "broken.json" in failed[0]
    assert (out / "react_dbgpt.jsonl").exists() and not (out / "broken.jsonl").exists()
    assert main(["import", str(src), "--out", str(out), "--format", "react"]) == 2  # broken.json still fails
    capsys.readouterr()
    assert main(["import", str(src / "react_dbgpt.txt"), str(src / "missing.json"), "--out", str(out)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("FAILED") and "missing.json: no such file or directory" in lines[0]
    assert lines[1].startswith("ok") and "format=react" in lines[1]
