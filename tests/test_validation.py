"""Config validation before any work (issue 17.4): impossible values are refused with the key, the
value and the allowed range; unknown keys get a "did you mean"; folders stay inside the results."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from ctxbench.run_app import CONFIG_DIR
from ctxbench.transcripts import write_transcripts
from ctxbench.validation import run_problems
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript


@pytest.fixture(autouse=True)
def _project_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/ is layered in wherever pytest runs from (the search path plugin reads this)."""
    monkeypatch.setenv("CTXBENCH_CONFIGS", str(ROOT / "configs"))


def problems(*overrides: str) -> list[str]:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return run_problems(compose("config", overrides=list(overrides)), "/tmp/cwd")


# The packaged configs and the project's own in configs/ (layered over them when run from the root).
CONFIG_FOLDERS = (CONFIG_DIR, ROOT / "configs")


def shipped(group: str) -> list[str]:
    prefix = "+" if group == "experiment" else ""
    files = sorted({p.stem for folder in CONFIG_FOLDERS for p in (folder / group).glob("*.yaml")})
    return [f"{prefix}{group}={stem}" for stem in files]


@pytest.mark.parametrize(
    "override", [o for g in ("strategy", "experiment", "model", "llm", "estimator", "judge") for o in shipped(g)]
)
def test_every_shipped_config_is_valid(override: str) -> None:
    assert problems(override) == []


DBGPT = "strategy=dbgpt"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            (DBGPT, "strategy.params.warning_threshold=-1"),
            "strategy.params.warning_threshold=-1: out of range, allowed (0, 1]",
        ),
        (
            (DBGPT, "strategy.params.warning_threshold=0"),
            "strategy.params.warning_threshold=0: out of range, allowed (0, 1]",
        ),
        (
            (DBGPT, "strategy.params.warning_threshold=1.5"),
            "strategy.params.warning_threshold=1.5: out of range, allowed (0, 1]",
        ),
        ((DBGPT, "strategy.params.critical_threshold=1.01"), "strategy.params.critical_threshold=1.01: out of range"),
        (
            (DBGPT, "strategy.params.warning_threshold=0.95"),
            "strategy.params.warning_threshold=0.95 must be below strategy.params.error_threshold=0.9 "
            "(warning < error <= critical <= 1)",
        ),
        (
            (DBGPT, "strategy.params.error_threshold=0.97"),
            "strategy.params.error_threshold=0.97 must be at most strategy.params.critical_threshold=0.95",
        ),
        (
            (DBGPT, "strategy.params.warning_threshold=abc"),
            "strategy.params.warning_threshold='abc': must be a number in (0, 1]",
        ),
        (
            (DBGPT, "strategy.params.reserved_tokens=-5"),
            "strategy.params.reserved_tokens=-5: out of range, allowed [0, inf)",
        ),
        (("model.reserved_output_tokens=-100",), "model.reserved_output_tokens=-100: out of range, allowed [0, inf)"),
        (("model.context_window=300",), "model.reserved_output_tokens=4096 must be below model.context_window=300"),
        (("dataset.limit=-1",), "dataset.limit=-1: must be null (all) or an integer >= 0"),
        (
            ("strategy=sliding_window", "strategy.budget_ratio=0"),
            "strategy.budget_ratio=0: out of range, allowed (0, 1]",
        ),
        (
            (DBGPT, "+strategy.params.warning_treshold=0.5"),
            "strategy.params.warning_treshold: unknown key, no strategy uses it; did you mean warning_threshold",
        ),
        (
            ("strategy=sliding_window", "+strategy.budget_ratoi=0.5"),
            "strategy.budget_ratoi: unknown key, SlidingWindow takes no 'budget_ratoi'; did you mean budget_ratio?",
        ),
        (
            (DBGPT, "+strategy.proactive.0.layer.max_observation_age=2"),
            "strategy.proactive.0.layer.max_observation_age: unknown key, ObservationMicroCompact takes no "
            "'max_observation_age'; did you mean max_observation_age_rounds",
        ),
        (
            (DBGPT, "+strategy.prepare.0.folder=../../x"),
            "strategy.prepare.0.folder='../../x': a folder here must stay inside the cell",
        ),
        (("estimator=ema", "estimator.alpha=5"), "estimator.alpha=5: out of range, allowed (0, 1]"),
        (("estimator=ema", "estimator.min_cpt=9"), "estimator.min_cpt=9 must not exceed estimator.max_cpt=8.0"),
        (("estimator=ema", "+estimator.alfa=0.1"), "estimator.alfa: unknown key, EmaEstimator takes no 'alfa'"),
        ((DBGPT, "+strategy.estimator.modle=x"), "strategy.estimator.modle: unknown key, DbgptEstimator takes no"),
        (("llm=faults", "llm.faults.error_rate=2"), "llm.faults.error_rate=2: out of range, allowed [0, 1]"),
        (("judge.checkpoints.every_n_calls=-1",), "judge.checkpoints.every_n_calls=-1: out of range"),
        (
            ("judge=llm", "judge.max_false_positive_rate=1.5"),
            "judge.max_false_positive_rate=1.5: out of range, allowed [0, 1]",
        ),
        (("judge.max_extracted_probes=abc",), "judge.max_extracted_probes='abc': must be an integer in [0, inf)"),
        (("llm=local", "llm.summariser.temperature=3"), "llm.summariser.temperature=3: out of range, allowed [0, 2]"),
        (("model.cache.min_tokens=-1",), "model.cache.min_tokens=-1: out of range, allowed [0, inf)"),
        (("model.context_window=0",), "model.context_window=0: out of range, allowed (0, inf)"),
        ((DBGPT, "strategy.proactive.0.when=abc"), "strategy.proactive.0.when='abc': must be a number"),
        (("output.name=../x",), "output.name='../x': must be a folder name inside output.root"),
    ],
)
def test_impossible_values_are_named_with_their_range(overrides: tuple[str, ...], expected: str) -> None:
    found = problems(*overrides)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_error_may_equal_critical_as_in_the_shipped_threshold_sweep() -> None:
    assert problems(DBGPT, "strategy.params.error_threshold=0.95") == []
    assert problems(DBGPT, "strategy.params.warning_threshold=0.9")[0].startswith(
        "strategy.params.warning_threshold=0.9 must be below strategy.params.error_threshold=0.9"
    )


