"""Hydra's config files parsed once per process (ctxbench/config_cache.py): each load gets its own
copy of the parse, an edited file is parsed again, and a composed config is the same with the
cache as without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.file_config_source import FileConfigSource
from omegaconf import OmegaConf

from ctxbench import config_cache
from ctxbench.run_app import CONFIG_DIR


@pytest.fixture(autouse=True)
def _installed() -> None:
    config_cache.install()
    config_cache.clear()


def test_each_load_is_a_copy_and_an_edited_file_is_parsed_again(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("x: 1\nnested: {y: [1, 2]}\n")
    source = FileConfigSource("test", f"file://{tmp_path}")
    first = source.load_config("a")
    first.config.nested.y.append(3)  # what Hydra does to what it loads (pops defaults, merges)
    first.header["package"] = "changed"
    second = source.load_config("a")
    assert OmegaConf.to_container(second.config) == {"x": 1, "nested": {"y": [1, 2]}}
    assert second.header.get("package") != "changed" and second.config is not first.config
    (tmp_path / "a.yaml").write_text("x: 2\nnested: {y: [1, 2]}\n")  # the same size, maybe the same mtime
    assert OmegaConf.to_container(source.load_config("a").config)["x"] == 2
    (tmp_path / "a.yaml").unlink()
    with pytest.raises(IOError, match="Config not found"):  # Hydra's own error, as without the cache
        source.load_config("a")


def test_a_composed_sweep_job_is_the_same_with_and_without_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    over = ["+experiment=dbgpt_thresholds", "strategy.params.warning_threshold=0.7", "model=gpt-4o"]
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        config_cache.install()  # after the plugin scan that initialize ran: its classes are the ones used
        monkeypatch.setenv(config_cache.CACHE_ENV, "off")
        plain = OmegaConf.to_yaml(compose("config", overrides=over, return_hydra_config=True))
        assert not config_cache._KEPT
        monkeypatch.delenv(config_cache.CACHE_ENV)
        cached = [OmegaConf.to_yaml(compose("config", overrides=over, return_hydra_config=True)) for _ in range(2)]
        assert config_cache._KEPT  # the second composition read from it
    assert cached == [plain, plain]
