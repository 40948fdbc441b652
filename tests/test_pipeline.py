"""LayeredStrategy: triggers, status events, escalation on overflow."""

from ctxbench.layers.base import Layer
from ctxbench.replay.provider import ContextOverflowError, ModelSpec
from ctxbench.strategies.base import StrategyContext
from ctxbench.strategies.pipeline import LayeredStrategy, Step
from ctxbench.tokens import FixedRatioEstimator
from ctxbench.transcripts.model import Message, Transcript

MODEL = ModelSpec(name="m", context_window=1000, reserved_output_tokens=200, tokenizer="cl100k_base")
OVERFLOW = ContextOverflowError("This model's maximum context length is 1000 tokens", 1200, 800)


class NoOp(Layer):
    name = "noop"

    def apply(self, messages, ctx):
        return messages


class KeepLast(Layer):
    name = "keep_last"

    def apply(self, messages, ctx):
        return messages[-1:]


def ctx() -> StrategyContext:
    return StrategyContext(model=MODEL, estimator=FixedRatioEstimator(4), transcript=Transcript("t", []))


def history(n: int = 10) -> list[Message]:
    return [Message("user", "x" * 400) for _ in range(n)]


def test_proactive_step_runs_only_above_its_trigger_and_reports_status():
    strategy = LayeredStrategy(proactive=[Step(KeepLast(), when=0.9)], thresholds={"warning": 0.7})
    c = ctx()
    assert strategy.before_call(history(1), c) == history(1)  # 100 of 800 tokens: below the trigger
    out = strategy.before_call(history(10), c)  # 1000 of 800: over
    assert len(out) == 1 and c.layers_applied == ["keep_last"]
    assert [e["compact_layer"] for e in c.events if e["type"] == "context.status"] == [None, None, "keep_last"]
    assert c.state == "normal" and c.events[1]["state"] == "overflow"


def test_later_attempt_steps_run_at_once_when_earlier_ones_change_nothing():
    strategy = LayeredStrategy(reactive=[Step(NoOp()), Step(KeepLast(), from_attempt=1)], max_retries=3)
    out = strategy.on_overflow(history(), OVERFLOW, ctx(), attempt=0)
    assert out is not None and len(out) == 1


def test_unrecognised_errors_and_exhausted_steps_give_up():
    strategy = LayeredStrategy(reactive=[Step(NoOp())], max_retries=3)
    assert strategy.on_overflow(history(), OVERFLOW, ctx(), attempt=0) is None
    rate_limited = ContextOverflowError("Rate limit reached for requests", 1200, 800)
    assert LayeredStrategy(reactive=[Step(KeepLast())]).on_overflow(history(), rate_limited, ctx(), 0) is None
