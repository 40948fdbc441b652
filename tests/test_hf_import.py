"""``ctxbench import`` of trajectory datasets (parquet, Arrow directories, ``hf:`` from the local cache).

The datasets are small but real: parquet and Arrow files written with pyarrow / ``datasets`` in the
column layouts of the public datasets (nebius/SWE-agent-trajectories, SWE-Gym OpenHands trajectories,
a parquet export of OpenAI-style messages), imported end to end through the CLI in a subprocess with
its own HF_HOME and offline mode.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctxbench.transcripts.canonical import read_transcripts
from ctxbench.transcripts.model import Transcript
from tests.conftest import CTXBENCH, ROOT


def run_import(args: list[str], hf_home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HOME": str(hf_home),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    return subprocess.run([*CTXBENCH, "import", *args], capture_output=True, text=True, env=env, timeout=300)


def load(path: Path) -> list[Transcript]:
    return list(read_transcripts(path))


# --- the public schemas ----------------------------------------------------------------------------------


def nebius_row(i: int) -> dict:
    """nebius/SWE-agent-trajectories: trajectory = [{cutoff_date, mask, role (system|user|ai), system_prompt, text}]."""
    step = {"cutoff_date": None, "mask": False, "system_prompt": None}
    return {
        "instance_id": f"astropy__astropy-{1000 + i}",
        "model_name": "swe-agent-llama-70b",
        "target": i % 2 == 0,
        "trajectory": [
            {
                **step,
                "cutoff_date": "01.01.2024",
                "role": "system",
                "system_prompt": "SETTING: You are an autonomous programmer.",
                "text": None,
            },
            {**step, "role": "user", "text": f"We're currently solving the following issue {i}."},
            {**step, "mask": True, "role": "ai", "text": "DISCUSSION\nLet me look.\n\n```\nls -la\n```"},
            {**step, "role": "user", "text": "setup.py\nastropy/\n(Open file: n/a)\nbash-$"},
            {**step, "mask": True, "role": "ai", "text": "DISCUSSION\nDone.\n\n```\nsubmit\n```"},
        ],
        "exit_status": "submitted",
        "generated_patch": "diff --git a/x b/x\n" * 50,
        "eval_logs": "PASSED " * 100,
    }


def swegym_row(i: int) -> dict:
    """SWE-Gym/OpenHands-Sampled-Trajectories (split train.raw): OpenAI function-calling ``messages``."""
    call = {
        "id": f"toolu_{i}",
        "type": "function",
        "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
    }
    base = {"content": None, "tool_calls": None, "tool_call_id": None, "name": None}
    return {
        "instance_id": f"getmoto__moto-{5000 + i}",
        "run_id": "gpt-4o-2024-08-06_maxiter_30_N_v2.1-no-hint-train-t04-run_1",
        "resolved": i == 0,
        "messages": [
            {**base, "role": "system", "content": "You are OpenHands agent."},
            {**base, "role": "user", "content": f"Fix issue {i} in moto."},
            {**base, "role": "assistant", "content": "I will list the files.", "tool_calls": [call]},
            {
                **base,
                "role": "tool",
                "content": "README.md\nmoto/",
                "tool_call_id": f"toolu_{i}",
                "name": "execute_bash",
            },
            {**base, "role": "assistant", "content": "Done."},
        ],
    }


def openai_row(i: int) -> dict:
    """A parquet export of a user's own OpenAI-style logs: messages as a JSON string, usage per call."""
    messages = [
        {"role": "system", "content": "You are a SQL agent."},
        {"role": "user", "content": f"How many orders in week {i}?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "sql", "arguments": "{}"}}],
            "usage": {"prompt_tokens": 120 + i, "completion_tokens": 9},
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": "42"},
        {"role": "assistant", "content": "42 orders.", "usage": {"prompt_tokens": 140 + i, "completion_tokens": 4}},
    ]
    return {"id": f"run-{i}", "model": "gpt-4o", "conversation": json.dumps(messages)}


# --- tests ---------------------------------------------------------------------------------------------


def test_nebius_parquet_imports_through_cli(tmp_path: Path) -> None:
    source = tmp_path / "nebius.parquet"
    pq.write_table(pa.Table.from_pylist([nebius_row(i) for i in range(5)]), source, row_group_size=2)
    result = run_import([str(source), "--out", str(tmp_path / "out")], tmp_path / "hf")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "column=trajectory transcripts=5 messages=25" in result.stdout
    transcripts = load(tmp_path / "out" / "nebius.jsonl")
    assert [t.id for t in transcripts] == [f"nebius#{i}-astropy__astropy-{1000 + i}" for i in range(5)]
    t = transcripts[3]
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert t.messages[0].content == "SETTING: You are an autonomous programmer."
    assert t.messages[2].content.endswith("```\nls -la\n```")
    assert t.source["model"] == "swe-agent-llama-70b" and t.source["row"] == 3
    assert t.metadata["exit_status"] == "submitted" and t.metadata["target"] is False
    assert "generated_patch" not in t.metadata  # long columns are not copied into every transcript


def test_nebius_swe_agent_observations_are_marked_with_their_command(tmp_path: Path) -> None:
    """nebius/SWE-agent-trajectories are SWE-agent runs with text actions: the command is the ai message's
    last fenced block, its output the next user message, marked as the observation of that command (what
    five_layer's strategies 1 and 2 read as a tool result); the task is not."""
    from ctxbench.transcripts.model import OBSERVATION_OF, is_tool_result

    source = tmp_path / "nebius.parquet"
    pq.write_table(pa.Table.from_pylist([nebius_row(0)]), source)
    assert run_import([str(source), "--out", str(tmp_path / "out")], tmp_path / "hf").returncode == 0
    (t,) = load(tmp_path / "out" / "nebius.jsonl")
    assert [m.metadata.get(OBSERVATION_OF) for m in t.messages] == [None, None, None, "ls -la", None]
    assert [is_tool_result(m) for m in t.messages] == [False, False, False, True, False]


def test_swegym_openhands_arrow_directory_links_tool_calls(tmp_path: Path) -> None:
    saved = tmp_path / "swegym"
    datasets.Dataset.from_list([swegym_row(i) for i in range(3)]).save_to_disk(str(saved))
    result = run_import([str(saved), "--out", str(tmp_path / "out")], tmp_path / "hf")
    assert result.returncode == 0, result.stdout + result.stderr
    transcripts = load(tmp_path / "out" / "swegym.jsonl")
    assert len(transcripts) == 3
    t = transcripts[0]
    assert t.source["format"] == "openai"
    assistant = t.messages[2]
    assert [(c.id, c.name, c.arguments) for c in assistant.tool_calls] == [
        ("toolu_0", "execute_bash", '{"command": "ls"}')
    ]
    assert t.messages[3].role == "tool" and t.messages[3].tool_call_id == "toolu_0"
    assert t.metadata["resolved"] is True and transcripts[1].metadata["resolved"] is False


def test_swegym_hub_snapshot_in_cache_imports_offline(tmp_path: Path) -> None:
    """hf:ORG/NAME:SPLIT from a huggingface_hub cache snapshot (its real on-disk layout), with the Hub offline."""
    hf_home = tmp_path / "hf"
    repo = hf_home / "hub" / "datasets--SWE-Gym--OpenHands-Sampled-Trajectories"
    commit = "baf3a4e4bff514d48ddc08a93a2ade5c126212c7"
    data = repo / "snapshots" / commit / "data"
    data.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    pq.write_table(pa.Table.from_pylist([swegym_row(i) for i in range(4)]), data / "train.raw-00000-of-00001.parquet")
    spec = "hf:SWE-Gym/OpenHands-Sampled-Trajectories:train.raw"
    result = run_import([spec, "--out", str(tmp_path / "out")], hf_home)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out" / "SWE-Gym__OpenHands-Sampled-Trajectories.train.raw.jsonl"
    transcripts = load(out)
    assert [t.id for t in transcripts][:2] == [
        "OpenHands-Sampled-Trajectories:train.raw#0-getmoto__moto-5000",
        "OpenHands-Sampled-Trajectories:train.raw#1-getmoto__moto-5001",
    ]
    assert all(len(t.messages) == 5 for t in transcripts)
    wrong = run_import(["hf:SWE-Gym/OpenHands-Sampled-Trajectories:test", "--out", str(tmp_path / "o2")], hf_home)
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    (line,) = [x for x in wrong.stdout.splitlines() if x.startswith("FAILED")]
    assert "cannot load dataset 'SWE-Gym/OpenHands-Sampled-Trajectories'" in line and "train.raw" in line


def test_hf_dataset_not_in_cache_is_one_line_error(tmp_path: Path) -> None:
    result = run_import(["hf:nebius/SWE-agent-trajectories", "--out", str(tmp_path / "out")], tmp_path / "hf")
    assert result.returncode == 2
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1
    assert "hf:nebius/SWE-agent-trajectories" in failed[0]
    assert "not in the local Hugging Face cache" in failed[0] and "HF_HUB_OFFLINE=1" in failed[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_openai_export_json_string_column_usage_and_bad_row(tmp_path: Path) -> None:
    rows = [openai_row(i) for i in range(4)]
    rows[2] = {**rows[2], "conversation": '[{"role": "user", "content": "cut sho'}  # a truncated export
    source = tmp_path / "exports" / "logs.parquet"
    source.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), source)
    out = tmp_path / "out"
    missing = run_import([str(source), "--out", str(out)], tmp_path / "hf")
    assert missing.returncode == 2 and "no message column" in missing.stdout and "conversation" in missing.stdout
    result = run_import([str(source.parent), "--column", "conversation", "--out", str(out)], tmp_path / "hf")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "transcripts=3" in result.stdout and "calls_with_usage=6" in result.stdout and "skipped_rows=1" in result.stdout
    )
    assert "row 2" in result.stderr and "Traceback" not in result.stderr
    # The fidelity check of `ctxbench import`, on the rows: 120+ reported tokens for a prompt of about 30.
    assert "median_ratio=0.2" in result.stdout and "first 3 runs with usage" in result.stdout
    assert "what the provider reported" in result.stderr
    assert "row/s" not in result.stderr  # no progress bar when stderr is not a terminal
    transcripts = load(out / "exports.jsonl")
    assert [t.id for t in transcripts] == ["exports#0-run-0", "exports#1-run-1", "exports#3-run-3"]
    usage = [m.metadata["usage"]["prompt_tokens"] for m in transcripts[2].messages if "usage" in m.metadata]
    assert usage == [123, 143]
    assert transcripts[0].source["model"] == "gpt-4o"
    strict_out = tmp_path / "strict"
    strict = run_import(
        [str(source), "--column", "conversation", "--strict", "--out", str(strict_out)], tmp_path / "hf"
    )
    assert strict.returncode == 2 and "row 2" in strict.stdout and "FAILED" in strict.stdout
    assert not list(strict_out.glob("*.jsonl")) and not list(strict_out.glob(".*.tmp"))  # nothing half-published


