import json

from ctxbench.judges.deterministic import DeterministicJudge, normalise
from ctxbench.layers.snapshot_store import StoredSnapshots
from ctxbench.probes.metrics import retention_metrics
from ctxbench.transcripts.model import Message, Probe

PROBE = Probe("p", "Which port?", "47213", "recall", 1)


def test_kept_verbatim_fact_is_scored_kept():
    working = [Message("system", "s"), Message("user", "The dev server listens on port 47213.")]
    assert DeterministicJudge().judge(PROBE, working).status == "kept"


def test_dropped_fact_is_scored_lost():
    working = [Message("system", "s"), Message("user", "The dev server listens on port 47214.")]
    assert DeterministicJudge().judge(PROBE, working).status == "lost"


def test_fact_behind_a_snapshot_pointer_is_scored_recoverable(tmp_path):
    snapshot = tmp_path / "step_003_sql_query.json"
    snapshot.write_text(json.dumps({"step": 3, "observation": "server on port 47213\n中文"}), encoding="utf-8")
    working = [Message("user", f"Observation: server on ... [truncated, full detail at: {snapshot}]")]
    verdict = DeterministicJudge(StoredSnapshots(tmp_path)).judge(PROBE, working)
    assert verdict.status == "recoverable" and verdict.evidence == str(snapshot)
    # Without the strategy's snapshot source the judge follows no pointer.
    assert DeterministicJudge().judge(PROBE, working).status == "lost"
    # A pointer to a snapshot without the fact does not make it recoverable.
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"observation": "nothing here"}), encoding="utf-8")
    judge = DeterministicJudge(StoredSnapshots(tmp_path))
    assert judge.judge(PROBE, [Message("user", f"[Full detail available at: {other}]")]).status == "lost"


def test_matching_is_case_and_space_insensitive_and_sees_tool_call_arguments():
    probe = Probe("p", "Which file?", "src/App Config.py", "artifact", 0)
    from ctxbench.transcripts.model import ToolCall

    working = [Message("assistant", "", tool_calls=(ToolCall("a", "read_file", '{"path": "SRC/app   config.py"}'),))]
    assert DeterministicJudge().judge(probe, working).status == "kept"
    assert normalise("  A\n\tB ") == "a b"


def test_retention_metrics_name_the_layer_that_dropped_a_fact():
    rows = [
        {
            "checkpoint": "periodic",
            "call": 1,
            "probe": "p",
            "kind": "recall",
            "age_calls": 1,
            "compactions": 0,
            "status": "kept",
            "layers": [],
        },
        {
            "checkpoint": "compaction",
            "call": 5,
            "probe": "p",
            "kind": "recall",
            "age_calls": 5,
            "compactions": 1,
            "status": "lost",
            "layers": ["layer2"],
        },
        {
            "checkpoint": "end",
            "call": 9,
            "probe": "p",
            "kind": "recall",
            "age_calls": 9,
            "compactions": 1,
            "status": "lost",
            "layers": [],
        },
        {
            "checkpoint": "end",
            "call": 9,
            "probe": "q",
            "kind": "decision",
            "age_calls": 2,
            "compactions": 1,
            "status": "kept",
            "layers": [],
        },
    ]
    m = retention_metrics(rows, {"p": "47213", "q": "because"})
    assert m["retention"] == 0.5 and m["retention_by_kind"] == {"decision": 1.0, "recall": 0.0}
    assert m["dropped"] == [
        {
            "probe": "p",
            "kind": "recall",
            "label": None,  # the rows carried no label or question (issue 15: dropped facts say what was asked)
            "question": None,
            "answer": "47213",
            "status": "lost",
            "first_missing_call": 5,
            "layers": ["layer2"],
        }
    ]


def test_values_inside_json_tool_arguments_match_unescaped():
    from ctxbench.transcripts.model import ToolCall

    probe = Probe("c", "Which command?", 'find src -name "*cli*.pony"', "continuation", 0)
    call = ToolCall("a", "execute_bash", '{"command": "find src -name \\"*cli*.pony\\""}')
    assert DeterministicJudge().judge(probe, [Message("assistant", "", tool_calls=(call,))]).status == "kept"


