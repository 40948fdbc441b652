"""Every strategy config composes and builds through Hydra; the alternatives run end to end."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from ctxbench.build import build_estimator, build_strategy, strategy_name
from ctxbench.strategies.base import Strategy
from ctxbench.tokens.estimators import Estimator, ExactEstimator
from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.strategy_histories import fixed_history

CONFIG_DIR = ROOT / "ctxbench" / "configs"
# Every strategy, the upstream ones too: scripts/setup.sh installs their packages, so one that does not
# build here fails (tests/upstream_required.py).
STRATEGY_FILES = sorted((CONFIG_DIR / "strategy").glob("*.yaml"))
MINE = ["observation_masking", "clear_tool_uses", "amortized_forgetting", "anchored_summary", "masking_then_summary"]


def composed(stem: str, *overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=[f"strategy={stem}", *overrides])


@pytest.mark.parametrize("path", STRATEGY_FILES, ids=[p.stem for p in STRATEGY_FILES])
def test_every_strategy_config_composes_and_instantiates(path: Path) -> None:
    cfg = composed(path.stem)
    assert cfg.strategy.name == path.stem, f"{path.name}: name must equal the file stem"
    strategy = build_strategy(cfg)
    assert isinstance(strategy, Strategy)
    assert strategy.name == strategy_name(cfg) == path.stem
    assert isinstance(build_estimator(cfg), Estimator)
    # A fresh object per build: strategies hold per-transcript state.
    assert build_strategy(cfg) is not strategy


def _state(value: object, depth: int = 0) -> object:
    """An object's type and attributes, recursively: what two builds of one config must share."""
    import re

    if depth > 8 or isinstance(value, str | int | float | bool | type(None)):
        return value
    if isinstance(value, re.Pattern):
        return ("re", value.pattern, value.flags)
    if isinstance(value, list | tuple):
        return [type(value).__name__, *(_state(v, depth + 1) for v in value)]
    if isinstance(value, dict):
        return {k: _state(v, depth + 1) for k, v in value.items()}
    if not type(value).__module__.startswith("ctxbench") or (callable(value) and not hasattr(value, "__dict__")):
        return type(value).__qualname__  # a library's object (an upstream strategy's): its type
    fields = getattr(value, "__dict__", None) or {s: getattr(value, s) for s in getattr(value, "__slots__", ())}
    return (type(value).__qualname__, {k: _state(v, depth + 1) for k, v in fields.items() if k != "__weakref__"})


@pytest.mark.parametrize("path", STRATEGY_FILES, ids=[p.stem for p in STRATEGY_FILES])
def test_a_strategy_built_directly_is_the_one_hydra_builds(path: Path) -> None:
    """build_strategy makes a plain config without Hydra's instantiate (its copies of the config were
    most of a build): the same classes, arguments and state as Hydra makes, from the node too."""
    from hydra.utils import instantiate

    from ctxbench.build import CONVERT_ALL, config_node, strategy_config

    cfg = composed(path.stem)
    config = strategy_config(cfg)
    hydra_built = instantiate({**config, **CONVERT_ALL})
    hydra_built.name = strategy_name(cfg)
    assert _state(build_strategy(cfg, config)) == _state(hydra_built)
    assert _state(build_strategy(cfg, config_node(config))) == _state(hydra_built)
    assert _state(build_strategy(cfg)) == _state(hydra_built)


@pytest.mark.parametrize("stem", MINE)
def test_alternatives_plan_with_the_models_exact_tokenizer(stem: str) -> None:
    for model, tokenizer in (("gpt-4o", "o200k_base"), ("gpt-4-32k", "cl100k_base")):
        estimator = build_estimator(composed(stem, f"model={model}"))
        assert isinstance(estimator, ExactEstimator) and estimator.name == f"exact:{tokenizer}"


def test_strategy_params_override_from_the_command_line() -> None:
    strategy = build_strategy(composed("observation_masking", "strategy.params.n=5"))
    assert strategy.proactive[0].layer.n == 5
    clear = build_strategy(composed("clear_tool_uses", "strategy.params.exclude_tools=[memory]"))
    assert clear.proactive[0].layer.exclude_tools == frozenset({"memory"})