def test_same_named_datasets_get_their_own_files_and_ids(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        pq.write_table(pa.Table.from_pylist([nebius_row(0)]), tmp_path / folder / "runs.parquet")
    result = run_import(
        [str(tmp_path / "a" / "runs.parquet"), str(tmp_path / "b" / "runs.parquet"), "--out", str(tmp_path / "out")],
        tmp_path / "hf",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (first,) = load(tmp_path / "out" / "runs.jsonl")
    (second,) = load(tmp_path / "out" / "runs-2.jsonl")
    assert first.id == "runs#0-astropy__astropy-1000" and second.id == "runs-2#0-astropy__astropy-1000"


def test_openhands_events_column_and_files_in_one_run(tmp_path: Path) -> None:
    """An OpenHands ``history`` event stream stored as JSON text, next to a plain transcript file."""
    events = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the bug."}},
        {"id": 2, "source": "agent", "action": "message", "args": {"content": "Fixed."}},
    ]
    source = tmp_path / "oh.parquet"
    pq.write_table(pa.Table.from_pylist([{"instance_id": "x__y-1", "history": json.dumps(events)}]), source)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    result = run_import([str(source), str(plain), "--out", str(tmp_path / "out")], tmp_path / "hf")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "total   files=2 failed=0 transcripts=2" in result.stdout
    (t,) = load(tmp_path / "out" / "oh.jsonl")
    assert t.source["format"] == "openhands"
    assert [m.role for m in t.messages] == ["system", "user", "assistant"]


@pytest.mark.parametrize("spec", ["hf:nebius", "hf:a/b/c"])
def test_bad_hf_spec(tmp_path: Path, spec: str) -> None:
    result = run_import([spec, "--out", str(tmp_path / "out")], tmp_path / "hf")
    assert result.returncode == 2 and "expected hf:ORG/NAME[@REVISION][:SPLIT]" in result.stdout


def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    """stderr on a pseudo-terminal gets tqdm's bar (the non-terminal case is checked above)."""
    import fcntl
    import pty
    import struct
    import termios

    source = tmp_path / "runs.parquet"
    pq.write_table(pa.Table.from_pylist([openai_row(i) for i in range(3)]), source)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a new pty is 0 columns wide
    command = [*CTXBENCH, "import", str(source), "--column", "conversation", "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=secondary, text=True, env=env)
    os.close(secondary)
    terminal = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    stdout, _ = proc.communicate(timeout=300)
    os.close(primary)
    assert proc.returncode == 0, stdout
    assert b"runs.parquet:" in terminal and b"0/3" in terminal  # drawn, then cleared (leave=False)


def test_dataset_dict_on_disk_gives_one_file_per_split(tmp_path: Path) -> None:
    saved = tmp_path / "runs"
    splits = {"train": [swegym_row(i) for i in range(2)], "test": [swegym_row(7)]}
    datasets.DatasetDict({k: datasets.Dataset.from_list(v) for k, v in splits.items()}).save_to_disk(str(saved))
    result = run_import([str(saved), "--out", str(tmp_path / "out")], tmp_path / "hf")
    assert result.returncode == 0, result.stdout + result.stderr
    assert [t.id for t in load(tmp_path / "out" / "runs.train.jsonl")] == [
        "runs:train#0-getmoto__moto-5000",
        "runs:train#1-getmoto__moto-5001",
    ]
    assert [t.id for t in load(tmp_path / "out" / "runs.test.jsonl")] == ["runs:test#0-getmoto__moto-5007"]


def test_row_shapes_other_datasets_use() -> None:
    """A ``Sequence({...})`` column decodes as a dict of lists; ShareGPT rows say from/value."""
    from ctxbench.transcripts.dataset_rows import row_document

    columnar = {"messages": {"role": ["user", "assistant"], "content": ["hi", "hello"]}}
    assert row_document(columnar, "messages")["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    sharegpt = {"conversations": [{"from": "human", "value": "fix it"}, {"from": "gpt", "value": "done"}]}
    messages = row_document(sharegpt, "conversations")["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [("user", "fix it"), ("assistant", "done")]
    steps = {"trajectory": [{"response": "ls", "observation": "a.py"}]}
    assert row_document(steps, "trajectory")["trajectory"] == steps["trajectory"]