def test_relative_snapshot_pointers_resolve_against_the_run_folder(tmp_path):
    (tmp_path / "op_snapshots").mkdir()
    (tmp_path / "op_snapshots" / "step_001_bash.json").write_text(json.dumps({"observation": "port 47213"}))
    working = [Message("user", "Observation: ... [truncated, full detail at: op_snapshots/step_001_bash.json]")]
    assert DeterministicJudge(StoredSnapshots(tmp_path)).judge(PROBE, working).status == "recoverable"
    assert DeterministicJudge().judge(PROBE, working).status == "lost"  # no snapshots: the pointer leads nowhere


def test_pointers_into_the_cells_snapshot_store_are_followed_as_it_grows(tmp_path):
    """DB-GPT's snapshots are kept in memory while the replay runs (written to
    <cell>/op_snapshots.jsonl when the cell is published); the judge runs mid-replay, so a
    snapshot added after its first lookup must still be found."""
    from ctxbench.layers.snapshot_store import SnapshotStore

    memory = SnapshotStore("op_snapshots")
    memory.add("op_snapshots/step_001_bash.json", {"observation": "nothing here"})
    # As the snapshot layer hands it to the judge: the replay's records, in memory.
    judge = DeterministicJudge(StoredSnapshots(tmp_path, memory=memory))
    first = [Message("user", "Observation: ok\n[Full detail available at: op_snapshots/step_001_bash.json]")]
    assert judge.judge(PROBE, first).status == "lost"
    later = [*first, Message("user", "... [truncated, full detail at: op_snapshots/step_002_bash.json]")]
    assert judge.judge(PROBE, later).status == "lost"  # not written yet: looked up again next time
    memory.add("op_snapshots/step_002_bash.json", {"observation": "The server listens on port 47213"})
    verdict = judge.judge(PROBE, later)
    assert verdict.status == "recoverable" and verdict.evidence == "op_snapshots/step_002_bash.json"
    assert not list(tmp_path.iterdir())  # found in memory: nothing is written during the replay


def test_a_pointer_that_never_resolves_is_looked_for_on_disk_once(tmp_path):
    """Layer 1 may cut an observation inside its own pointer, leaving a path that names no
    snapshot. The judge asks at every checkpoint; with the replay's own store (nothing writes the
    cell's files while it runs) the disk is searched for it once, the store every time."""
    from ctxbench.layers.snapshot_store import SnapshotStore

    class CountingSnapshots(StoredSnapshots):
        searched: list[str] = []

        def _read_disk(self, pointer):
            self.searched.append(pointer)
            return super()._read_disk(pointer)

    memory = SnapshotStore("op_snapshots")
    source = CountingSnapshots(tmp_path, memory=memory)
    judge = DeterministicJudge(source)
    cut = "op_snapshots/step_00... [truncated, full detail at: op_snapshots/step_001_bash.json"
    context = [Message("user", f"Observation: ...\n[Full detail available at: {cut}]")]
    assert source.pointers(context[0].content) == [cut]
    for _ in range(3):
        assert judge.judge(PROBE, context).status == "lost"
    assert source.searched == [cut]
    memory.add(cut, {"observation": "port 47213"})  # (the store may still get any path)
    assert judge.judge(PROBE, context).status == "recoverable"
    # A reader of a published cell (no replay store) asks the disk every time: files may appear.
    reader = CountingSnapshots(tmp_path)
    reader.searched.clear()
    for _ in range(2):
        assert DeterministicJudge(reader).judge(PROBE, context).status == "lost"
    assert reader.searched == [cut, cut]


def test_snapshot_golds_of_several_words_are_matched_case_and_space_insensitively(tmp_path):
    # The judge finds a snapshot's golds by their longest word first and normalises its text only to
    # confirm a gold of several words: across case, whitespace runs and the record's string values.
    snapshot = tmp_path / "step_004_bash.json"
    snapshot.write_text(json.dumps({"action": "bash", "observation": "Deploy TARGET:\n   us-east-2\tREGION"}), "utf-8")
    working = [Message("user", f"[Full detail available at: {snapshot}]")]
    several = Probe("p", "Where?", "target: us-east-2 region", "recall", 0)
    across_values = Probe("q", "What ran?", "bash deploy target:", "recall", 0)
    absent = Probe("r", "Where?", "us-east-2 zone", "recall", 0)
    judge = DeterministicJudge(StoredSnapshots(tmp_path))
    assert [v.status for v in judge.judge_many([several, across_values, absent], working)] == [
        "recoverable",
        "recoverable",
        "lost",
    ]
