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


def test_each_stream_draws_its_own_faults_and_the_empty_stream_keeps_the_old_draws():
    rates = {"seed": 7, "error_rate": 0.3, "timeout_rate": 0.2}
    config = FaultConfig.from_dict(rates)
    plain = [config.draw(n) for n in range(80)]
    one = [config.in_stream("transcript-a").draw(n) for n in range(80)]
    other = [config.in_stream("transcript-b").draw(n) for n in range(80)]
    assert one != other and one != plain
    assert one == outcomes_kinds(build_summariser({"faults": rates}, None, stream="transcript-a"), 80)
    assert [FaultConfig.from_dict(rates).in_stream("").draw(n) for n in range(80)] == plain
    with pytest.raises(ConfigError, match="unknown key 'stream'"):  # set by the run, not by a config
        FaultConfig.from_dict({**rates, "stream": "x"})


def outcomes_kinds(summariser, calls: int) -> list[str | None]:
    """The drawn kind behind each call's outcome (None: the call went through)."""
    return [None if seen == "ok" else seen for seen in outcomes(summariser, calls)]


def test_transcripts_of_one_run_fail_at_their_own_calls(tmp_path):
    """A real run with llm=faults: with the call number alone every transcript failed at the same
    summary calls; now each transcript's failures follow its own draws."""
    import json
    import subprocess

    from tests.conftest import CTXBENCH, ROOT

    out = tmp_path / "results"
    done = subprocess.run(
        [
            *CTXBENCH,
            "run",
            "strategy=anchored_summary",
            "llm=faults",
            "llm.faults.fail_first_n=0",
            "llm.faults.error_rate=0.5",
            "model.context_window=16000",
            f"output.root={out}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    patterns = {}
    for events in out.rglob("events.jsonl"):
        rows = [json.loads(line) for line in events.read_text().splitlines()]
        summaries = [e for e in rows if e.get("role") == "summariser" or e["type"].endswith("summary")]
        patterns[events.parent.name] = [e["type"] for e in summaries[:12]]
    failing = {name: p for name, p in patterns.items() if "llm.failure" in p}
    assert len(failing) >= 2, patterns
    assert len({tuple(p) for p in failing.values()}) >= 2, failing
