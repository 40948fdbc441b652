"""The prompt-cache simulator calibrated against reported cache usage (issue 25.3): what the rules
cannot know (the share of hits a provider really serves) fitted on half the calls, scored on the
others, written as model.cache settings that ctxbench run reads; an uncalibrated model warns."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from ctxbench.calibration.cache_fidelity import calibrate_cache, calibration_yaml
from ctxbench.calibration.provider_fidelity import write_report
from ctxbench.core import ModelSpec
from ctxbench.replay.prefix_cache import CacheRules, PrefixCache
from ctxbench.replay.provider import model_from_config
from ctxbench.run_app import warn_uncalibrated_cache
from ctxbench.tokens.calibrate import load_any
from ctxbench.transcripts.model import Message

OPENAI = CacheRules("openai", read_price_per_mtok=1.25, min_tokens=1024, step_tokens=128)


def test_hit_rate_serves_that_share_of_a_cacheable_prefix_in_whole_steps() -> None:
    messages = [Message("user", "x"), Message("assistant", "y"), Message("user", "z")]
    sizes = {id(m): n for m, n in zip(messages, (5000, 500, 500), strict=True)}
    for rate, expected in ((1.0, 5000 - (5000 - 1024) % 128), (0.5, 2500 - (2500 - 1024) % 128)):
        cache = PrefixCache(CacheRules(**{**OPENAI.__dict__, "hit_rate": rate}))
        cache.request(messages[:1], lambda m: sizes[id(m)], 5000)
        assert cache.request(messages, lambda m: sizes[id(m)], 6000).cached_tokens == expected
    with pytest.raises(ValueError, match="hit_rate"):
        CacheRules("openai", read_price_per_mtok=1.0, hit_rate=1.5)


def test_deepseek_hit_rate_is_fitted_on_half_the_calls_and_scored_on_the_others(shared_transcripts: Path) -> None:
    transcripts = load_any([shared_transcripts / "mini-swe-agent-deepseek"])
    [row] = calibrate_cache(transcripts)
    assert row["model_config"] == "deepseek-v3" and abs(row["fit_calls"] - row["scored_calls"]) <= 1
    assert 0.95 < row["hit_rate"] < 1.0
    before = abs(row["simulated_hit_share_before"] - row["reported_hit_share"])
    after = abs(row["simulated_hit_share_after"] - row["reported_hit_share"])
    assert after < before and after < 0.002  # within 0.2 points on calls it was not fitted on
    settings = yaml.safe_load(calibration_yaml([row]))["deepseek-v3"]
    rules = model_from_config(
        {
            "name": "m",
            "context_window": 64000,
            "cache": {"provider": "deepseek", "read_price_per_mtok": 0.07, **settings},
        }
    ).cache
    assert rules.hit_rate == row["hit_rate"] and rules.calibrated


def test_calibrate_writes_the_settings_and_the_command_that_uses_them(shared_transcripts: Path, tmp_path: Path) -> None:
    transcripts = load_any([shared_transcripts / "mini-swe-agent-deepseek" / "output" / "deepseek_reasoner_dev"])
    printed = write_report(transcripts, tmp_path)
    assert "ctxbench run model=deepseek-v3 model.cache.hit_rate=" in printed
    assert set(yaml.safe_load((tmp_path / "cache_calibration.yaml").read_text())) == {"deepseek-v3"}


def test_run_warns_once_for_a_model_whose_cache_was_never_calibrated(caplog: pytest.LogCaptureFixture) -> None:
    uncalibrated = ModelSpec(name="gpt-test-uncalibrated", cache=OPENAI)
    calibrated = ModelSpec(name="gpt-test-calibrated", cache=CacheRules(**{**OPENAI.__dict__, "calibrated": "x"}))
    with caplog.at_level(logging.WARNING, logger="ctxbench"):
        for model in (uncalibrated, uncalibrated, calibrated, ModelSpec(name="no-cache")):
            warn_uncalibrated_cache(model)
    [line] = [r.getMessage() for r in caplog.records]
    assert "gpt-test-uncalibrated" in line and "never calibrated" in line


def test_the_cache_lifetime_is_fitted_from_the_recorded_times() -> None:
    """A provider whose cache lived 30 minutes: a 1,000 s pause still hits, a 2,500 s one misses
    (gpt-4o's configured 600 s would miss both, no expiry would hit both)."""
    import dataclasses

    from ctxbench.calibration.cache_fidelity import provider_rules, simulate_transcript
    from ctxbench.transcripts.model import Transcript

    pauses = {3: 1000.0, 5: 2500.0, 7: 1000.0, 9: 2500.0}  # before these calls (fit positions)
    messages, now = [Message("system", "s", metadata={"timestamp": 0.0})], 0.0
    for call in range(12):  # the request's last message says when it was sent
        now += pauses.get(call, 10.0)
        usage = {"prompt_tokens": 2000 + 600 * call, "completion_tokens": 50, "cached_tokens": 0}
        messages += [
            Message("user", "u", metadata={"timestamp": now}),
            Message("assistant", "a", metadata={"usage": usage}),
        ]
    truth = dataclasses.replace(provider_rules("openai"), ttl_seconds=1800.0)
    draft = Transcript("t", messages, source={"format": "openai", "model": "gpt-4o"})
    reported = iter(simulate_transcript(draft, truth))
    recorded = [
        m.replace(
            metadata={**m.metadata, "usage": {**m.metadata["usage"], "cached_tokens": next(reported).simulated_cached}}
        )
        if "usage" in m.metadata
        else m
        for m in messages
    ]
    [row] = calibrate_cache([Transcript("t", recorded, source={"format": "openai", "model": "gpt-4o"})])
    assert row["ttl_seconds"] == 1800.0 and row["hit_rate"] == 1.0
    assert row["simulated_hit_share_after"] == row["reported_hit_share"]


def test_every_shipped_cache_block_takes_the_overrides_calibrate_prints() -> None:
    """``model.cache.hit_rate=... model.cache.ttl_seconds=... model.cache.calibrated=...`` override
    keys that must exist in the block (Hydra refuses a new key without +)."""
    configs = Path(__file__).resolve().parents[1] / "ctxbench" / "configs" / "model"
    blocks = [yaml.safe_load(p.read_text())["cache"] for p in sorted(configs.glob("*.yaml"))]
    blocks = [b for b in blocks if b]
    assert len(blocks) >= 4
    for block in blocks:
        assert {"hit_rate", "ttl_seconds", "calibrated"} <= set(block), block
