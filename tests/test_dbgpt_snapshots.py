"""DB-GPT tool-result snapshots: a record per successful action (a line of the cell's store, under
DB-GPT's file path), the pointer in the prompt, task progress."""

import json
import os
import re

import pytest

from ctxbench.errors import InputError
from ctxbench.layers.observation_micro import ObservationMicroCompact
from ctxbench.layers.snapshot_store import (
    POINTER_MARK,
    POINTER_PATTERN,
    SnapshotReader,
    SnapshotStore,
    StoredSnapshots,
    snapshot_line,
    store_path,
)
from ctxbench.layers.snapshots import EPOCH, MAX_STEP_TIMES, ToolResultSnapshots, file_name, react_fields, step_time
from ctxbench.transcripts.model import Message
from tests.dbgpt_histories import TASK, make_ctx, react_history, tool_history


def stored(folder) -> dict:
    """The cell's snapshot store as {path: record}, in the order written."""
    lines = (folder / "op_snapshots.jsonl").read_text("utf-8").splitlines()
    return {entry["path"]: entry["snapshot"] for entry in map(json.loads, lines)}


def _feed(layer, history, ctx, calls):
    """Replay ``history`` call by call the way the engine does: new messages, then the layer;
    then publish the cell's files as ``ctxbench run`` does."""
    working, start = [], 0
    for at in calls:
        ctx.new_messages = history[start:at]
        working = layer.apply(working + ctx.new_messages, ctx)
        working.append(history[at])
        start = at + 1
    if ctx.workdir is not None:
        layer.write_files(ctx.workdir)  # the cell is published: the store is written
    return working


def test_file_name():
    assert file_name(3, "sql_query") == "step_003_sql_query.json"
    assert file_name(12, "code interpreter/run") == "step_012_code_interpreter_run.json"
    assert file_name(1000, "") == "step_1000_action.json"


def test_react_fields():
    text = (
        "Thought: look\nmore\nPhase: explore\nAction Intention: see\nAction Reason: why\n"
        "Action: sql_query\nAction Input: {}"
    )
    assert react_fields(text) == {
        "thought": "look\nmore",
        "phase": "explore",
        "action_intention": "see",
        "action_reason": "why",
        "action": "sql_query",
        "action_input": "{}",
    }
    assert react_fields("Observation: 3 rows") == {}  # a label word, but no field of an action
    assert react_fields("Reading module 3; the action is next.") == {}  # no label word (a tool-calling reply)


def test_step_times_are_the_epoch_plus_the_step_in_seconds():
    """The timestamps kept per step number are the ones made for each snapshot before (steps past
    the kept ones are made each time)."""
    from datetime import timedelta

    steps = [*range(0, 3000, 7), 86_399, 86_400, MAX_STEP_TIMES - 1, MAX_STEP_TIMES, MAX_STEP_TIMES + 5]
    for step in [*steps, *reversed(steps)]:
        assert step_time(step) == (EPOCH + timedelta(seconds=step)).isoformat()


def test_snapshot_files_fields_and_pointers(tmp_path):
    history = react_history(3, obs_chars=300)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "Thought: done\nAction: terminate"))
    ctx = make_ctx(history, workdir=tmp_path, transcript_id="conv-42")
    working = _feed(ToolResultSnapshots(), history, ctx, calls)
    store = stored(tmp_path)
    files = [path.removeprefix("op_snapshots/") for path in store]
    assert files == ["step_001_sql_query.json", "step_002_sql_query.json", "step_003_sql_query.json"]
    assert not (tmp_path / "op_snapshots").exists()  # no file per snapshot
    record = store["op_snapshots/step_002_sql_query.json"]
    assert set(record) == {
        "step", "action", "phase", "action_intention", "action_reason", "thought", "action_input",
        "observation", "timestamp", "conv_id",
    }  # fmt: skip
    assert record["step"] == 2 and record["action"] == "sql_query" and record["conv_id"] == "conv-42"
    assert record["phase"] == "explore" and record["action_intention"] == "look at table 1"
    assert record["action_input"] == '{"sql": "SELECT 1"}' and record["thought"] == "step 1"
    assert record["observation"] == history[5].content  # the full observation, not the prompt text
    assert record["timestamp"] == "2000-01-01T00:00:02+00:00"  # from the step: reproducible
    observations = [m for m in working if m.content.startswith("Observation")]
    assert [m.metadata["snapshot"] for m in observations] == [f"op_snapshots/{f}" for f in files]
    assert observations[0].content.endswith("\n[Full detail available at: op_snapshots/step_001_sql_query.json]")


