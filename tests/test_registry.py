"""The registry (ctxbench/registry.py): every built-in by short name, `ctxbench ls` with
parameters and defaults, short `_target_` names in configs, and plugins through entry points."""

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from ctxbench.build import build_strategy
from ctxbench.core import Layer, Strategy
from ctxbench.errors import ConfigError
from ctxbench.ls import CONFIGS, listing, render, strategy_configs
from ctxbench.registry import KINDS, entries, expand_targets, lookup, parameters
from tests.conftest import CTXBENCH


def _classes(package, base) -> set[str]:
    found = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, base) and obj is not base and obj.__module__ == module.__name__:
                found.add(f"{obj.__module__}.{obj.__name__}")
    return found


def test_every_layer_and_strategy_class_has_a_short_name():
    import ctxbench.layers
    import ctxbench.strategies

    assert _classes(ctxbench.layers, Layer) <= {e.dotted for e in entries("layer")}
    assert _classes(ctxbench.strategies, Strategy) <= {e.dotted for e in entries("strategy")}
    for kind in KINDS:
        assert entries(kind), kind
        for entry in entries(kind):
            if kind != "tokenizer":
                assert callable(entry.load()), entry


def test_entry_point_groups_are_the_documented_ones():
    from ctxbench.registry import GROUPS

    assert GROUPS["strategy"] == "ctxbench.strategies" and GROUPS["layer"] == "ctxbench.layers"


def test_parameters_come_from_the_signature_and_their_declaration():
    shown = {str(p) for p in parameters(lookup("layer", "reactive_keep_last_rounds").load())}
    assert shown == {
        "keep_rounds: int = 2, in [0, inf) -- rounds kept after the provider rejected the prompt",
        "name: str = 'layer4' -- the layer's name in calls.jsonl and its events",
    }
    ema = {p.name: p.default for p in parameters(lookup("estimator", "ema").load())}
    assert ema["alpha"] == "0.8"


def test_ls_lists_every_strategy_config_and_layer_with_parameters():
    found = listing(list(KINDS))
    text = render(found)
    packaged = {c["name"] for c in strategy_configs([CONFIGS])}
    assert {"dbgpt", "five_layer", "none", "sliding_window", "observation_masking"} <= packaged
    for name in packaged:
        assert f"\n  {name} " in text
    for entry in entries("layer"):
        assert f"\n  {entry.name} " in text
    assert "warning_threshold=0.7" in text  # dbgpt's params
    assert "keep_rounds: int = 2" in text  # a layer's parameter with its default
    out = subprocess.run([*CTXBENCH, "ls", "estimators"], capture_output=True, text=True)
    assert out.returncode == 0 and "chars_per_token: float = 4.0" in out.stdout and "layers (" not in out.stdout


def test_short_targets_in_a_config_build_the_same_strategy():
    config = {
        "_target_": "layered",
        "proactive": [{"layer": {"_target_": "mask_observations", "n": 3}}],
        "reactive": [{"layer": {"_target_": "reactive_keep_last_rounds"}}],
    }
    expanded = expand_targets(config)
    assert expanded["_target_"] == "ctxbench.strategies.pipeline.LayeredStrategy"
    assert expanded["proactive"][0]["layer"]["_target_"] == "ctxbench.layers.mask_observations.MaskObservations"
    cfg = OmegaConf.create({"strategy": {"name": "mine", **config}, "model": {"tokenizer": "o200k_base"}})
    strategy = build_strategy(cfg)
    assert strategy.name == "mine" and strategy.proactive[0].layer.n == 3
    with pytest.raises(ConfigError, match="did you mean mask_observations"):
        expand_targets({"_target_": "mask_observation"})
    with pytest.raises(ConfigError, match="no layer named 'drop_round'; did you mean drop_rounds"):
        lookup("layer", "drop_round")


def test_a_plugin_package_adds_a_layer_through_an_entry_point(tmp_path):
    """A real distribution on the path (a .dist-info with entry_points.txt), as pip installs one."""
    (tmp_path / "myplug.py").write_text(
        "from ctxbench.core import Layer\n\n"
        "class KeepLast(Layer):\n"
        '    """Keep only the last ``n`` messages."""\n\n'
        "    def __init__(self, n: int = 4) -> None:\n        self.n = n\n\n"
        "    def apply(self, messages, ctx):\n"
        "        return messages[-self.n :] if len(messages) > self.n else messages\n"
    )
    info = tmp_path / "myplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ctxbench.layers]\nkeep_last = myplug:KeepLast\n")
    env_path = f"{tmp_path}:{':'.join(p for p in sys.path if p)}"
    out = subprocess.run(
        [*CTXBENCH, "ls", "layer"], capture_output=True, text=True, env={"PYTHONPATH": env_path, "PATH": ""}
    )
    assert out.returncode == 0, out.stderr
    assert "keep_last" in out.stdout and "[from myplug]" in out.stdout and "n: int = 4" in out.stdout
