"""``dataset.include`` selects transcripts by id or by glob pattern; a selection that matches nothing
is a one-line error that shows what the ids look like, not a run of 0 cells."""

from __future__ import annotations

import logging
from pathlib import Path

import hydra
import pytest
from omegaconf import OmegaConf

from ctxbench.errors import ConfigError
from ctxbench.run_app import load_dataset
from ctxbench.transcripts.canonical import write_transcripts
from ctxbench.transcripts.model import Message, Transcript


def dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ids: list[str]) -> Path:
    monkeypatch.setattr(hydra.utils, "get_original_cwd", lambda: str(tmp_path))  # as inside a Hydra run
    transcripts = [Transcript(i, [Message("user", "task"), Message("assistant", "done")]) for i in ids]
    return write_transcripts(tmp_path / "data" / "runs.jsonl", transcripts)


def load(path: Path, include: list[str]) -> list[str]:
    cfg = OmegaConf.create({"dataset": {"paths": [str(path)], "include": include, "limit": None}})
    return [t.id for t, _ in load_dataset(cfg)]


def test_include_takes_ids_and_glob_patterns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = dataset(tmp_path, monkeypatch, ["output#django-1", "output#django-2", "gpt-4o-airline#task0", "katy"])
    assert load(path, []) == ["output#django-1", "output#django-2", "gpt-4o-airline#task0", "katy"]
    assert load(path, ["katy"]) == ["katy"]
    assert load(path, ["output#*", "katy"]) == ["output#django-1", "output#django-2", "katy"]


def test_an_include_that_matches_nothing_is_an_error_naming_the_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = dataset(tmp_path, monkeypatch, ["output#django-1", "katy"])
    with pytest.raises(ConfigError, match=r"dataset.include \['openhands\*'\] matches none of the 2 transcripts") as e:
        load(path, ["openhands*"])
    assert "ids look like: output#django-1, katy" in str(e.value)
    with caplog.at_level(logging.WARNING):
        assert load(path, ["katy", "nothing"]) == ["katy"]
    assert "dataset.include: 'nothing' matches no transcript" in caplog.text