def test_a_parameter_another_strategy_of_the_sweep_uses_is_accepted() -> None:
    # +experiment=windows sets strategy.params.max_context_tokens for every strategy it sweeps.
    assert problems("strategy=sliding_window", "+strategy.params.max_context_tokens=1000") == []


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_run_refuses_an_impossible_config_before_any_work(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=4, tid="a")])
    out = tmp_path / "r"
    common = [f"dataset.paths=[{data}]", f"output.root={out}", "progress=false", "strategy=dbgpt"]
    for bad in ("strategy.params.warning_threshold=1.5", "+strategy.prepare.0.folder=../../x"):
        result = run("run", *common, bad)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "invalid config:" in result.stderr and bad.lstrip("+").split("=")[0] in result.stderr
        assert not (out / "default" / "cells").exists() and not (tmp_path / "x.jsonl").exists()


def test_a_window_smaller_than_the_system_prompt_is_warned(tmp_path: Path) -> None:
    transcript = coding_transcript(rounds=3, tid="a")
    system = transcript.messages[0]
    transcript.messages[0] = system.replace(content=" ".join(f"rule{i}" for i in range(400)))
    write_transcripts(tmp_path / "data" / "a.jsonl", [transcript])
    result = run(
        "run",
        f"dataset.paths=[{tmp_path / 'data'}]",
        f"output.root={tmp_path / 'r'}",
        "progress=false",
        "strategy=none",
        "model.context_window=600",
        "model.reserved_output_tokens=100",
    )
    assert result.returncode == 0, result.stderr
    assert "model.context_window=600 is too small for transcript 'a': its system prompt is" in result.stderr
    (summary,) = (tmp_path / "r").rglob("summary.json")
    assert json.loads(summary.read_text())["metrics"]["failed_calls"] > 0  # the warning said so


def sweep_points() -> list[tuple[str, ...]]:
    """Every job of every shipped experiment's sweep, as overrides."""
    import itertools

    from omegaconf import OmegaConf

    points = []
    for path in sorted(p for folder in CONFIG_FOLDERS for p in (folder / "experiment").glob("*.yaml")):
        params = OmegaConf.load(path).get("hydra", {}).get("sweeper", {}).get("params", {}) or {}
        axes = [[f"{key}={value.strip()}" for value in str(values).split(",")] for key, values in params.items()]
        points += [(f"+experiment={path.stem}", *combo) for combo in itertools.product(*axes)]
    return points


def test_every_job_of_every_shipped_sweep_is_valid() -> None:
    points = sweep_points()
    assert len(points) > 20
    import copy

    import yaml
    from omegaconf import OmegaConf

    # Composing is the cost (0.25 s): once per choice of config groups, then the values are set.
    composed: dict[tuple[str, ...], Any] = {}
    bad = {}
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        for point in points:
            groups = tuple(o for o in point if "." not in o.split("=")[0])
            if groups not in composed:
                composed[groups] = compose("config", overrides=list(groups))
            cfg = copy.deepcopy(composed[groups])
            for override in point:
                if override not in groups:
                    key, value = override.split("=", 1)
                    OmegaConf.update(cfg, key, yaml.safe_load(value), force_add=True)
            if found := run_problems(cfg, "/tmp"):
                bad[point] = found
    assert not bad
