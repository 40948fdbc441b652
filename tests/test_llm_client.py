"""LLM calls through litellm to a real OpenAI-compatible HTTP server on 127.0.0.1: live calls,
record/replay cassettes, and provider errors mapped to SummariserError kinds."""

import json
import os
from pathlib import Path

import pytest

from ctxbench.errors import CtxbenchError
from ctxbench.llm import (
    CassetteMiss,
    LLMSummariser,
    SummariserError,
    SummaryRequest,
    build_client,
    build_summariser,
    usage_totals,
)
from tests.llm_server import LLMServer

SECTIONS = ("Original Task", "Key Data (must be exact)", "Next Steps")
INSTRUCTIONS = "Summarise the conversation under these headings:\n" + "\n".join(f"## {s}" for s in SECTIONS)


def summary_request(text: str, purpose: str = "dbgpt_layer3") -> SummaryRequest:
    return SummaryRequest(
        instructions=INSTRUCTIONS, source_text=text, sections=SECTIONS, max_tokens=300, purpose=purpose
    )


def llm_cfg(api_base: str, mode: str, folder: Path, **extra) -> dict:
    role = {"model": "openai/test-model", "api_base": api_base, "num_retries": 0, "timeout": 5}
    return {"summariser": {**role, **extra, "cassette": {"mode": mode, "dir": str(folder)}}}


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def test_cost_map_is_local_before_litellm_import():
    import ctxbench.llm  # noqa: F401

    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_live_summary_through_litellm(server, tmp_path):
    summariser = build_summariser(llm_cfg(server.api_base, "live", tmp_path), tmp_path)
    text = summariser.summarise(summary_request("[user]: fix /srv/app.py on port 8080"))
    assert all(f"## {s}" in text for s in SECTIONS)
    assert "fix /srv/app.py on port 8080" in text
    sent = server.requests[-1]
    assert sent["model"] == "test-model" and sent["temperature"] == 0 and sent["max_tokens"] == 300
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    record = summariser.usage[-1]
    assert record["prompt_tokens"] == sum(len(m["content"].split()) for m in sent["messages"])
    assert record["completion_tokens"] == len(text.split())
    assert record["purpose"] == "dbgpt_layer3" and record["cached"] is False and record["fault"] is None
    assert not tmp_path.joinpath("summariser.jsonl").exists()  # live mode records nothing


def run_outputs(summariser, spans) -> bytes:
    texts = [summariser.summarise(summary_request(s)) for s in spans]
    return json.dumps({"texts": texts, "usage": usage_totals(summariser.usage)}, sort_keys=True).encode()


def test_record_then_replay_with_server_stopped(tmp_path):
    spans = [f"[tool]: step {i} wrote /tmp/out_{i}.txt" for i in range(3)]
    with LLMServer() as server:
        recorder = build_summariser(llm_cfg(server.api_base, "record", tmp_path), tmp_path)
        recorded = run_outputs(recorder, spans)
        api_base = server.api_base
    lines = tmp_path.joinpath("summariser.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 3
    exchange = json.loads(lines[0])
    assert {"key", "request", "response", "usage", "model", "role"} <= set(exchange)
    sent = exchange["request"]["messages"][1]["content"]
    # The span between delimiters, the instruction after it (small models otherwise continue the span).
    assert sent.startswith(f"<conversation>\n{spans[0]}\n</conversation>") and sent.rstrip().endswith("## Next Steps")
    # The server is gone: every answer must come from the cassette, byte for byte.
    replayer = build_summariser(llm_cfg(api_base, "replay", tmp_path), tmp_path)
    assert run_outputs(replayer, spans) == recorded
    # Replayed answers stand for the recorded calls (billed as recorded); none is a cache hit.
    assert all(r["replayed"] and not r["cached"] for r in replayer.usage)
    strip = [{k: v for k, v in r.items() if k != "replayed"} for r in replayer.usage]
    assert strip == [{k: v for k, v in r.items() if k != "replayed"} for r in recorder.usage]


def test_replay_miss_is_one_line_naming_the_request(tmp_path):
    summariser = build_summariser(llm_cfg("http://127.0.0.1:9/v1", "replay", tmp_path), tmp_path)
    with pytest.raises(CassetteMiss) as caught:
        summariser.summarise(summary_request("never recorded span about /etc/hosts"))
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, CtxbenchError)
    assert "role=summariser" in message and "model=openai/test-model" in message
    assert "Summarise the conversation" in message and "key=" in message
    assert str(tmp_path / "summariser.jsonl") in message


