from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes import CheckpointPolicy, ProbeObserver
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ContextOverflowError, ModelSpec, SimulatedProvider, request_problems
from ctxbench.strategies.none import FullHistory
from ctxbench.strategies.sliding_window import SlidingWindow
from ctxbench.tokens import ExactEstimator, FixedRatioEstimator, TokenCounter, get_tokenizer
from ctxbench.transcripts.model import Message, Probe, ToolCall
from tests.helpers import coding_transcript

SMALL = ModelSpec(name="small", context_window=8000, reserved_output_tokens=1000, tokenizer="cl100k_base")


def _counter():
    return TokenCounter(get_tokenizer("cl100k_base"))


def test_provider_rejects_prompt_plus_reserve_over_window():
    counter = _counter()
    provider = SimulatedProvider(SMALL, counter)
    fits = [Message("user", "hi")]
    assert provider.send(fits) == counter.prompt(fits)
    big = [Message("user", "word " * 9000)]
    try:
        provider.send(big)
    except ContextOverflowError as error:
        assert "maximum context length is 8000 tokens" in error.text
        assert error.prompt_tokens == counter.prompt(big)
    else:
        raise AssertionError("an oversized prompt was accepted")


def test_full_history_overflows_and_counts_each_message_once():
    t = coding_transcript(rounds=40)
    counter = _counter()
    result = replay(t, FullHistory(), ExactEstimator("cl100k_base"), SMALL, counter)
    s = result.summary
    assert s["calls"] == len(t.call_indices) == 41
    assert s["overflow_errors"] == s["failed_calls"] > 0
    assert s["retries"] == 0 and s["savings"] == 0.0
    # The uncompacted size grows by exactly the messages added: the full history is what `none` sends.
    assert all(c["tokens_sent"] == c["tokens_uncompacted"] for c in result.calls)
    # O(total text): every character tokenized once by the provider's counter, never again.
    assert counter.tokenized_chars == t.char_count


def test_sliding_window_saves_tokens_and_keeps_requests_valid():
    t = coding_transcript(rounds=40)
    result = replay(t, SlidingWindow(budget_ratio=0.8), ExactEstimator("cl100k_base"), SMALL, _counter())
    s = result.summary
    assert s["failed_calls"] == 0 and s["overflow_errors"] == 0
    assert s["savings"] > 0.5
    assert s["tokens_sent_peak"] <= SMALL.prompt_budget
    assert s["invalid_requests"] == 0
    assert result.working[0].role == "system" and "47213" in result.working[1].content


def test_underestimating_estimator_causes_overflow_retries():
    # A 16 chars/token estimate undercounts this text ~4x, so the window is overrun and retried.
    t = coding_transcript(rounds=40)
    exact = replay(t, SlidingWindow(budget_ratio=0.95), ExactEstimator("cl100k_base"), SMALL, _counter()).summary
    low = replay(t, SlidingWindow(budget_ratio=0.95), FixedRatioEstimator(16), SMALL, _counter()).summary
    assert exact["overflow_errors"] == 0
    assert low["overflow_errors"] > 0 and low["retries"] > 0


def test_request_problems_finds_orphans():
    call = ToolCall("a", "bash", "{}")
    ok = [Message("assistant", "", tool_calls=(call,)), Message("tool", "out", tool_call_id="a")]
    assert request_problems(ok) == []
    assert request_problems(ok[1:]) == ["message 0: tool result 'a' has no preceding call"]
    assert request_problems([ok[0], Message("user", "next")]) == ["message 0: tool call 'a' has no result"]


def test_probe_observer_sees_the_fact_dropped_by_sliding_window():
    t = coding_transcript(rounds=40)
    # keep_first_user=False: the task message (with the port) is allowed to slide out.
    observer = ProbeObserver(t.probes, DeterministicJudge(), CheckpointPolicy(every_n_calls=1))
    replay(
        t, SlidingWindow(keep_first_user=False), ExactEstimator("cl100k_base"), SMALL, _counter(), observers=[observer]
    )
    end = [r for r in observer.rows if r["checkpoint"] == "end"]
    needed = [r for r in observer.rows if r["checkpoint"] == "needed"]
    assert end[0]["status"] == "lost" and needed[0]["status"] == "lost"
    assert any(r["status"] == "kept" for r in observer.rows)  # kept early, before the window slid


def test_facts_stated_after_the_last_call_are_not_scored():
    t = coding_transcript(rounds=3)
    t.messages.append(Message("user", "By the way, the staging port is 51515."))
    late = Probe("late", "Staging port?", "51515", "recall", len(t.messages) - 1)
    observer = ProbeObserver([*t.probes, late], DeterministicJudge())
    replay(t, FullHistory(), ExactEstimator("cl100k_base"), SMALL, _counter(), observers=[observer])
    end = {r["probe"]: r["status"] for r in observer.rows if r["checkpoint"] == "end"}
    assert end == {"port": "kept"}


class _CountingEstimator(FixedRatioEstimator):
    """Counts the contexts it is asked to estimate."""

    def __init__(self) -> None:
        super().__init__(4)
        self.asked = 0

    def prompt(self, messages):
        self.asked += 1
        return super().prompt(messages)


class _Unchanged:
    """A layer that runs and changes nothing (DB-GPT's layers report a status even then)."""

    name = "unchanged"
    ran = True

    def apply(self, messages, ctx):
        return messages

    def snapshots(self, workdir):
        return None


def test_the_estimate_of_the_returned_context_is_asked_once_per_call_and_never_stale():
    """The status before the layers, the one after a layer that changed nothing and the engine's
    record are one estimate of one list; the history list grows in place between calls, so a
    later call must estimate it afresh."""
    from ctxbench.strategies.pipeline import LayeredStrategy, Step

    t = coding_transcript(rounds=12)
    estimator = _CountingEstimator()
    strategy = LayeredStrategy(proactive=[Step(_Unchanged(), always_report=True)])  # type: ignore[arg-type]
    sent: list[list[Message]] = []

    class Sent:
        def on_call(self, record, working, ctx):
            sent.append(list(working))

    result = replay(t, strategy, estimator, SMALL, _counter(), observers=[Sent()])
    assert estimator.asked == len(result.calls) == len(t.call_indices)
    fresh = FixedRatioEstimator(4)
    assert [c["tokens_estimated"] for c in result.calls] == [fresh.prompt(w) for w in sent]
    statuses = [e["used"] for e in result.events if e["type"] == "context.status"]
    assert statuses == [fresh.prompt(w) for w in sent for _ in range(2)]