def test_tool_results_get_tool_name_and_arguments_and_errors_are_skipped(tmp_path):
    history = tool_history(2)
    history[4] = history[4].replace(metadata={"is_error": True})  # the grep of round 0 failed
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "done"))
    ctx = make_ctx(history, workdir=tmp_path)
    _feed(ToolResultSnapshots(), history, ctx, calls)
    store = stored(tmp_path)
    assert list(store) == [
        f"op_snapshots/{f}" for f in ("step_001_read_file.json", "step_002_read_file.json", "step_003_grep.json")
    ]
    record = store["op_snapshots/step_001_read_file.json"]
    assert record["action_input"] == '{"path": "src/m0.py"}' and record["thought"] == "Reading module 0."


def test_without_workdir_nothing_is_written_but_prompt_is_the_same(tmp_path):
    history = react_history(2)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "end"))
    with_dir = _feed(ToolResultSnapshots(), history, make_ctx(history, workdir=tmp_path), calls)
    without = _feed(ToolResultSnapshots(), history, make_ctx(history), calls)
    assert [m.content for m in with_dir] == [m.content for m in without]


def _dbgpt_source(relative: str) -> str:
    """A module of the installed dbgpt wheel (scripts/setup.sh installs it), read as text: importing
    dbgpt.agent pulls in most of DB-GPT (reference.md 7)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("dbgpt")
    assert spec is not None and spec.origin, "dbgpt==0.8.2 is not installed (scripts/setup.sh installs it)"
    return (Path(spec.origin).parent / relative).read_text("utf-8")


def dbgpt_progress_text(entries: list[dict], question: str) -> str:
    """What DB-GPT 0.8.2's own code puts in the ReAct system prompt: ``Role.task_progress_summary``
    (role.py) run on ``entries``, rendered into ``_REACT_SYSTEM_TEMPLATE`` (react_agent.py) from its
    ``{% if task_progress %}`` line to ``{{ question }}``, with DB-GPT's sandboxed jinja environment."""
    import ast
    import textwrap
    from types import SimpleNamespace
    from typing import Optional

    from jinja2.sandbox import SandboxedEnvironment

    role = _dbgpt_source("agent/core/role.py")
    tree = ast.parse(role)
    function = next(
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "task_progress_summary"
    )
    namespace: dict = {"os": os, "Optional": Optional}
    exec(textwrap.dedent(ast.get_source_segment(role, function) or ""), namespace)  # noqa: S102 - DB-GPT's code
    progress = namespace["task_progress_summary"](SimpleNamespace(_task_progress=entries))
    react = _dbgpt_source("agent/expand/react_agent.py")
    template = next(
        ast.literal_eval(node.value)
        for node in ast.walk(ast.parse(react))
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_REACT_SYSTEM_TEMPLATE"
    )
    segment = template[template.index("{% if task_progress %}") : template.index("{{ question }}") + 14]
    return SandboxedEnvironment().from_string(segment).render(task_progress=progress, question=question)


def test_task_progress_block_is_byte_for_byte_dbgpts(tmp_path):
    """The block in the system message is what DB-GPT's own role.py and react_agent.py write: the title
    `## Task Progress (do NOT repeat completed steps)`, every step as `✅ Step N: Action=... | Intention:
    ... | Phase: ... | ref: <snapshot file>`, the two instructions and the whole question."""
    history = react_history(3)
    long_task = TASK + " Details: " + "the revenue is net of refunds; " * 200  # over 2,000 chars: never cut
    history[1] = history[1].replace(content=long_task)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "end"))
    working = _feed(ToolResultSnapshots(), history, make_ctx(history, workdir=tmp_path), calls)
    entries = [
        {
            "step": record["step"],
            "action": record["action"],
            "phase": record["phase"],
            "action_intention": record["action_intention"],
            "action_reason": record["action_reason"],
            "status": "done",
            "snapshot_file": path,
        }
        for path, record in stored(tmp_path).items()
    ]
    assert len(entries) == 3 and entries[0]["phase"] == "explore"
    expected = dbgpt_progress_text(entries, long_task)
    assert "## Task Progress (do NOT repeat completed steps)" in expected
    assert (
        "✅ Step 1: Action=sql_query | Intention: look at table 0 | Phase: explore | ref: step_001_sql_query.json"
        in (expected)
    )
    assert working[0].content == "You are a ReAct data agent.\n" + expected
    assert sum(m.role == "system" for m in working) == 1