def test_alternatives_run_end_to_end_through_the_hydra_app(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_transcripts(data / "gen.jsonl", [fixed_history()])
    out = tmp_path / "results"
    args = [
        "run",
        "-m",
        f"strategy=none,{','.join(MINE)}",
        f"dataset.paths=[{data}]",
        f"output.root={out}",
        "model=gpt-4o",
        "model.context_window=16000",
        "model.reserved_output_tokens=2000",
        "progress=false",
    ]
    proc = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = {}
    for path in out.rglob("summary.json"):
        summary = json.loads(path.read_text())
        metrics[summary["cell"]["strategy"]] = summary["metrics"]
    assert sorted(metrics) == sorted(["none", *MINE])
    assert metrics["none"]["failed_calls"] > 0  # the history does not fit this window uncompacted
    for stem in MINE:
        m = metrics[stem]
        assert m["invalid_requests"] == 0, stem
        assert m["failed_calls"] == 0, stem
        assert m["savings"] > 0.15, (stem, m["savings"])
        assert m["compacted_calls"] > 0, stem
    events = [
        json.loads(line)
        for path in out.rglob("events.jsonl")
        if "anchored_summary" in str(path)
        for line in path.read_text().splitlines()
    ]
    merges = [e for e in events if e["type"] == "anchored_summary"]
    assert merges and [e["summary_of_summary"] for e in merges] == list(range(len(merges)))


@pytest.mark.parametrize("path", STRATEGY_FILES, ids=[p.stem for p in STRATEGY_FILES])
def test_a_jobs_strategy_config_from_its_resolved_config_is_the_one_resolved_alone(path: Path) -> None:
    from ctxbench.build import strategy_config
    from ctxbench.run_app import resolved_config

    cfg = composed(path.stem)
    assert strategy_config(cfg, resolved_config(cfg)) == strategy_config(cfg)


@pytest.mark.parametrize("stem", ["sliding_window", "dbgpt", "five_layer", "observation_masking", "anchored_summary"])
def test_a_job_builds_its_strategies_from_one_node(stem: str, tmp_path: Path) -> None:
    """Strategies built from one ``config_node`` replay as one built from the plain config, and the
    node is left unchanged."""
    from omegaconf import OmegaConf

    from ctxbench.build import build_model, config_node, strategy_config
    from ctxbench.replay.engine import replay
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer

    cfg = composed(stem, "model.context_window=6000", "llm=offline")
    plain = strategy_config(cfg)
    node = config_node(plain)
    before = OmegaConf.to_container(node)
    model = build_model(cfg)

    def calls(strategy: Strategy) -> str:
        counter = TokenCounter(get_tokenizer(model.tokenizer))
        result = replay(fixed_history(), strategy, build_estimator(cfg), model, counter, workdir=tmp_path)
        return json.dumps([result.calls, result.events], sort_keys=True, default=str)

    first, second = build_strategy(cfg, node), build_strategy(cfg, node)
    assert first is not second
    assert calls(first) == calls(build_strategy(cfg, plain)) == calls(second)
    assert OmegaConf.to_container(node) == before


def test_a_resolved_config_left_unresolved_is_resolved_again() -> None:
    from ctxbench.build import strategy_config

    cfg = composed("dbgpt")
    kept = {"strategy": {**strategy_config(cfg), "budget": "${model.context_window}"}}
    assert strategy_config(cfg, kept) == strategy_config(cfg)


@pytest.mark.parametrize("path", STRATEGY_FILES, ids=[p.stem for p in STRATEGY_FILES])
def test_a_jobs_estimator_judge_and_llm_from_its_resolved_config_are_those_resolved_alone(path: Path) -> None:
    from ctxbench.build import estimator_config, plain_section, to_plain
    from ctxbench.run_app import resolved_config

    cfg = composed(path.stem)
    resolved = resolved_config(cfg)
    assert estimator_config(cfg, resolved) == estimator_config(cfg)
    for key in ("judge", "llm", "model"):
        assert plain_section(cfg, resolved, key) == to_plain(cfg.get(key))


def test_a_section_left_unresolved_is_resolved_again() -> None:
    from ctxbench.build import estimator_config, plain_section, to_plain

    cfg = composed("none")
    kept = {"judge": {"kind": "${judge.kind}"}, "model": {"tokenizer": "${model.tokenizer}"}, "estimator": {}}
    assert plain_section(cfg, kept, "judge") == to_plain(cfg.judge)
    assert plain_section(cfg, {}, "llm") == to_plain(cfg.llm)
    assert estimator_config(cfg, {**kept, "strategy": {}}) == estimator_config(cfg)
