"""The regression gate on real `ctxbench run` processes: two runs of the same config pass
`ctxbench check`; a deliberately weakened strategy (same name, a smaller window budget, given
through --config-dir) fails it, and the output names the metric, the delta and its interval."""

from __future__ import annotations

import subprocess

from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.test_gate_paired import _transcript

WEAK = """name: sliding_window
_target_: ctxbench.strategies.sliding_window.SlidingWindow
budget_ratio: 0.2
keep_first_user: true
max_retries: 3
retry_shrink: 0.5
"""


def _ctxbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_check_passes_on_a_rerun_and_fails_on_a_weakened_strategy(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "d.jsonl", [_transcript(seed) for seed in range(5)])
    (tmp_path / "weak" / "strategy").mkdir(parents=True)
    (tmp_path / "weak" / "strategy" / "weak_window.yaml").write_text(WEAK)
    common = [
        f"dataset.paths=[{data}]",
        f"output.root={tmp_path / 'results'}",
        "model=gpt-4-32k",
        "model.context_window=16000",
        "model.reserved_output_tokens=1000",
        "progress=false",
    ]
    for name in ("first", "again"):
        done = _ctxbench("run", "strategy=sliding_window", f"output.name={name}", *common)
        assert done.returncode == 0, done.stderr
    weak = _ctxbench("run", "--config-dir", str(tmp_path / "weak"), "strategy=weak_window", "output.name=weak", *common)
    assert weak.returncode == 0, weak.stderr
    results = tmp_path / "results"
    baseline = tmp_path / "base.json"
    assert _ctxbench("baseline", str(results / "first"), "--out", str(baseline)).returncode == 0
    same = _ctxbench("check", "--baseline", str(baseline), str(results / "again"))
    assert same.returncode == 0 and "OK" in same.stdout, same.stdout + same.stderr
    worse = _ctxbench("check", "--baseline", str(baseline), str(results / "weak"))
    assert worse.returncode == 1, worse.stdout + worse.stderr
    line = next(ln for ln in worse.stdout.splitlines() if "retention moved" in ln)
    assert "sliding_window" in line and "interval of the paired difference [-" in line and "excludes zero" in line