def test_task_progress_limits_and_options():
    history = react_history(5, system=False)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "end"))
    working = _feed(ToolResultSnapshots(progress_max_steps=2, task_max_chars=10), history, make_ctx(history), calls)
    assert working[0].role == "system"  # added when the transcript has none
    lines = working[0].content.splitlines()
    assert lines[1:4] == [
        "(3 earlier steps, snapshots in op_snapshots/)",  # shortened on request only: DB-GPT shows every step
        "✅ Step 4: Action=sql_query | Intention: look at table 3 | Phase: explore | ref: step_004_sql_query.json",
        "✅ Step 5: Action=sql_query | Intention: look at table 4 | Phase: explore | ref: step_005_sql_query.json",
    ]
    assert lines[-1] == f"{TASK[:10]} ..."
    off = _feed(ToolResultSnapshots(task_progress=False), history, make_ctx(history), calls)
    assert all(m.role != "system" for m in off)
    disabled = _feed(ToolResultSnapshots(enabled=False), history, make_ctx(history), calls)
    assert [m.content for m in disabled] == [m.content for m in history]


# Intentions and phases around which pre-tokenizers behave differently (tests/test_line_starts.py):
# line breaks and indented lines, runs of spaces, "/" (o200k's "\n/"), Unicode spaces, CJK, emoji.
ODD_FIELDS = ["look  at /x", "a\n  indented\n/next", "\u00a0nbsp ✅", "中文 'll", "end with space ", "9/9", "\t\ttab"]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])  # o200k_base, cl100k_base
@pytest.mark.parametrize(("max_steps", "system"), [(0, True), (3, True), (0, False), (2, False)])
def test_the_progress_block_summed_line_by_line_is_its_count(model: str, max_steps: int, system: bool) -> None:
    """DB-GPT's estimator keeps the system prompt's count as the sum of its block's pieces (the head,
    the notice, each step line, the tail), each line counted once: at every step that count, put
    where the tokenizer keeps content counts before anything counted the message, is the tokenizer's
    count of the whole text, with intentions and phases that tokenize oddly, several steps a call."""
    from ctxbench.tokens.base import content_key
    from ctxbench.tokens.dbgpt import DbgptEstimator

    history = react_history(0, system=system)
    for i in range(40):
        intention, phase = ODD_FIELDS[i % len(ODD_FIELDS)], ODD_FIELDS[(i * 3 + 1) % len(ODD_FIELDS)]
        fields = f"Phase: {phase}\nAction Intention: {intention} {i}\nAction: run/{i % 3}"
        action = f"Thought: t{i}\n{fields}\nAction Input: x"
        history += [Message("assistant", action), Message("user", f"Observation: out {i}")]
    calls = [i for i, m in enumerate(history) if m.role == "assistant" and i % 3 != 1] + [len(history)]
    history.append(Message("assistant", "end"))
    estimator = DbgptEstimator(model)
    tokenizer = estimator.tokenizer
    assert tokenizer is not None and tokenizer.splits_at_line_starts
    layer, ctx = ToolResultSnapshots(progress_max_steps=max_steps), make_ctx(history, estimator=estimator)
    working, start, checked = [], 0, 0
    for at in calls:
        ctx.new_messages = history[start:at]
        working = layer.apply(working + ctx.new_messages, ctx)
        block = working[0]
        if "task_progress_base" in block.metadata:
            assert block.token_cache[content_key(tokenizer.name)] == tokenizer.count(block.content)
            assert estimator.message(block) == tokenizer.count(block.content)
            checked += 1
        working.append(history[at])
        start = at + 1
    assert checked >= len(calls) - 2 and len(layer.progress) == 40
    assert ("earlier steps" in working[0].content) == (max_steps > 0)


