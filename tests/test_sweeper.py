"""ctxbench's sweeper: Hydra's basic sweeper, checking one job per distinct kind before launch."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from ctxbench.run_app import CONFIG_DIR
from ctxbench.transcripts.canonical import write_transcripts
from hydra_plugins.ctxbench_sweeper import CtxbenchSweeper
from tests.test_sweep import make_transcript, run


def test_the_run_config_selects_it() -> None:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", return_hydra_config=True)
    assert cfg.hydra.sweeper._target_ == "hydra_plugins.ctxbench_sweeper.CtxbenchSweeper"


def test_jobs_that_differ_only_in_numbers_share_a_shape() -> None:
    # Not constructed: Hydra's plugin scan re-imports its core plugins, so a CtxbenchSweeper imported
    # before the scan no longer passes BasicSweeper.__init__'s super() check. job_shape needs no state.
    sweeper = CtxbenchSweeper.__new__(CtxbenchSweeper)
    sweeper._is_group = lambda key: key in {"strategy", "model"}  # type: ignore[method-assign]
    shape = sweeper.job_shape
    warning_a = ["strategy=dbgpt", "strategy.params.warning_threshold=0.5"]
    warning_b = ["strategy=dbgpt", "strategy.params.warning_threshold=0.8"]
    assert shape(warning_a) == shape(warning_b)
    assert shape(["strategy=dbgpt"]) != shape(["strategy=five_layer"])  # a group choice loads other files
    assert shape(["model.name=a"]) != shape(["model.name=b"])  # a string may fail where another does not
    assert shape(["strategy.params.n=1"]) != shape(["strategy.params.n=1.5"])  # int vs float


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sweeper") / "data"
    folder.mkdir()
    write_transcripts(folder / "t.jsonl", [make_transcript("t1", 4, 10, 1)])
    return folder


@pytest.mark.parametrize(
    "bad",
    [
        "strategy=sliding_window,nosuch",  # an unknown group choice in the second job
        "+strategy.params.window=1,2 strategy.nosuchkey=3,4",  # a key the config does not have
    ],
)
def test_a_bad_job_still_fails_before_any_job_runs(bad: str, data: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    done = run(
        "run", "-m", *bad.split(), f"dataset.paths=[{data}]", "progress=false", f"output.root={root}", cwd=tmp_path,
        check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert not list(root.glob("**/summary.json")), "a job ran before the bad one was caught"


def test_a_numeric_sweep_runs_every_job(data: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    run(
        "run", "-m", "strategy=dbgpt", "strategy.params.warning_threshold=0.5,0.6,0.7", "model=gpt-4-32k",
        f"dataset.paths=[{data}]", "progress=false", f"output.root={root}", cwd=tmp_path,
    )  # fmt: skip
    assert len(list(root.glob("**/summary.json"))) == 3
