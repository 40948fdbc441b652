"""The top-level layout (issue 28): configs/ (the project's own configs, layered over the packaged
ones when ctxbench runs from the project root) and datasets/ (one recipe per dataset), each with a
README; the README's commands name configs that exist; a real run composes from configs/."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from ctxbench.run_app import CONFIG_DIR
from tests.conftest import CTXBENCH, ROOT
from tests.test_hf_import import nebius_row, swegym_row

RECIPES = sorted((ROOT / "datasets").glob("*.yaml"))
# The schemas tests/test_hf_import.py writes and imports end to end, by the Hub dataset they reproduce.
HUB_SCHEMAS = {"nebius/SWE-agent-trajectories": nebius_row(0), "SWE-Gym/OpenHands-Sampled-Trajectories": swegym_row(0)}


def _config(group: str, name: str) -> Path | None:
    for folder in (ROOT / "configs", CONFIG_DIR):
        if (folder / group / f"{name}.yaml").is_file():
            return folder / group / f"{name}.yaml"
    return None


def test_both_folders_have_a_readme_that_names_every_file() -> None:
    for folder in ("configs", "datasets"):
        readme = (ROOT / folder / "README.md").read_text("utf-8")
        files = [p for p in (ROOT / folder).rglob("*.yaml")]
        assert files, folder
        for path in files:
            assert path.name in readme or path.stem in readme, f"{folder}/README.md does not name {path.name}"


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_a_recipe_runs_what_it_imports(recipe: Path) -> None:
    spec = yaml.safe_load(recipe.read_text("utf-8"))
    run = shlex.split(spec["run"])
    assert run[:2] == ["ctxbench", "run"]
    dataset = next((a.split("=", 1)[1] for a in run if a.startswith("dataset=")), "bundled")
    config_file = _config("dataset", dataset)
    assert config_file, f"{recipe.name}: no dataset config {dataset!r} in configs/ or the package"
    paths = yaml.safe_load(config_file.read_text("utf-8"))["paths"]
    if "import" in spec:
        command = shlex.split(spec["import"])
        assert command[:2] == ["ctxbench", "import"] and "--out" in command
        assert paths == [command[command.index("--out") + 1]], f"{recipe.name}: imports where its config does not read"
    else:  # generated
        assert spec["generate"].startswith("ctxbench generate") and paths == [f"pkg://{spec['path']}"]


@pytest.mark.parametrize("recipe", [r for r in RECIPES if "hf:" in r.read_text("utf-8")], ids=lambda p: p.stem)
def test_a_hub_recipe_lists_the_columns_the_import_test_imports(recipe: Path) -> None:
    spec = yaml.safe_load(recipe.read_text("utf-8"))
    name = spec["source"].removeprefix("hf:").split(":")[0].split("@")[0]
    assert spec["import"].split()[2] == spec["source"]
    assert set(spec["columns"]) == set(HUB_SCHEMAS[name]), f"{recipe.name}: columns differ from the tested schema"
    assert spec["messages"] in spec["columns"]


def test_the_readme_commands_name_configs_that_exist() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    commands = [line for line in re.findall(r"^(ctxbench run .*?)(?:\s+#.*)?$", text, re.M)]
    assert any("+experiment=ci" in c for c in commands) and any("dataset=swe_agent_trajectories" in c for c in commands)
    for command in commands:
        for group, name in re.findall(r"\+?(experiment|dataset|strategy|model)=([\w.-]+)", command):
            for choice in name.split(","):
                assert _config(group, choice), f"README: {command!r} names {group}={choice}, which is nowhere"


def test_a_run_from_the_project_root_composes_from_configs(tmp_path: Path) -> None:
    """The CI sweep, cut to one job: +experiment=ci exists only in configs/."""
    args = ["run", "-m", "+experiment=ci", "strategy=none", "model=gpt-4o", "dataset.include=[synth-sql_060k]"]
    args += [f"output.root={tmp_path}", "progress=false"]
    done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summaries = [json.loads(p.read_text("utf-8")) for p in (tmp_path / "ci").rglob("summary.json")]
    assert [(s["cell"]["strategy"], s["cell"]["transcript"]) for s in summaries] == [("none", "synth-sql_060k")]
    elsewhere = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert elsewhere.returncode == 2 and "experiment" in elsewhere.stderr  # not packaged: only from the root
