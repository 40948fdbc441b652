"""Parameters declared once, where they live (issue 28): every shipped layer, strategy and
estimator declares each parameter's type, default, range and description in its signature
(``Annotated[int, Param(...)]``), and validation, ``ctxbench ls`` and docs/extending.md all read
that one declaration; a plugin's layer gets the same checks as a shipped one."""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from omegaconf import OmegaConf

from ctxbench.core import ModelSpec, Param
from ctxbench.llm.client import RoleConfig
from ctxbench.llm.faults import FaultConfig
from ctxbench.params import declarations, undeclared, value_problems
from ctxbench.probes.checkpoints import CheckpointPolicy
from ctxbench.registry import entries
from ctxbench.replay.prefix_cache import CacheRules
from ctxbench.strategies.pipeline import Budget, Step
from ctxbench.upstream.dbgpt_strategy import UpstreamDbgpt
from ctxbench.upstream.inspect_strategy import InspectCompaction
from ctxbench.upstream.langchain_strategy import LangchainMiddleware
from ctxbench.validation import strategy_problems
from tests.conftest import ROOT

DOC = ROOT / "docs" / "extending.md"
_spec = importlib.util.spec_from_file_location("param_docs", ROOT / "scripts" / "param_docs.py")
param_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(param_docs)


def _shipped() -> list[Any]:
    own = [e.load() for kind in ("layer", "strategy", "estimator") for e in entries(kind) if e.origin == "ctxbench"]
    settings = [ModelSpec, CacheRules, RoleConfig, FaultConfig, CheckpointPolicy]  # the settings groups' classes
    return [*own, Step, Budget, UpstreamDbgpt, InspectCompaction, LangchainMiddleware, *settings]


@pytest.mark.parametrize("obj", _shipped(), ids=lambda obj: obj.__name__)
def test_every_shipped_part_declares_every_parameter(obj: Any) -> None:
    assert declarations(obj) is not None, f"{obj.__name__}: no readable signature"
    assert undeclared(obj) == [], f"{obj.__name__}: parameters without a Param(...) in their annotation"
    for declared in declarations(obj).values():
        assert declared.param is not None and declared.param.about.strip(), declared.name
        assert "\n" not in declared.param.about, f"{obj.__name__}.{declared.name}: one line"


def test_the_docs_table_is_what_ctxbench_ls_layer_prints() -> None:
    block = re.search(r"<!-- generated: ctxbench ls layer.*?-->\n```text\n(.*?)\n```", DOC.read_text("utf-8"), re.S)
    assert block, "docs/extending.md lost its generated table"
    assert block.group(1) == param_docs.table(), (
        "docs/extending.md's table of the shipped layers' parameters is stale: python scripts/param_docs.py"
    )


def _keep_last_plugin(folder: Path) -> str:
    """The worked example's plugin layer (docs/extending.md), importable from ``folder``."""
    body = re.search(r"```python\n# file: my_ext/layers.py\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert body
    (folder / "my_ext_params").mkdir()
    (folder / "my_ext_params" / "__init__.py").write_text("")
    (folder / "my_ext_params" / "layers.py").write_text(body.group(1))
    return "my_ext_params.layers.KeepLast"


def _layered(layer: dict[str, Any]) -> Any:
    return OmegaConf.create({"name": "x", "_target_": "layered", "proactive": [{"layer": layer, "when": 0.5}]})


def test_a_plugin_layer_gets_the_same_one_line_error_as_a_shipped_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = _keep_last_plugin(tmp_path)
    assert strategy_problems(_layered({"_target_": plugin, "keep": 0})) == [
        "strategy.proactive.0.layer.keep=0: out of range, allowed [1, inf)"
    ]
    assert strategy_problems(_layered({"_target_": "mask_observations", "n": -1})) == [
        "strategy.proactive.0.layer.n=-1: out of range, allowed [0, inf)"
    ]
    assert strategy_problems(_layered({"_target_": plugin, "keep": "5"})) == [
        "strategy.proactive.0.layer.keep='5': must be an integer in [1, inf)"
    ]
    assert strategy_problems(_layered({"_target_": plugin, "kep": 5})) == [
        "strategy.proactive.0.layer.kep: unknown key, KeepLast takes no 'kep'; did you mean keep?"
    ]
    assert strategy_problems(_layered({"_target_": plugin, "keep": 5})) == []
    sys.modules.pop("my_ext_params.layers", None)


@pytest.mark.parametrize(
    ("tp", "param", "value", "expected"),
    [
        (int, Param("n", ge=0), 3, None),
        (int, Param("n", ge=0), 2.0, None),  # an override's 2.0 is a whole number
        (int, Param("n", ge=0), 2.5, "must be an integer in [0, inf)"),
        (int, Param("n", ge=0), True, "must be an integer in [0, inf)"),
        (int, Param("n", ge=0), "5", "must be an integer in [0, inf)"),
        (float, Param("share", gt=0, le=1), 1, None),
        (float, Param("share", gt=0, le=1), 0, "out of range, allowed (0, 1]"),
        (float, Param("share", gt=0, le=1), math.nan, "must be a number in (0, 1]"),
        (float | None, Param("share", gt=0, le=1), None, None),
        (float | None, Param("share", gt=0, le=1), "x", "must be a number or null in (0, 1]"),
        (Literal["budget", "window"], Param("base"), "windw", "must be 'budget' | 'window'"),
        (str, Param("folder", folder=True), "../x", "a folder here must stay inside the cell"),
        (Sequence[str], Param("tools"), "Bash", "must be Sequence[str]"),  # pydantic's check: a str is no list
        (Sequence[str], Param("tools"), ["Bash"], None),
        (dict[str, Any] | None, Param("plan"), {"parts": 2}, None),
        (dict[str, Any] | None, Param("plan"), [1], "must be dict[str, Any] | None"),
    ],
)
def test_values_are_checked_strictly_against_the_declared_type(tp: Any, param: Param, value: Any, expected) -> None:
    found = value_problems("k", tp, param, value)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].text.startswith(expected), found


def test_items_of_a_mapping_are_named_by_their_key() -> None:
    found = value_problems("strategy.thresholds", dict[str, float], Param("shares", gt=0, le=1), {"a": 0.5, "b": 2})
    assert [(p.path, p.text) for p in found] == [("strategy.thresholds.b", "out of range, allowed (0, 1]")]


def test_an_undeclared_parameter_is_listed_but_not_checked() -> None:
    class Plain:
        def __init__(self, n: int = 1, m: Annotated[int, Param("m", ge=0)] = 0) -> None: ...

    assert undeclared(Plain) == ["n"]
    declared = declarations(Plain)
    assert value_problems("n", declared["n"].type, declared["n"].param, "x") == []
    assert value_problems("m", declared["m"].type, declared["m"].param, -1)[0].text == "out of range, allowed [0, inf)"


def test_a_name_that_cannot_be_resolved_leaves_the_other_declarations_readable() -> None:
    namespace: dict[str, Any] = {}
    source = (  # a plugin whose one annotation names a class imported only under TYPE_CHECKING
        "from typing import Annotated\nfrom ctxbench.core import Param\n"
        "class Odd:\n    def __init__(self, a: 'Missing' = None, "
        "b: 'Annotated[int, Param(\"b\", ge=1)]' = 1) -> None: ...\n"
    )
    exec(compile(source, "plugin.py", "exec", dont_inherit=True), namespace)  # not this file's __future__
    odd = namespace["Odd"]
    odd.__module__ = __name__
    declared = declarations(odd)
    assert declared["b"].param == Param("b", ge=1) and declared["a"].param is None
