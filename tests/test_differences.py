"""ctxbench/upstream/differences.py: every switch it names for the other reading is a real parameter of the
strategy (the override composes and the strategy builds), so both readings stay available."""

from __future__ import annotations

import re

import pytest
from hydra import compose, initialize_config_dir

from ctxbench.build import build_strategy
from ctxbench.upstream.differences import DBGPT, OPENCLAW, Difference
from tests.conftest import ROOT

SWITCH = re.compile(r"strategy\.params\.(\w+)=(\w+)")


def _switches(differences: tuple[Difference, ...]) -> list[str]:
    return sorted({f"strategy.params.{k}={v}" for d in differences for k, v in SWITCH.findall(d.upstream_switch)})


def _builds(strategy: str, switch: str) -> bool:
    with initialize_config_dir(config_dir=str(ROOT / "ctxbench" / "configs"), version_base="1.3"):
        try:
            cfg = compose("config", overrides=[f"strategy={strategy}", switch])
        except Exception:  # noqa: BLE001 - not a parameter of this strategy
            return False
    return build_strategy(cfg) is not None


@pytest.mark.parametrize(
    ("strategies", "differences"), [(("dbgpt", "upstream_dbgpt"), DBGPT), (("five_layer",), OPENCLAW)]
)
def test_every_named_switch_builds(strategies: tuple[str, ...], differences: tuple[Difference, ...]) -> None:
    """A switch of DB-GPT's list is a parameter of dbgpt, of upstream_dbgpt, or of both."""
    switches = _switches(differences)
    assert switches
    for switch in switches:
        assert any(_builds(strategy, switch) for strategy in strategies), switch
    for difference in differences:
        assert difference.what and difference.why, difference


def test_the_agents_observation_cut_and_fixed_budget_are_listed() -> None:
    text = " ".join(d.what + d.upstream_switch for d in DBGPT)
    assert "500" in text and "truncated_observation_max_chars=500" in text
    assert "fixed 120,000" in text and "follow_model_window=false" in text