def test_layer1_keeps_the_pointer_when_truncating():
    history = react_history(8, obs_chars=1000)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "end"))
    ctx = make_ctx(history)
    working = _feed(ToolResultSnapshots(), history, ctx, calls)
    out = ObservationMicroCompact().apply(working, ctx)
    first = next(m for m in out if m.content.startswith("Observation"))
    assert first.content.endswith("... [truncated, full detail at: op_snapshots/step_001_sql_query.json]")
    assert len(first.content) == 200 + len("... [truncated, full detail at: op_snapshots/step_001_sql_query.json]")


def test_snapshot_lines_are_utf8_json_even_with_a_lone_surrogate() -> None:
    record = {"step": 1, "observation": "中文 ok"}
    line = snapshot_line("op_snapshots/step_001_x.json", record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"path": "op_snapshots/step_001_x.json", "snapshot": record}
    assert "中文".encode() in line  # not \\u-escaped
    odd = {"step": 2, "observation": "bad \ud800 half"}  # json.loads("\"\\ud800\"") gives this
    assert json.loads(snapshot_line("p/q.json", odd))["snapshot"] == odd


def test_a_rerun_of_the_cell_replaces_the_store(tmp_path) -> None:
    history = react_history(3)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "end"))
    for _ in range(2):  # a fresh layer per replay, as a rerun (or a resumed sweep) builds one
        _feed(ToolResultSnapshots(), history, make_ctx(history, workdir=tmp_path), calls)
    assert len((tmp_path / "op_snapshots.jsonl").read_text("utf-8").splitlines()) == 3


def test_reader_follows_a_growing_store_and_skips_an_unfinished_line(tmp_path) -> None:
    """A store read from disk (a published cell, or one written by another process) may grow."""
    memory = SnapshotStore("op_snapshots")
    memory.add("op_snapshots/step_001_a.json", {"step": 1, "observation": "one"})
    memory.write(tmp_path)
    store = store_path(tmp_path, "op_snapshots/step_001_a.json")
    assert store == tmp_path / "op_snapshots.jsonl"
    reader = SnapshotReader(store)
    assert reader.get("op_snapshots/step_001_a.json") == {"step": 1, "observation": "one"}
    assert reader.get("op_snapshots/step_002_b.json") is None
    with open(store, "ab") as handle:  # another line, written later
        handle.write(snapshot_line("op_snapshots/step_002_b.json", {"step": 2, "observation": "two"}))
    half = snapshot_line("op_snapshots/step_003_c.json", {"step": 3})[:-5]
    with open(store, "ab") as handle:  # a run cut short mid-line
        handle.write(half)
    assert reader.get("op_snapshots/step_002_b.json") == {"step": 2, "observation": "two"}
    assert reader.get("op_snapshots/step_003_c.json") is None
    assert store_path(tmp_path, "step_001_a.json") is None and store_path(tmp_path, os.path.abspath("x/y")) is None


def test_a_corrupt_store_line_is_named_with_its_file_and_byte(tmp_path) -> None:
    store = tmp_path / "op_snapshots.jsonl"
    good = snapshot_line("op_snapshots/step_001_a.json", {"step": 1})
    store.write_bytes(good + b'{"path": "op_snapshots/step_002_b.json"\n')
    with pytest.raises(InputError, match=rf"op_snapshots.jsonl:byte {len(good)}: not a snapshot line"):
        SnapshotReader(store).get("op_snapshots/step_009.json")


