"""Retries that reach a real HTTP server on 127.0.0.1 which fails, then recovers; cassettes that
record final outcomes only, never answer a retry from a transient failure, and count answers the
run already had as cache hits (not provider calls, not billed)."""

import json

import pytest

from ctxbench.llm import SummariserError, SummaryRequest, build_client, build_summariser, usage_totals
from tests.llm_server import LLMServer

SECTIONS = ("Original Task", "Next Steps")


def request(text: str = "[user]: deploy to port 8080") -> SummaryRequest:
    return SummaryRequest(
        instructions="Summarise under these headings:\n" + "\n".join(f"## {s}" for s in SECTIONS),
        source_text=text,
        sections=SECTIONS,
        max_tokens=200,
    )


def role(api_base: str, folder, mode: str = "record", **extra) -> dict:
    return {
        "model": "openai/test-model",
        "api_base": api_base,
        "timeout": 5,
        "num_retries": 2,
        "retry_min_seconds": 0.01,  # real backoff, kept short for the test
        "retry_max_seconds": 0.05,
        "input_price_per_mtok": 1.0,
        "output_price_per_mtok": 1.0,
        "cassette": {"mode": mode, "dir": str(folder)},
        **extra,
    }


@pytest.mark.parametrize("failure", ["error", "rate_limit"])
def test_transient_failures_are_retried_until_the_server_recovers(failure, tmp_path):
    with LLMServer(script=[failure, failure, "ok"]) as server:
        summariser = build_summariser({"summariser": role(server.api_base, tmp_path)}, tmp_path)
        text = summariser.summarise(request())
        assert server.behaviours == [failure, failure, "ok"]  # three requests reached the server
    assert "## Next Steps" in text
    (record,) = summariser.usage
    assert record["attempts"] == 3 and record["fault"] is None and record["cost_usd"] > 0
    assert usage_totals(summariser.usage)["retries"] == 2
    lines = (tmp_path / "summariser.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 1 and "error" not in json.loads(lines[0])  # the final outcome only


def test_timeouts_are_retried_too(tmp_path):
    with LLMServer(script=["slow", "ok"], sleep_seconds=4) as server:
        summariser = build_summariser({"summariser": role(server.api_base, tmp_path, timeout=1.5)}, tmp_path)
        assert "## Original Task" in summariser.summarise(request())
        assert server.behaviours == ["slow", "ok"]


def test_a_retry_is_never_answered_from_a_transient_failure_and_replay_walks_the_same_path(tmp_path):
    # num_retries 1: the first call fails twice (one retry) and gives up; the caller's own retry
    # (as five_layer's chunked summary does) must reach the server again, not the recorded failure.
    with LLMServer(script=["error", "error", "ok"]) as server:
        summariser = build_summariser({"summariser": role(server.api_base, tmp_path, num_retries=1)}, tmp_path)
        with pytest.raises(SummariserError) as caught:
            summariser.summarise(request())
        assert caught.value.kind == "error" and len(server.requests) == 2
        text = summariser.summarise(request())
        assert len(server.requests) == 3
        # The same request again: the run already has a lasting answer, a cache hit.
        assert summariser.summarise(request()) == text
        assert len(server.requests) == 3
        api_base = server.api_base
    totals = usage_totals(summariser.usage)
    assert totals["calls"] == 2 and totals["cache_hits"] == 1 and totals["faults"] == {"error": 1}
    assert summariser.usage[-1]["cost_usd"] == 0.0  # a cache hit is not billed
    lines = (tmp_path / "summariser.jsonl").read_text("utf-8").splitlines()
    assert [("error" in json.loads(line)) for line in lines] == [True, False]
    # Replay with the server gone: fail, then the recorded answer, then a cache hit, as recorded.
    replayer = build_summariser({"summariser": role(api_base, tmp_path, mode="replay")}, tmp_path)
    with pytest.raises(SummariserError):
        replayer.summarise(request())
    assert replayer.summarise(request()) == text == replayer.summarise(request())
    assert usage_totals(replayer.usage) == totals


def test_lasting_failures_are_not_retried(tmp_path):
    with LLMServer("overflow") as server:
        client = build_client(role(server.api_base, tmp_path), tmp_path, "judge")
        with pytest.raises(SummariserError) as caught:
            client.complete([{"role": "user", "content": "grade this"}])
        assert caught.value.kind == "overflow" and len(server.requests) == 1


def test_failures_become_events_with_role_and_kind(tmp_path):
    events = []
    with LLMServer(script=["error", "error", "empty", "ok"]) as server:
        client = build_client(role(server.api_base, tmp_path, num_retries=1), tmp_path, "answerer")
        client.on_event = events.append
        for _ in range(2):
            with pytest.raises(SummariserError):
                client.complete([{"role": "user", "content": f"question {len(events)}"}], purpose="probe_answer")
    assert [(e["type"], e["role"], e["kind"], e["purpose"]) for e in events] == [
        ("llm.failure", "answerer", "error", "probe_answer"),
        ("llm.failure", "answerer", "empty", "probe_answer"),
    ]


def test_truncated_summary_is_a_failure_of_its_own_kind(tmp_path):
    with LLMServer("length") as server:
        summariser = build_summariser({"summariser": role(server.api_base, tmp_path)}, tmp_path)
        with pytest.raises(SummariserError) as caught:
            summariser.summarise(request())
    assert caught.value.kind == "truncated"
    assert summariser.usage[-1]["fault"] == "truncated" and summariser.usage[-1]["finish_reason"] == "length"
