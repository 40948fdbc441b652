"""Cost from litellm's local map and from config prices; overflow texts; ctxbench/configs/llm/*.yaml build."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ctxbench.errors import ConfigError
from ctxbench.llm import (
    ExtractiveSummariser,
    FaultInjectingSummariser,
    LLMSummariser,
    build_client,
    build_summariser,
    call_cost,
    is_overflow_text,
    usage_totals,
)

CONFIG_DIR = Path(__file__).resolve().parents[1] / "ctxbench" / "configs"


def test_cost_from_litellm_local_map():
    import litellm

    price = litellm.model_cost["gpt-4o-mini"]
    expected = 12_345 * price["input_cost_per_token"] + 678 * price["output_cost_per_token"]
    assert expected > 0
    assert call_cost("gpt-4o-mini", 12_345, 678) == pytest.approx(expected)
    assert call_cost("openai/gpt-4o-mini", 12_345, 678) == pytest.approx(expected)


def test_cost_from_config_prices_and_unknown_model():
    assert call_cost("openai/local-model", 1_000_000, 500_000, 2.0, 8.0) == pytest.approx(6.0)
    assert call_cost("openai/local-model", 1_000, 1_000) == 0.0  # not in the map: free, not an error


def test_usage_totals():
    usage = [
        {"prompt_tokens": 10, "completion_tokens": 2, "cost_usd": 0.5, "fault": None},
        {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "fault": "timeout"},
        {"prompt_tokens": 5, "completion_tokens": 1, "cost_usd": 0.25, "fault": "malformed"},
        {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "fault": "timeout"},
    ]
    usage.append({"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "fault": None, "cached": True})
    usage[0]["attempts"] = 3
    assert usage_totals(usage) == {
        "calls": 4,  # the cache hit is not a provider call
        "cache_hits": 1,
        "retries": 2,
        "prompt_tokens": 15,
        "completion_tokens": 3,
        "cached_prompt_tokens": 0,
        "cost_usd": 0.75,
        "faults": {"malformed": 1, "timeout": 2},
    }


@pytest.mark.parametrize(
    "text",
    [
        "Error code: 400 - This model's maximum context length is 8192 tokens (code: context_length_exceeded)",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "LLM error: context_too_long (9000 prompt tokens)",
        "request_too_large",
        "Input exceeds model context window",
        "request size exceeds the model's context window",
    ],
)
def test_overflow_texts_match(text):
    assert is_overflow_text(text)


def test_rate_limit_texts_do_not_match_overflow():
    tpm = "Request too large for gpt-4 in organization org-x on tokens per min (TPM): Limit 10000, Requested 12000."
    assert not is_overflow_text(tpm, 429)
    assert not is_overflow_text("Rate limit reached for requests", 429)
    assert is_overflow_text("Payload too large", 413)


@pytest.mark.parametrize("name", ["offline", "local", "openai", "anthropic", "replay", "faults"])
def test_shipped_llm_configs_build(name, tmp_path):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"llm={name}", f"output.root={tmp_path}"])
    llm = OmegaConf.to_container(cfg.llm, resolve=True)
    summariser = build_summariser(llm, tmp_path / "cell")
    expected = {"offline": ExtractiveSummariser, "faults": FaultInjectingSummariser}.get(name, LLMSummariser)
    assert isinstance(summariser, expected)
    if isinstance(summariser, LLMSummariser):
        cassette = summariser.client.cassette
        assert cassette.mode == ("replay" if name == "replay" else "record")
        assert cassette.path == tmp_path / "default" / "cassettes" / "summariser.jsonl"
        for role in ("answerer", "judge"):
            assert build_client(llm[role], tmp_path, role=role).role == role


@pytest.mark.parametrize(
    ("llm", "words"),
    [
        ({"summariser": "abstractive"}, "llm.summariser"),
        ({"summariser": {"api_base": "http://127.0.0.1:8000/v1"}}, "'model' is required"),
        ({"summariser": {"model": "openai/x", "temprature": 0}}, "unknown key 'temprature'"),
        ({"summariser": {"model": "openai/x", "cassette": {"mode": "replay-only"}}}, "cassette mode"),
        ({"summariser": {"model": "openai/x", "cassette": {"folder": "x"}}}, "unknown key 'folder'"),
    ],
)
def test_bad_llm_config_is_one_line(llm, words, tmp_path):
    with pytest.raises(ConfigError) as caught:
        build_summariser(llm, tmp_path)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_missing_api_key_env_is_reported_on_first_live_call(tmp_path, monkeypatch):
    from ctxbench.llm import SummaryRequest

    monkeypatch.delenv("CTXBENCH_TEST_NO_SUCH_KEY", raising=False)
    summariser = build_summariser(
        {"summariser": {"model": "gpt-4o-mini", "api_key_env": "CTXBENCH_TEST_NO_SUCH_KEY", "cassette": "live"}},
        tmp_path,
    )
    with pytest.raises(ConfigError, match="CTXBENCH_TEST_NO_SUCH_KEY is not set"):
        summariser.summarise(SummaryRequest("i", "s", ()))
