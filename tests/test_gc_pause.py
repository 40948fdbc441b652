"""A cell is computed with the cyclic garbage collector paused (ctxbench.gc_pause), and the
collector is left as it was found, whatever happens inside."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from ctxbench.bench import worker
from ctxbench.build import build_model
from ctxbench.datagen import make_transcript
from ctxbench.gc_pause import gc_paused
from ctxbench.replay import engine
from ctxbench.tokens.tokenizers import get_tokenizer


@pytest.fixture
def collector_enabled():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_restored_after_an_error(collector_enabled):
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("inside the cell")
    assert gc.isenabled()
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()  # a caller that turned it off keeps it off


def test_a_cell_replays_with_the_collector_paused(collector_enabled, monkeypatch, tmp_path: Path):
    seen: list[bool] = []
    real = engine.replay

    def replay(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "replay", replay)
    cfg = worker.compose_config("observation_masking", "gpt-4o", ())
    model = build_model(cfg)
    transcripts = [make_transcript("coding", 20_000, seed=3)]
    parts = worker._parts("cell", cfg, get_tokenizer(model.tokenizer), transcripts, tmp_path)
    out = worker._run("cell", transcripts, parts, model, tmp_path)
    assert out["calls"] > 0
    assert seen == [False]
    assert gc.isenabled()
