"""The same cells give the same figures wherever they are shown: a run's table (cells in job order)
and the report on its folder (cells in folder order) agree to the last digit, intervals included
(issue 27: "53.9 in one place and 54.0 in another", "intervals differ between run and report")."""

import random
import subprocess

import pandas as pd

from ctxbench.report.load import gather
from ctxbench.report.tables import comparison_frame, percent_text
from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript


def test_cell_order_changes_no_figure(tmp_path):
    data = tmp_path / "data"
    for n, rounds in enumerate((14, 22, 30, 38)):
        write_transcripts(data / f"t{n}.jsonl", [coding_transcript(rounds=rounds, seed=n, tid=f"t{n}")])
    run = ["run", "-m", "strategy=none,sliding_window", f"dataset.paths=[{data}]", f"output.root={tmp_path}"]
    run += ["model=gpt-4-32k", "model.context_window=6000", "progress=false"]
    done = subprocess.run([*CTXBENCH, *run], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    summaries = gather([tmp_path / "default"]).summaries
    assert len({s["metrics"]["tokens_sent_total"] for s in summaries}) == len(summaries) == 8
    first = comparison_frame(summaries, resamples=300)
    for seed in range(3):
        shuffled = list(summaries)
        random.Random(seed).shuffle(shuffled)
        pd.testing.assert_frame_equal(comparison_frame(shuffled, resamples=300), first, check_exact=True)


def test_one_rounding_for_shares():
    noisy = [(0.4 + 0.679) / 2, 0.5395, sum([0.5395] * 7) / 7]  # 53.95 with different float noise
    assert {percent_text(v) for v in noisy} == {"54.0"}  # 53.95 rounds up, noise or not