def test_the_strategy_hands_the_judge_its_snapshots(tmp_path) -> None:
    """The judge follows pointers through the SnapshotSource the strategy provides
    (ctxbench.core), not by knowing DB-GPT's store: a strategy without snapshots gives none."""
    from ctxbench.core import SnapshotSource, Strategy
    from ctxbench.judges.deterministic import DeterministicJudge
    from ctxbench.strategies.pipeline import LayeredStrategy
    from ctxbench.transcripts.model import Probe

    history = react_history(2, obs_chars=300)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "Thought: done\nAction: terminate"))
    snapshots_layer = ToolResultSnapshots()
    working = _feed(snapshots_layer, history, make_ctx(history, workdir=tmp_path), calls)
    strategy = LayeredStrategy(prepare=[snapshots_layer])
    source = strategy.snapshots(tmp_path)
    assert isinstance(source, SnapshotSource)
    assert Strategy().snapshots(tmp_path) is None and LayeredStrategy().snapshots(tmp_path) is None
    assert ToolResultSnapshots(enabled=False).snapshots(tmp_path) is None
    # A fact only in the first observation: gone from a context that keeps just the pointer.
    fact = history[[m.content.startswith("Observation") for m in history].index(True)].content[-40:]
    probe = Probe("p", "What was observed?", fact, "fact", 0)
    pointer_only = [
        m.replace(content=f"[Full detail available at: {m.metadata['snapshot']}]")
        for m in working
        if m.metadata.get("snapshot")
    ]
    assert DeterministicJudge(source).judge(probe, pointer_only[:1]).status == "recoverable"
    assert DeterministicJudge().judge(probe, pointer_only[:1]).status == "lost"


def test_pointers_are_the_paths_dbgpt_writes(tmp_path):
    """DB-GPT writes $DBGPT_HOME/workspace/op_snapshots/<conv_id>/step_NNN_<action>.json (role.py,
    _write_op_snapshot) and the prompt points at that path: the configured strategy does the same,
    so every pointer costs the tokens it costs in DB-GPT, and the judge still finds the record."""
    from ctxbench.build import build_strategy
    from ctxbench.layers.snapshot_store import StoredSnapshots
    from tests.test_strategy_dbgpt import composed

    layer = build_strategy(composed()).prepare_layers[0]
    history = react_history(2, obs_chars=300)
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    history.append(Message("assistant", "Thought: done"))
    ctx = make_ctx(history, workdir=tmp_path, transcript_id="conv-42")
    working = _feed(layer, history, ctx, calls)
    pointer = "/root/.dbgpt/workspace/op_snapshots/conv-42/step_001_sql_query.json"
    observation = next(m for m in working if m.content.startswith("Observation:"))
    assert observation.content.endswith(f"\n[Full detail available at: {pointer}]")
    source = StoredSnapshots(tmp_path)
    assert source.pointers(observation.content) == [pointer]
    assert source.read(pointer)["step"] == 1 and source.read(pointer)["conv_id"] == "conv-42"


def test_file_name_is_dbgpt_safe_action():
    """role.py: every character but letters, digits, - and _ becomes _, one for one."""
    assert file_name(3, "code interpreter/run") == "step_003_code_interpreter_run.json"
    assert file_name(4, "a..b  c") == "step_004_a__b__c.json"
    assert file_name(5, "read.file") == "step_005_read_file.json"


def test_the_store_is_kept_in_memory_during_the_replay_and_written_whole_with_the_cell(tmp_path) -> None:
    """Nothing is serialised or written while the replay runs (the judge reads the records in
    memory); ``write_files`` writes every record, in order, replacing an earlier run's store."""
    from ctxbench.transcripts.rounds import is_observation
    from tests.test_strategy_dbgpt import _replay, react_transcript

    cell = tmp_path / "cell"
    cell.mkdir()
    (cell / "op_snapshots.jsonl").write_text("an earlier run's line\n")
    strategy, result = _replay(cell)
    assert (cell / "op_snapshots.jsonl").read_text() == "an earlier run's line\n"  # untouched by the replay
    source = strategy.snapshots(cell)
    assert source.read("/root/.dbgpt/workspace/op_snapshots/react40/step_001_sql_query.json")["step"] == 1
    strategy.write_files(cell)
    transcript = react_transcript()
    arrived = [m for m in transcript.messages[: transcript.call_indices[-1]] if is_observation(m)]
    steps = [record["step"] for record in stored(cell).values()]
    assert len(arrived) > 10 and steps == list(range(1, len(arrived) + 1))
    assert result.calls  # the replay itself ran


