"""The fault injector: every kind raises or returns as configured, deterministically by seed."""

import pytest

from ctxbench.errors import ConfigError
from ctxbench.llm import (
    ExtractiveSummariser,
    FaultConfig,
    SummariserError,
    SummaryRequest,
    build_summariser,
    missing_sections,
    usage_totals,
)

SECTIONS = ("Original Task", "Errors Encountered")
REQUEST = SummaryRequest("(unused)", "[user]: deploy /srv/app\n[tool]: error: disk full", SECTIONS, purpose="t")


def outcomes(summariser, calls: int) -> list[str]:
    seen = []
    for _ in range(calls):
        try:
            text = summariser.summarise(REQUEST)
        except SummariserError as error:
            seen.append(error.kind)
        else:
            seen.append("ok" if text and not missing_sections(text, SECTIONS) else f"bad:{text!r}")
    return seen


@pytest.mark.parametrize("kind", ["error", "timeout", "rate_limit", "overflow"])
def test_raising_kinds(kind):
    summariser = build_summariser({"summariser": "extractive", "faults": {f"{kind}_rate": 1.0}}, None)
    with pytest.raises(SummariserError) as caught:
        summariser.summarise(REQUEST)
    assert caught.value.kind == kind
    assert summariser.usage[-1]["fault"] == kind and summariser.usage[-1]["injected"] is True
    assert summariser.inner.usage == []  # a faulty call never reaches the inner summariser


def test_empty_and_malformed_return_bad_text():
    empty = build_summariser({"summariser": "extractive", "faults": {"empty_rate": 1.0}}, None)
    assert empty.summarise(REQUEST) == ""
    malformed = build_summariser({"summariser": "extractive", "faults": {"malformed_rate": 1.0}}, None)
    text = malformed.summarise(REQUEST)
    assert text and missing_sections(text, SECTIONS) == list(SECTIONS)
    assert [r["fault"] for r in empty.usage + malformed.usage] == ["empty", "malformed"]


def test_overflow_fault_text_matches_overflow_patterns():
    from ctxbench.llm import is_overflow_text

    summariser = build_summariser({"faults": {"overflow_rate": 1.0}}, None)
    with pytest.raises(SummariserError) as caught:
        summariser.summarise(REQUEST)
    assert is_overflow_text(str(caught.value))


def test_deterministic_by_seed_and_call_number():
    rates = {"error_rate": 0.2, "timeout_rate": 0.1, "empty_rate": 0.1, "malformed_rate": 0.1}
    first = outcomes(build_summariser({"faults": {"seed": 1, **rates}}, None), 60)
    again = outcomes(build_summariser({"faults": {"seed": 1, **rates}}, None), 60)
    other = outcomes(build_summariser({"faults": {"seed": 2, **rates}}, None), 60)
    assert first == again
    assert first != other
    assert {"ok", "error", "timeout"} <= set(first)
    config = FaultConfig.from_dict({"seed": 1, **rates})
    # The draw alone decides each call's outcome.
    for n, seen in enumerate(first):
        drawn = config.draw(n)
        if drawn in (None, "empty", "malformed"):
            assert seen.startswith("ok" if drawn is None else "bad:")
        else:
            assert seen == drawn


def test_fail_first_n_then_healthy_and_totals():
    summariser = build_summariser({"summariser": "extractive", "faults": {"fail_first_n": 3}}, None)
    assert outcomes(summariser, 5) == ["error", "error", "error", "ok", "ok"]
    totals = usage_totals(summariser.usage)
    assert totals["calls"] == 5 and totals["faults"] == {"error": 3}
    assert [r["fault"] for r in summariser.usage] == ["error", "error", "error", None, None]
    assert "faults" in summariser.name and isinstance(summariser.inner, ExtractiveSummariser)


def test_no_faults_configured_means_no_wrapper():
    assert isinstance(build_summariser({"summariser": "extractive", "faults": {"seed": 5}}, None), ExtractiveSummariser)


@pytest.mark.parametrize(
    "faults",
    [{"error_rate": 0.7, "timeout_rate": 0.5}, {"error_rat": 0.1}, {"empty_rate": -0.1}],
)
def test_bad_fault_config_is_one_line(faults):
    with pytest.raises(ConfigError) as caught:
        build_summariser({"summariser": "extractive", "faults": faults}, None)
    assert "llm.faults" in str(caught.value) and "\n" not in str(caught.value)


def test_role_client_faults_act_before_any_request(tmp_path):
    from ctxbench.llm import build_client

    def client(**faults):
        # Port 9 (discard) is never contacted: a faulty call never reaches the provider.
        cfg = {"model": "openai/x", "api_base": "http://127.0.0.1:9/v1", "cassette": "live", "faults": faults}
        return build_client(cfg, tmp_path, role="judge")

    with pytest.raises(SummariserError) as caught:
        client(rate_limit_rate=1.0).complete([{"role": "user", "content": "q"}])
    assert caught.value.kind == "rate_limit"
    with pytest.raises(SummariserError) as caught:
        client(empty_rate=1.0).complete([{"role": "user", "content": "q"}])
    assert caught.value.kind == "empty"
    judge = client(malformed_rate=1.0)
    assert judge.complete([{"role": "user", "content": "q"}])
    assert judge.usage[-1]["fault"] == "malformed" and judge.usage[-1]["role"] == "judge"
