"""DB-GPT Layer 4: on a matching overflow error keep system + last 2 rounds and retry once."""

from pathlib import Path

from omegaconf import OmegaConf

from ctxbench.layers.reactive_keep_last_rounds import ReactiveKeepLastRounds
from ctxbench.replay.provider import ContextOverflowError, request_problems
from ctxbench.strategies.pipeline import LayeredStrategy
from tests.dbgpt_histories import make_ctx, react_history, tool_history

YAML = Path(__file__).resolve().parents[1] / "ctxbench" / "configs" / "strategy" / "dbgpt.yaml"
OPENAI = (
    "Error code: 400 - This model's maximum context length is 32768 tokens. However, you requested 40000 tokens "
    "(35904 in the messages, 4096 in the completion). (code: context_length_exceeded)"
)


def _strategy() -> LayeredStrategy:
    cfg = OmegaConf.load(YAML)
    return LayeredStrategy(
        reactive=[{"layer": ReactiveKeepLastRounds()}],
        max_retries=cfg.max_retries,
        overflow_patterns=list(cfg.overflow_patterns),
    )


def test_keeps_system_and_last_two_rounds():
    messages = react_history(6)
    out = ReactiveKeepLastRounds().apply(messages, make_ctx(messages))
    assert out == [messages[0], *messages[-4:]]


def test_two_or_fewer_rounds_unchanged():
    messages = react_history(2)
    assert ReactiveKeepLastRounds().apply(messages, make_ctx(messages)) is messages


def test_tool_rounds_stay_paired():
    messages = tool_history(5)
    out = ReactiveKeepLastRounds().apply(messages, make_ctx(messages))
    assert [m.role for m in out] == ["system"] + ["assistant", "tool", "tool"] * 2
    assert request_problems(out) == []


def test_yaml_patterns_are_exactly_dbgpts_three_and_one_retry():
    cfg = OmegaConf.load(YAML)
    assert list(cfg.overflow_patterns) == ["context_too_long", "context_length_exceeded", "maximum context length"]
    assert cfg.max_retries == 1


def test_runs_only_on_matching_error_texts():
    strategy = _strategy()
    messages = react_history(6)
    for text in (OPENAI, "LLM error: context_too_long (30000 prompt tokens)", "MAXIMUM CONTEXT LENGTH reached"):
        ctx = make_ctx(messages)
        out = strategy.on_overflow(messages, ContextOverflowError(text, 1, 1), ctx, attempt=0)
        assert out == [messages[0], *messages[-4:]], text
        assert ctx.events[-1]["compact_layer"] == "layer4"
    for text in (
        "Error code: 429 - Rate limit reached for gpt-4 on tokens per min (TPM): Limit 10000, Requested 40000.",
        "Request too large for gpt-4-32k in organization org-x on tokens per min",
        "Error code: 400 - prompt is too long: 40000 tokens > 32768 maximum",  # not one of DB-GPT's three
    ):
        assert strategy.on_overflow(messages, ContextOverflowError(text, 1, 1), make_ctx(messages), 0) is None, text
