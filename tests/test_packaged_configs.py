"""The configs and bundled data ship in the package; a user's own ./configs folder layers on
top (hydra_plugins/ctxbench_searchpath); the user's dataset paths stay relative to where they run."""

import subprocess

from ctxbench.data import BUNDLED, resolve_data_path
from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH
from tests.helpers import coding_transcript


def test_data_paths_resolve_in_the_package_or_where_ctxbench_runs(tmp_path):
    assert resolve_data_path("pkg://ctxbench/data/bundled", tmp_path) == BUNDLED
    assert len(list(BUNDLED.glob("*.jsonl"))) == 8
    assert resolve_data_path("mine", tmp_path) == tmp_path / "mine"
    assert resolve_data_path(tmp_path / "abs", "/elsewhere") == tmp_path / "abs"


def test_a_users_configs_folder_adds_and_replaces_packaged_configs(tmp_path):
    (tmp_path / "configs" / "strategy").mkdir(parents=True)
    (tmp_path / "configs" / "model").mkdir(parents=True)
    (tmp_path / "configs" / "strategy" / "mine.yaml").write_text(
        "_target_: ctxbench.strategies.none.FullHistory\nname: mine\n"
    )
    # Same name as a packaged model: the user's wins.
    (tmp_path / "configs" / "model" / "gpt-4o.yaml").write_text(
        "name: tiny-4o\ncontext_window: 8000\nreserved_output_tokens: 1000\ntokenizer: o200k_base\n"
    )
    write_transcripts(tmp_path / "data" / "a.jsonl", [coding_transcript(rounds=12, tid="a")])
    done = subprocess.run(
        [*CTXBENCH, "run", "strategy=mine", "dataset.paths=[data]", "progress=false"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    summaries = list((tmp_path / "results" / "default" / "cells" / "mine" / "tiny-4o").glob("*/summary.json"))
    assert len(summaries) == 1  # the user's strategy and model, the user's data relative to the run's folder
    packaged = subprocess.run([*CTXBENCH, "run", "strategy=mine", "--cfg", "job"], capture_output=True, text=True)
    assert packaged.returncode == 2 and "strategy/mine" in packaged.stderr  # elsewhere: only the packaged configs