def test_replay_or_live_falls_through_and_records(server, tmp_path):
    build_summariser(llm_cfg(server.api_base, "record", tmp_path), tmp_path).summarise(summary_request("old span"))
    assert len(server.requests) == 1
    mixed = build_summariser(llm_cfg(server.api_base, "replay-or-live", tmp_path), tmp_path)
    mixed.summarise(summary_request("old span"))
    assert len(server.requests) == 1 and mixed.usage[-1]["replayed"] is True
    mixed.summarise(summary_request("new span"))
    assert len(server.requests) == 2 and mixed.usage[-1]["replayed"] is False
    assert len(tmp_path.joinpath("summariser.jsonl").read_text("utf-8").splitlines()) == 2


def test_params_that_change_the_answer_change_the_key(server, tmp_path):
    plain = build_summariser(llm_cfg(server.api_base, "record", tmp_path), tmp_path)
    seeded = build_summariser(llm_cfg(server.api_base, "record", tmp_path, params={"seed": 3}), tmp_path)
    plain.summarise(summary_request("same span"))
    seeded.summarise(summary_request("same span"))
    assert plain.usage[0]["key"] != seeded.usage[0]["key"]
    assert server.requests[-1]["seed"] == 3


@pytest.mark.parametrize(
    ("behaviour", "kind"),
    [
        ("overflow", "overflow"),
        ("rate_limit", "rate_limit"),
        ("slow", "timeout"),
        ("empty", "empty"),
        ("malformed", "malformed"),
    ],
)
def test_real_server_failures_map_to_kinds(behaviour, kind, tmp_path):
    with LLMServer(behaviour, sleep_seconds=2.0) as server:
        cfg = llm_cfg(server.api_base, "record", tmp_path, timeout=0.3)
        summariser = build_summariser(cfg, tmp_path)
        with pytest.raises(SummariserError) as caught:
            summariser.summarise(summary_request("a span"))
        assert len(server.requests) == 1  # num_retries 0: litellm and the OpenAI SDK did not retry
    assert caught.value.kind == kind
    assert summariser.usage[-1]["fault"] == kind
    # The failure was recorded: a replay fails the same way without a server.
    replayer = build_summariser(llm_cfg(server.api_base, "replay", tmp_path), tmp_path)
    with pytest.raises(SummariserError) as again:
        replayer.summarise(summary_request("a span"))
    assert again.value.kind == kind


def test_recorded_transient_failure_is_retried_by_replay_or_live(tmp_path):
    with LLMServer("rate_limit") as server:
        with pytest.raises(SummariserError):
            build_summariser(llm_cfg(server.api_base, "record", tmp_path), tmp_path).summarise(summary_request("x"))
        server.behaviour = "ok"
        mixed = build_summariser(llm_cfg(server.api_base, "replay-or-live", tmp_path), tmp_path)
        assert "## Next Steps" in mixed.summarise(summary_request("x"))
        assert len(server.requests) == 2


def test_judge_client_and_config_prices(server, tmp_path):
    judge = build_client(
        {
            "model": "openai/test-model",
            "api_base": server.api_base,
            "num_retries": 0,
            "input_price_per_mtok": 2.0,
            "output_price_per_mtok": 8.0,
            "cassette": "live",
        },
        tmp_path,
        role="judge",
    )
    answer = judge.complete([{"role": "user", "content": "score this answer please"}], purpose="probe_judge")
    assert answer.startswith("echo ")
    record = judge.usage[-1]
    assert record["role"] == "judge" and record["prompt_tokens"] == 4
    assert record["cost_usd"] == pytest.approx((4 * 2.0 + record["completion_tokens"] * 8.0) / 1e6)
    assert isinstance(LLMSummariser(judge).name, str)


def test_prompt_tokens_served_from_the_providers_cache_cost_the_cached_price(server, tmp_path):
    server.cached_tokens = 3  # the provider reports 3 of the prompt's 4 tokens served from its cache
    client = build_client(
        {
            "model": "openai/test-model",
            "api_base": server.api_base,
            "num_retries": 0,
            "input_price_per_mtok": 2.0,
            "cached_input_price_per_mtok": 0.5,
            "output_price_per_mtok": 8.0,
            "cassette": "record",
        },
        tmp_path,
        role="summariser",
    )
    client.complete([{"role": "user", "content": "summarise this span please"}], purpose="summary")
    record = client.usage[-1]
    assert record["prompt_tokens"] == 4 and record["cached_prompt_tokens"] == 3
    assert record["cost_usd"] == pytest.approx((1 * 2.0 + 3 * 0.5 + record["completion_tokens"] * 8.0) / 1e6)
    assert usage_totals(client.usage)["cached_prompt_tokens"] == 3
