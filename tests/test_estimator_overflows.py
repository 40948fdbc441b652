"""The estimator decides, the real tokenizer judges: a len/4 estimate on a model whose tokenizer
it undercounts (Qwen 2.5 on digit-heavy test logs) turns into overflow errors and retries that
the EMA-calibrated and exact estimators avoid."""

from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ModelSpec
from ctxbench.strategies.sliding_window import SlidingWindow
from ctxbench.tokens import EmaEstimator, ExactEstimator, FixedRatioEstimator, TokenCounter, get_tokenizer
from tests.helpers import coding_transcript

QWEN_32K = ModelSpec(name="qwen", context_window=32768, reserved_output_tokens=4096, tokenizer="qwen2.5")


def run(estimator):
    t = coding_transcript(rounds=60, lines_per_output=150)
    return replay(t, SlidingWindow(budget_ratio=0.9), estimator, QWEN_32K, TokenCounter(get_tokenizer("qwen2.5")))


def test_len4_undercounts_qwen_and_pays_in_overflow_retries():
    ratio = run(FixedRatioEstimator(4.0))
    ema = run(EmaEstimator())
    exact = run(ExactEstimator("qwen2.5"))
    # len/4 really is an undercount here (that is the premise of the test).
    assert all(c["tokens_estimated"] < c["tokens_sent"] for c in ratio.calls[5:])
    assert ratio.summary["overflow_errors"] > 10 and ratio.summary["retries"] > 10
    assert exact.summary["overflow_errors"] == 0
    assert ema.summary["overflow_errors"] < ratio.summary["overflow_errors"] / 5
    assert ema.summary["estimator"]["samples"] > 0
