"""DB-GPT Layer 3: LLM summary of old rounds, six headings, summary message shape, circuit breaker."""

from ctxbench.layers.drop_rounds import SessionMemoryCompact
from ctxbench.layers.llm_full_compression import BREAKER_KEY, SECTIONS, FullContextCompression
from ctxbench.layers.observation_micro import ObservationMicroCompact
from ctxbench.llm import ExtractiveSummariser, FaultConfig, FaultInjectingSummariser
from ctxbench.replay.provider import request_problems
from tests.dbgpt_histories import TASK, make_ctx, react_history, tool_history


class RecordingSummariser(ExtractiveSummariser):
    """The real extractive summariser, also keeping the requests it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = []

    def summarise(self, request):
        self.requests.append(request)
        return super().summarise(request)


def test_summary_message_shape_and_recent_rounds_kept():
    messages = react_history(10, obs_chars=500)
    summariser = RecordingSummariser()
    ctx = make_ctx(messages, summariser=summariser)
    out = FullContextCompression(min_keep_recent_rounds=3).apply(messages, ctx)
    old = messages[1:-6]  # task + 7 rounds of 2 messages
    assert len(old) == 15
    assert out[0] is messages[0]
    assert out[1].role == "user"
    assert out[1].content.startswith("[Context Summary of 15 earlier messages]\n\n")
    assert out[2:] == messages[-6:]
    body = out[1].content.split("\n\n", 1)[1]
    for heading in SECTIONS:
        assert f"## {heading}" in body
    assert TASK in body  # the extractive summariser files the first user message under Original Task


def test_request_carries_dbgpt_prompt_headings_cut_messages_and_limits():
    messages = react_history(6, obs_chars=5000)
    summariser = RecordingSummariser()
    FullContextCompression().apply(messages, make_ctx(messages, summariser=summariser))
    (request,) = summariser.requests
    assert request.sections == (
        "Original Task",
        "Completed Steps",
        "Current State",
        "Key Data",
        "Errors Encountered",
        "Next Steps",
    )
    assert request.max_tokens == 2000
    assert request.purpose == "dbgpt_layer3"
    for line in ("1. Original Task:", "4. Key Data: <important values, paths, variable names — must be exact>"):
        assert line in request.instructions
    lines = request.source_text.split("\n[")
    assert lines[0] == f"[human]: {TASK}"  # DB-GPT's role names (compact.py)
    observations = [line for line in request.source_text.splitlines() if line.startswith("[human]: Observation")]
    assert len(observations) == 3 and all(len(line) == len("[human]: ") + 3000 for line in observations)


def test_tool_calls_rendered_and_pairs_whole():
    messages = tool_history(6, result_chars=100)
    summariser = RecordingSummariser()
    out = FullContextCompression().apply(messages, make_ctx(messages, summariser=summariser))
    # The call inline, as DB-GPT holds a function-calling message's text (tokens.dbgpt.message_text).
    assert '[ai]: Reading module 0.\nread_file {"path": "src/m0.py"}' in summariser.requests[0].source_text
    assert request_problems(out) == []


def test_no_summariser_or_too_few_rounds_is_a_no_op():
    messages = react_history(10)
    assert FullContextCompression().apply(messages, make_ctx(messages)) is messages
    few = react_history(3)
    assert FullContextCompression().apply(few, make_ctx(few, summariser=RecordingSummariser())) is few


def test_empty_summary_skips_the_layer_without_counting_a_failure():
    messages = react_history(10)
    ctx = make_ctx(messages, summariser=FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(empty_rate=1.0)))
    layer = FullContextCompression()
    for _ in range(4):
        assert layer.apply(messages, ctx) is messages
    assert layer.failures == 0 and BREAKER_KEY not in ctx.shared
    assert [e["type"] for e in ctx.events] == ["compaction.summary", "compaction.skipped"] * 4  # the call itself worked


def test_circuit_breaker_opens_after_three_consecutive_failures_and_stops_compaction():
    messages = react_history(10, obs_chars=1000)
    failing = FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(error_rate=1.0))
    ctx = make_ctx(messages, summariser=failing)
    layer = FullContextCompression(max_compact_failures=3)
    for _ in range(5):
        assert layer.apply(messages, ctx) is messages
    assert failing.calls == 3  # no more tries once open
    kinds = [e["type"] for e in ctx.events]
    assert kinds == ["compaction.failure"] * 3 + ["circuit_breaker.open"]
    assert [e["consecutive_failures"] for e in ctx.events] == [1, 2, 3, 3]
    assert ctx.shared[BREAKER_KEY] is True
    # DB-GPT's manager stops compacting altogether: Layers 1 and 2 stop too.
    assert ObservationMicroCompact().apply(messages, ctx) is messages
    assert SessionMemoryCompact(min_keep_tokens=0).apply(messages, ctx) is messages


def test_success_resets_the_failure_count():
    messages = react_history(10)
    layer = FullContextCompression(max_compact_failures=3)
    ctx = make_ctx(messages, summariser=FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=2)))
    assert layer.apply(messages, ctx) is messages
    assert layer.apply(messages, ctx) is messages
    assert layer.failures == 2
    assert layer.apply(messages, ctx) is not messages  # third call succeeds
    assert layer.failures == 0
    ctx.summariser = FaultInjectingSummariser(ExtractiveSummariser(), FaultConfig(fail_first_n=2))
    layer.apply(messages, ctx)
    layer.apply(messages, ctx)
    assert layer.failures == 2 and BREAKER_KEY not in ctx.shared  # 2 + 2 would have opened it without the reset


def test_summary_event_records_usage():
    messages = react_history(8)
    ctx = make_ctx(messages, summariser=ExtractiveSummariser())
    FullContextCompression().apply(messages, ctx)
    (event,) = ctx.events
    assert event["type"] == "compaction.summary" and event["summariser"] == "extractive"
    assert event["summarised_messages"] == 11
    assert {"prompt_tokens", "completion_tokens", "cost_usd"} <= set(event)
