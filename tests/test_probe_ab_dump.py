"""scripts/probe_ab_dump.py: the A/B groups, the blind sample and the weighted shares."""

import importlib.util

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("probe_ab_dump", ROOT / "scripts" / "probe_ab_dump.py")
assert _spec is not None and _spec.loader is not None
ab_dump = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ab_dump)


def probe(run: str, answer: str, kind: str = "decision") -> dict[str, object]:
    return {"run": run, "transcript": "t", "type": kind, "question": "q", "answer": answer, "at": 1}


def test_a_probe_is_common_by_run_type_and_folded_answer():
    old = {"probes": [probe("a#t", "Kept  X"), probe("b#t", "kept x"), probe("a#t", "gone")]}
    new = {"probes": [probe("a#t", "kept x"), probe("b#t", "kept x", "error"), probe("a#t", "added")]}
    ab = ab_dump.diff(old, new, seed=1, differing=10, common=10)
    assert ab["sizes"] == {"old_only": 2, "new_only": 2, "common": 1}  # a rerun (b) is its own run
    assert all("side" not in s for s in ab["blind"]) and len(ab["blind"]) == 5
    assert sorted(ab["side"].values()).count("common") == 1


def test_score_weights_the_common_group_by_its_size():
    ab = {
        "sizes": {"old_only": 10, "new_only": 10, "common": 30},
        "groups": {"old_only": [], "new_only": [], "common": []},
        "blind": [{"id": i, "type": "decision"} for i in ("o", "n", "c")],
        "side": {"o": "old_only", "n": "new_only", "c": "common"},
    }
    lines = ab_dump.score(ab, {"o": "trivial", "n": "informative", "c": "informative"})
    assert lines[1].startswith("old informative 75.0%")  # 30/40 of old's probes are common, all informative
    assert lines[3].startswith("new informative 100.0%")


def test_dump_skips_an_unreadable_run_with_a_warning_naming_it(tmp_path, capsys):
    empty = tmp_path / "empty.traj.json"
    empty.write_text("")
    broken = tmp_path / "broken.traj.json"
    broken.write_text('{"messages": [')
    good = ROOT / "tests" / "fixtures" / "importers" / "minisweagent.traj.json"
    runs = [{"path": str(p), "transcript": ""} for p in (empty, broken, good)]
    out = ab_dump.dump(runs)
    assert out["transcripts"] == 1  # the bad files did not stop the batch
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 2 and "Traceback" not in "".join(warnings)
    assert str(empty) in warnings[1] and str(broken) in warnings[0]  # sorted by path: broken, empty
    assert all(line.startswith("warning: skipped ") for line in warnings)


def test_select_others_adds_every_run_of_other_agents_in_no_gold_file(tmp_path, monkeypatch):
    folder = tmp_path / "swe-agent"
    folder.mkdir()
    fixture = ROOT / "tests" / "fixtures" / "importers" / "minisweagent.traj.json"
    (folder / "a.traj").write_text(fixture.read_text())
    monkeypatch.setattr(ab_dump, "OTHERS", [folder, tmp_path / "missing.jsonl"])
    monkeypatch.setattr(ab_dump, "NONGOLD", tmp_path / "none")
    monkeypatch.setattr(ab_dump, "TAU", fixture)
    assert ab_dump.select(0, 0, 23) == []
    (only,) = ab_dump.select(0, 0, 23, others=True)
    assert only["path"] == str(folder / "a.traj") and only["transcript"]  # a named run, not the whole file
    monkeypatch.setattr(ab_dump, "gold_names", lambda: (set(), {only["transcript"]}))
    assert ab_dump.select(0, 0, 23, others=True) == []  # a gold run is never drawn
