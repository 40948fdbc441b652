"""`ctxbench check` with paired intervals: two runs of the same config pass; a deliberately
weakened strategy (the same name, a quarter of the window) fails, and the message names the
metric, the delta and its interval; a drop the transcripts do not agree on is only noise."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes import CheckpointPolicy, ProbeObserver, retention_metrics
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ModelSpec
from ctxbench.report.gate import baseline_cli, check_cli, compare, parse_tolerances
from ctxbench.results.store import Cell
from ctxbench.strategies.sliding_window import SlidingWindow
from ctxbench.tokens import ExactEstimator, TokenCounter, get_tokenizer
from ctxbench.transcripts.model import Probe, Transcript
from tests.helpers import coding_transcript

MODEL = ModelSpec(name="small", context_window=16000, reserved_output_tokens=1000, tokenizer="cl100k_base")


def _transcript(seed: int) -> Transcript:
    """30 rounds; a build id stated in the output of every fourth round (informative probes)."""
    t = coding_transcript(rounds=30, lines_per_output=40, seed=seed, tid=f"t{seed}")
    messages = list(t.messages)
    probes = []
    for k, at in enumerate(range(3, len(messages) - 1, 8)):
        value = f"BX{seed}{k:02d}77Q"
        messages[at] = messages[at].replace(content=f"build id {value}\n" + messages[at].content)
        probes.append(Probe(f"b{k}", "Which build id?", value, "recall", at))
    return Transcript(t.id, messages, probes=probes, source=t.source)


def _write(root: Path, strategy: SlidingWindow) -> Path:
    """Cells as `ctxbench run` writes them: a real replay judged at checkpoints."""
    counter = TokenCounter(get_tokenizer("cl100k_base"))
    for seed in range(6):
        t = _transcript(seed)
        observer = ProbeObserver(t.probes, DeterministicJudge(), CheckpointPolicy(every_n_calls=10))
        result = replay(t, strategy, ExactEstimator("cl100k_base"), MODEL, counter, observers=[observer])
        metrics = {**result.summary, **retention_metrics(observer.rows, {})}
        info = {"overrides": [], "context_window": MODEL.context_window, "estimator": "exact"}
        Cell(root, t.id, "sliding_window", MODEL.name, "h").write(
            calls=result.calls, events=result.events, metrics=metrics, info=info
        )
    return root


def test_same_config_passes_and_a_weakened_strategy_fails_naming_metric_delta_interval(tmp_path, capsys):
    first = _write(tmp_path / "first", SlidingWindow())
    again = _write(tmp_path / "again", SlidingWindow())
    weak = _write(tmp_path / "weak", SlidingWindow(budget_ratio=0.2))
    baseline = tmp_path / "base.json"
    assert baseline_cli([str(first), "--out", str(baseline)]) == 0
    assert "per_transcript" in json.loads(baseline.read_text())["entries"][0]
    capsys.readouterr()
    assert check_cli(["--baseline", str(baseline), str(again)]) == 0
    assert "OK" in capsys.readouterr().out
    assert check_cli(["--baseline", str(baseline), "--tolerance", "savings=off", str(weak)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "retention moved -" in out and "excludes zero" in out, out
    line = next(ln for ln in out.splitlines() if "retention moved" in ln)
    assert "interval of the paired difference [-" in line and "n=6" in line, line


def _entry(values: list[float]) -> dict:
    per = {f"t{i}": {"retention": v} for i, v in enumerate(values)}
    return {
        "strategy": "s",
        "model": "m",
        "variant": "",
        "metrics": {"retention": sum(values) / len(values)},
        "per_transcript": per,
    }


def test_a_drop_past_tolerance_that_transcripts_disagree_on_is_noise():
    before = _entry([0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    mixed = _entry([0.9, 0.1, 0.8, 0.1, 0.5, 0.3])  # mean 0.45: 5 points down, but both ways
    table = compare([before], [mixed], parse_tolerances(["retention=0.02"]))
    row = table[table.metric == "retention"].iloc[0]
    assert row.status == "ok (within noise)" and row.interval[0] < 0 < row.interval[1]
    steady = _entry([0.45] * 6)
    row = compare([before], [steady], parse_tolerances(["retention=0.02"])).iloc[0]
    assert row.status == "FAIL" and row.interval[1] < 0
