"""The bench's launcher sweeps on tiny data: real `ctxbench run -m` processes on the joblib
launcher, checked for structure (jobs, result cells, the report's text), never for a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxbench.bench import cli, report, runner, sweep
from ctxbench.bench.runner import BenchError
from ctxbench.transcripts import write_transcripts
from tests.helpers import coding_transcript


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("sweep-data")
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=6, lines_per_output=20, tid="a")])
    write_transcripts(data / "b.jsonl", [coding_transcript(rounds=4, lines_per_output=20, seed=1, tid="b")])
    return data


def test_threshold_sweep_runs_the_shipped_experiment_over_the_whole_dataset(tiny_dataset: Path) -> None:
    lines: list[str] = []
    result = sweep.threshold_sweep(tiny_dataset, [2], 1, lines.append)
    assert result["kind"] == "thresholds" and result["balanced"]
    # ctxbench/configs/experiment/dbgpt_thresholds.yaml: 4 warning x 3 error thresholds, run unchanged.
    assert len(result["strategies"]) == 12 and result["strategies"][0] == "dbgpt warning=0.5 error=0.85"
    assert result["cells"] == {2: 12}  # one job per threshold setting
    assert result["result_cells"] == {2: 24}  # each job replays both transcripts
    assert len(result["times"][2]) == len(result["cpu"][2]) == 1 and len(lines) == 1
    assert "2 transcripts" in result["transcript"] and "+experiment=dbgpt_thresholds" in result["command"]
    assert report.speedup(result) is None  # one worker count: no speedup to state
    text = report.markdown(
        {
            "machine": {"cpus": 2, "memory_gib": 1, "python": "3", "platform": "p", "load_average": [0.0]},
            "model": "gpt-4o",
            "tokenizer": "o200k_base",
            "repeats": 1,
            "transcripts": [],
            "rows": [],
            "exponents": {},
            "sweep": result,
            "main_job": None,
            "verdicts": [],
        }
    )
    assert "## Sweep: 12 cells on" in text and "DB-GPT warning x error thresholds" in text


def test_threshold_sweep_needs_transcripts(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="--sweep-data"):
        sweep.threshold_sweep(tmp_path / "absent", [1], 1, print)
    with pytest.raises(BenchError, match="no canonical"):
        sweep.threshold_sweep(tmp_path, [1], 1, print)


def test_short_strategy_sweep_from_the_cli_notes_unbalanced_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "measure_transcript", lambda *a, **k: [])  # only the sweep here (see test_bench)
    out = tmp_path / "bench.md"
    argv = ["--sizes", "3k", "--repeats", "1", "--strategies", "none", "--real", "none", "--no-main-job"]
    sweep_argv = ["--workers", "2", "--sweep", "strategies", "--sweep-size", "3k"]
    sweep_argv += ["--sweep-strategies", "none,sliding_window,five_layer"]
    assert cli([*argv, *sweep_argv, "--out", str(out)]) == 0
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["sweep"]["kind"] == "strategies" and saved["sweep"]["transcript"].startswith("synth_coding_3k.jsonl")
    assert saved["sweep"]["cells"] == {"2": 3} and saved["sweep"]["result_cells"] == {"2": 3}
    assert any("not a multiple" in note for note in saved["notes"])  # 3 jobs on 2 workers
    assert "## Sweep: 3 cells on synth_coding_3k.jsonl (one short job per strategy)" in out.read_text()


def test_the_sweep_ratio_runs_the_sweep_and_one_job_and_states_their_cpu(tiny_dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "ratio.txt"
    argv = ["--sweep-ratio", "--sweep-data", str(tiny_dataset), "--ratio-thresholds", "0.5,0.7x0.9"]
    assert cli([*argv, "--repeats", "1", "--workers", "1,2", "--out", str(out)]) == 0
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["settings"] == 2 and saved["n_jobs"] == 2
    assert saved["cells"] == {"one": 2, "sweep": 4, "jobs": 2}  # each job replays both transcripts
    assert len(saved["one_cpu"]) == len(saved["sweep_cpu"]) == 1 and min(saved["one_cpu"]) > 0
    assert saved["ratio"] == pytest.approx(saved["sweep_cpu"][0] / saved["one_cpu"][0])
    assert "warning_threshold=0.5,0.7" in saved["command"] and "hydra.launcher.n_jobs=2" in saved["command"]
    assert out.read_text().splitlines()[-1].startswith(f"sweep ratio: {saved['ratio']:.2f} single runs")


@pytest.mark.parametrize("given", ["0.5,0.7", "x0.9", "0.5,a x0.9"])
def test_the_sweep_ratio_names_bad_thresholds(given: str) -> None:
    from ctxbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--ratio-thresholds"):
        cli(["--sweep-ratio", "--ratio-thresholds", given])