def test_task_progress_block_is_dbgpts_on_real_runs(shared_transcripts, tmp_path):
    """`strategy=dbgpt` replayed on real agents' runs (OpenHands, SWE-agent, mini-swe-agent; a 12k window):
    the system message of the last call carries, after the agent's own prompt, exactly the text DB-GPT's
    role.py and react_agent.py render from the steps the store holds and the run's whole task."""
    from hydra import compose, initialize_config_dir

    from ctxbench.build import build_estimator, build_model, build_strategy
    from ctxbench.replay.engine import replay
    from ctxbench.run_app import CONFIG_DIR
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer
    from ctxbench.transcripts.importer import import_file

    runs = [
        "openhands-multi-swe-bench-example/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
        "swe-agent-official/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__"
        "function_calling_replace__install-1/marshmallow-code__marshmallow-1867.traj",
        next(p for p in sorted((shared_transcripts / "mini-swe-agent-deepseek").rglob("*.traj.json"))),
    ]
    compared = 0
    for name in runs:
        transcript = next(t for t in import_file(shared_transcripts / name) if t.call_indices)
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose("config", overrides=["strategy=dbgpt", "model=gpt-4o", "model.context_window=12000"])
        strategy, model = build_strategy(cfg), build_model(cfg)
        work = tmp_path / f"run{compared}"
        work.mkdir()
        counter = TokenCounter(get_tokenizer(model.tokenizer)).for_transcript(transcript)
        result = replay(transcript, strategy, build_estimator(cfg), model, counter, workdir=work)
        strategy.write_files(work)
        entries = [
            {**{k: record[k] for k in ("step", "action", "phase", "action_intention", "action_reason")}}
            | {"status": "done", "snapshot_file": path}
            for path, record in stored(work).items()
        ]
        assert entries, name
        task = next(m.content for m in transcript.messages if m.role == "user")
        system = next(m for m in result.working if m.role == "system")
        own = next(m for m in transcript.messages if m.role == "system").content
        assert system.content == own + "\n" + dbgpt_progress_text(entries, task), name
        compared += 1
    assert compared == 3


def test_the_pointer_mark_is_in_every_pointer_lowercased(tmp_path) -> None:
    """pointers() skips a text whose lowercase lacks POINTER_MARK: sound only if every character
    that matches a mark character under re.IGNORECASE lowercases to it (every code point tried;
    "i", for one, would not do: the dotless ı matches it), and the pointers are the pattern's."""
    mark = POINTER_MARK
    assert mark in POINTER_PATTERN.pattern
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    for char in set(mark):
        matched = set(re.findall(re.escape(char), every, re.IGNORECASE))
        assert {m for m in matched if m.lower() != char} == set()
        assert {m for m in matched if not m.isascii()} == set()  # so the UTF-8 bytes' ASCII lowering finds it
        assert {m for m in matched if m.casefold() != char} == set()  # and so does the judge's casefold
    assert [m for m in re.findall("i", every, re.IGNORECASE) if m.lower() != "i"]  # the check can fail
    source = StoredSnapshots(tmp_path)
    texts = [
        "ok\n[Full detail available at: op_snapshots/step_001_a.json]",
        "cut... [truncated, full detail at: /root/x/step_002_b.json] and FULL DETAIL AT: c.json]",
        "İstanbul FULL DETAIL AVAILABLE AT:  spaced.json ]\nfull detaıl at: dotless.json]",
        "ſ full\tdetail at: no.json] fuLL DeTaIl aT: mixed.json]",
        "no pointer here: detail at: x]",
        "",
        "日本語 FuLl DeTaIl at: kanji/步骤.json] \udcff full detail at: surrogate.json]",
        "Ｆull detail at: fullwidth.json] ﬀull detail at: ligature.json]",
    ]
    for text in texts:
        assert source.pointers(text) == [p.strip() for p in POINTER_PATTERN.findall(text)]
        assert source.pointers_folded(text, text.casefold()) == source.pointers(text)
    assert source.pointers(texts[2]) == ["spaced.json", "dotless.json"]
    assert source.pointers(texts[6]) == ["kanji/步骤.json", "surrogate.json"]
    assert source.pointers(texts[7]) == []  # fullwidth F and the ff ligature match no f
