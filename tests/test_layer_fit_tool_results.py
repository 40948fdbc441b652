"""After five_layer's summary: tool results cut, newest first, until the prompt fits (OpenClaw's overflow
recovery truncates tool results after compaction)."""

from __future__ import annotations

import pytest

from ctxbench.layers.fit_tool_results import FitToolResults
from ctxbench.layers.truncate_tool_result import TRUNCATION_NOTICE
from ctxbench.transcripts.model import Message
from tests.five_layer_helpers import assert_valid, call, make_ctx


def _context(results: list[int]) -> list[Message]:
    messages = [Message("system", "You are a careful agent. " * 600), Message("user", "summary of the work so far")]
    for n, size in enumerate(results):
        messages += call(f"c{n}", "bash", "\n".join(f"{n}: line {i} of the output" for i in range(size // 24)))
    return messages


def test_the_newest_result_is_cut_until_the_estimate_fits_the_budget_over_the_margin() -> None:
    """System prompt (~3,700 tokens) and a 12,000-character result on a 12k window with a 4,096 reply
    reserve: over the 7,904-token budget; cut to fit 7,904 / 1.2."""
    ctx = make_ctx(12_000)
    ctx.model = ctx.model.__class__(name="test", context_window=12_000, reserved_output_tokens=4096)
    messages = _context([2_000, 16_000])
    assert ctx.estimator.prompt(messages) > ctx.model.prompt_budget
    out = FitToolResults().apply(messages, ctx)
    assert out[:-1] == messages[:-1]  # the older result is enough as it is
    assert out[-1].content.endswith(TRUNCATION_NOTICE) and out[-1].tool_call_id == messages[-1].tool_call_id
    assert ctx.estimator.prompt(out) <= ctx.model.prompt_budget / 1.2
    assert ctx.estimator.prompt(out) > ctx.model.prompt_budget / 1.2 - 200  # no more is cut than needed
    event = ctx.events[-1]
    assert (
        event["type"] == "five_layer.fit"
        and event["results"] == 1
        and event["estimate_after"] < event["estimate_before"]
    )
    assert_valid(out)


def test_a_context_that_fits_is_left_as_it_is() -> None:
    ctx = make_ctx(128_000)
    messages = _context([2_000, 16_000])
    assert FitToolResults().apply(messages, ctx) is messages


def test_min_keep_chars_moves_the_cut_to_older_results() -> None:
    ctx = make_ctx(12_000)
    messages = _context([8_000, 8_000, 8_000])
    out = FitToolResults(min_keep_chars=6_000).apply(messages, ctx)
    cut = [i for i, m in enumerate(out) if m.content.endswith(TRUNCATION_NOTICE)]
    assert len(cut) >= 2 and cut[-1] == len(out) - 1
    assert all(0.7 * 6_000 <= len(out[i].content) <= 6_000 for i in cut)


def test_openclaws_share_per_result_and_for_all_results_newest_first() -> None:
    """0.3 of the window at 4 chars/token: 14,400 characters at 12k, per result and all together."""
    ctx = make_ctx(12_000)
    one = _context([12_000])  # strategy 1's cap at 12k: under OpenClaw's per-result limit
    assert FitToolResults(budget="openclaw").apply(one, ctx) is one
    big = _context([20_000])
    out = FitToolResults(budget="openclaw").apply(big, ctx)
    assert len(out[-1].content) <= 14_400 and out[-1].content.endswith(TRUNCATION_NOTICE)
    two = _context([9_000, 9_000])
    out = FitToolResults(budget="openclaw").apply(two, ctx)
    assert out[3] == two[3] and len(out[3].content) + len(out[5].content) <= 14_400  # the newest is cut


def test_none_cuts_nothing_and_a_wrong_budget_is_refused() -> None:
    messages = _context([2_000, 60_000])
    assert FitToolResults(budget="none").apply(messages, make_ctx(12_000)) is messages
    with pytest.raises(ValueError, match="budget must be"):
        FitToolResults(budget="tokens")  # type: ignore[arg-type]


def test_the_providers_count_of_the_rejected_prompt_sizes_the_cut() -> None:
    """OpenClaw hands compaction the token count the provider's overflow error reported (currentTokenCount):
    when the provider counted 30% more than the estimate of the prompt it rejected, the estimate must come
    down by that much more."""
    messages = _context([2_000, 30_000])
    plain = make_ctx(12_000)
    alone = FitToolResults().apply(messages, plain)
    observed = make_ctx(12_000)
    used = observed.estimator.prompt(messages)
    observed.emit({"type": "context.status", "used": used})
    observed.emit({"type": "overflow_error", "prompt_tokens": int(used * 1.3), "limit": 9_000})
    tighter = FitToolResults().apply(messages, observed)
    assert observed.estimator.prompt(tighter) <= observed.model.prompt_budget / 1.2 / 1.3
    assert len(tighter[-1].content) < len(alone[-1].content)
    assert observed.events[-1]["observed_ratio"] == 1.3
