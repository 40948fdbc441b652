"""Two configs with the same strategy, model and overrides in one results folder (a strategy file
edited between two runs) are two rows of `report` and `check DIR`, never one merged row (issue 27:
"calls 3,252, probes 200" after a config change)."""

import os
import subprocess

from ctxbench.report.load import gather
from ctxbench.report.tables import comparison_frame
from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript

STRATEGY = """name: mine
_target_: ctxbench.strategies.sliding_window.SlidingWindow
budget_ratio: {ratio}
keep_first_user: true
max_retries: 3
retry_shrink: 0.5
"""


def test_an_edited_strategy_is_its_own_row(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=30, tid="a")])
    write_transcripts(data / "b.jsonl", [coding_transcript(rounds=20, seed=1, tid="b")])
    configs = tmp_path / "configs" / "strategy"
    configs.mkdir(parents=True)
    env = {**os.environ, "CTXBENCH_CONFIGS": str(tmp_path / "configs")}
    calls = {}
    for ratio in (0.8, 0.3):
        (configs / "mine.yaml").write_text(STRATEGY.format(ratio=ratio))
        args = ["run", "strategy=mine", f"dataset.paths=[{data}]", f"output.root={tmp_path}", "progress=false"]
        args += ["model=gpt-4-32k", "model.context_window=8000"]
        done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        calls[ratio] = done.stdout
    comparison = comparison_frame(gather([tmp_path / "default"]).summaries, ci=False)
    assert len(comparison) == 2, comparison
    assert list(comparison.transcripts) == [2, 2]  # each row is one config's two transcripts
    assert comparison.variant.str.match(r"^model.context_window=8000 config [0-9a-f]{6}$").all()
    assert comparison.calls.nunique() == 1  # the same transcripts' calls, not both configs' summed in one row
    check = subprocess.run(
        [*CTXBENCH, "baseline", str(tmp_path / "default"), "--out", str(tmp_path / "base.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr
    assert (tmp_path / "base.json").read_text().count('"strategy": "mine"') == 2
