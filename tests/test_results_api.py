"""ctxbench.results: the documented Python API (load -> DataFrame, typed records), the resolved
config in summary.json, and the code fingerprint that makes changed replay code recompute a cell."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import ctxbench.results
from ctxbench.errors import InputError
from ctxbench.results import CallRecord, Judgment, Summary
from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript


def _run(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXBENCH, "run", *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("results_api")
    write_transcripts(tmp / "data" / "a.jsonl", [coding_transcript(rounds=20, tid="a")])
    write_transcripts(tmp / "data" / "b.jsonl", [coding_transcript(rounds=12, seed=1, tid="b")])
    done = _run(tmp, "-m", "strategy=none,sliding_window", "dataset.paths=[data]", "model=gpt-4-32k")
    assert done.returncode == 0, done.stderr
    return tmp


def test_load_gives_one_row_per_cell_with_identity_and_metrics(results):
    frame = ctxbench.results.load(results / "results")
    assert len(frame) == 4 and set(frame.strategy) == {"none", "sliding_window"} and set(frame.transcript) == {"a", "b"}
    for column in ("model", "config_hash", "calls", "tokens_sent_total", "retention", "code", "cell_dir"):
        assert column in frame, column
    none_a = frame[(frame.strategy == "none") & (frame.transcript == "a")].iloc[0]
    sliding_a = frame[(frame.strategy == "sliding_window") & (frame.transcript == "a")].iloc[0]
    assert sliding_a.tokens_sent_total <= none_a.tokens_sent_total
    # The same cells through a cell folder, a summary.json, or overlapping paths: no duplicates.
    cell = Path(none_a.cell_dir)
    assert len(ctxbench.results.load([cell, cell / "summary.json", results / "results"])) == 4
    with pytest.raises(InputError, match="no such file"):
        ctxbench.results.load(results / "nope")


def test_typed_records_for_summaries_calls_events_and_judgments(results):
    summaries = ctxbench.results.summaries(results / "results")
    assert all(isinstance(s, Summary) for s in summaries)
    s = next(s for s in summaries if s.strategy == "none" and s.transcript == "a")
    calls = ctxbench.results.calls(s.path)
    assert calls and all(isinstance(c, CallRecord) for c in calls)
    assert len(calls) == s.metrics["calls"] and sum(c.tokens_sent for c in calls) == s.metrics["tokens_sent_total"]
    assert "cost_usd_full" in calls[0].extra or calls[0].cost_usd is not None  # undeclared keys are kept
    judged = ctxbench.results.judgments(s.path)
    assert judged and all(isinstance(j, Judgment) and j.status in ("kept", "recoverable", "lost") for j in judged)
    assert isinstance(ctxbench.results.events(s.path), list)


def test_summary_carries_the_resolved_config_and_the_code_fingerprint(results):
    s = next(iter(ctxbench.results.summaries(results / "results")))
    assert s.config is not None
    assert s.config["model"]["name"] == "gpt-4-32k" and s.config["dataset"]["paths"] == ["data"]
    assert s.config["strategy"]["name"] == s.strategy
    assert "${" not in json.dumps(s.config)  # interpolations resolved
    assert s.code == ctxbench.results.store.code_fingerprint() and len(s.code) == 12


def test_changed_replay_code_recomputes_a_cell_unless_reuse_stale(tmp_path):
    """A copy of ctxbench with one layer edited gives a different fingerprint; its run recomputes
    the cell the original wrote, and --reuse-stale keeps it instead."""
    copy = tmp_path / "code"
    shutil.copytree(ROOT / "ctxbench", copy / "ctxbench", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copytree(ROOT / "hydra_plugins", copy / "hydra_plugins", ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    write_transcripts(work / "data" / "a.jsonl", [coding_transcript(rounds=10, tid="a")])
    args = ("strategy=sliding_window", "dataset.paths=[data]")
    env = {"PYTHONPATH": str(copy), "PATH": "", "HF_HUB_OFFLINE": "1"}
    assert _run(work, *args, env=env).returncode == 0
    summary = next(work.rglob("summary.json"))
    first, written = json.loads(summary.read_text()), summary.stat().st_mtime_ns
    assert _run(work, *args, env=env).returncode == 0
    assert summary.stat().st_mtime_ns == written  # same code: reused
    layer = copy / "ctxbench" / "strategies" / "sliding_window.py"
    layer.write_text(layer.read_text() + "\n# an edit\n")
    kept = _run(work, *args, "--reuse-stale", env=env)
    assert kept.returncode == 0 and summary.stat().st_mtime_ns == written
    redone = _run(work, *args, env=env)
    assert redone.returncode == 0, redone.stderr
    assert "(1 recomputed: code changed)" in redone.stderr
    again = json.loads(summary.read_text())
    assert again["code"] != first["code"] and again["metrics"] == first["metrics"]  # the comment changed nothing


def test_a_cell_is_written_as_json_dumps_would_and_its_nan_metrics_as_null(tmp_path):
    from ctxbench.results.reader import verify_cell
    from ctxbench.results.store import Cell

    rows = [{"call": 0, "type": "note", "text": 'naïve ✓ "quoted"\n', "nested": {"b": [1, 2.5, None, True]}}]
    calls = [{"call": 0, "tokens_sent": 5, "tokens_uncompacted": 9, "accepted": True, "layers": ["a"]}]
    metrics = {"savings": float("nan"), "tokens_sent_total": 5, "by": {"x": [float("inf"), 1.0]}, "ok": 0.25}
    info = {"config": {"threshold": float("nan")}}  # NaN outside the metrics stays as json.dumps writes it
    folder = Cell(tmp_path, "t", "none", "m", "h").write(
        calls=calls, events=rows, metrics=metrics, info=info, extra_files={"retention.jsonl": []}
    )
    for name, written in (("calls.jsonl", calls), ("events.jsonl", rows)):
        want = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in written)
        assert (folder / name).read_text("utf-8") == want
    summary = json.loads((folder / "summary.json").read_text("utf-8"))
    assert summary["metrics"] == {"savings": None, "tokens_sent_total": 5, "by": {"x": [None, 1.0]}, "ok": 0.25}
    assert '"threshold": NaN' in (folder / "summary.json").read_text("utf-8")
    finite = Cell(tmp_path, "u", "none", "m", "h").write(calls=calls, events=[], metrics={"ok": 0.5}, info={})
    text = (finite / "summary.json").read_text("utf-8")
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    assert verify_cell(finite)["metrics"] == {"ok": 0.5}


def test_a_summary_only_check_skips_the_records_but_not_the_digests(tmp_path):
    """The table printed after a run reads only summaries (``records=False``): a record the schema
    refuses is still refused by the full check, and a changed file by both."""
    from ctxbench.results.reader import verify_cell
    from ctxbench.results.store import Cell

    bad = [{"call": "zero", "tokens_sent": 5, "tokens_uncompacted": 9, "accepted": True}]  # call is not an int
    folder = Cell(tmp_path, "t", "none", "m", "h").write(calls=bad, events=[], metrics={"ok": 0.5}, info={})
    # Cell.write sealed it: the manifest matches the files, so only the schema can refuse the record
    assert verify_cell(folder, records=False)["metrics"] == {"ok": 0.5}
    with pytest.raises(InputError, match=r"calls\.jsonl.*line 1.*\$\.call"):
        verify_cell(folder)
    (folder / "calls.jsonl").write_text("{}\n", "utf-8")
    for records in (True, False):
        with pytest.raises(InputError, match="changed since the cell was published"):
            verify_cell(folder, records=records)
