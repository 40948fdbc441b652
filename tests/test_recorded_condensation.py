"""The agent's own condensations (OpenHands CondensationAction), replayed as it made them: from the
recorded point on, the forgotten messages leave the history and the latest summary is sent."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ctxbench.build import build_estimator, build_model, build_strategy, build_summariser
from ctxbench.calibration.provider_fidelity import measure
from ctxbench.core import ModelSpec
from ctxbench.replay.engine import replay
from ctxbench.strategies.none import FullHistory
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.estimators import ExactEstimator
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts.condensations import recorded_condensations
from ctxbench.transcripts.model import Message, ToolCall, Transcript
from tests.test_strategy_properties import SMALL_WINDOW, STRATEGIES, composed, workdir

TOK = get_tokenizer("o200k_base")


def agent_run(condensations: list[dict[str, Any]], rounds: int = 8) -> Transcript:
    """system, task, then rounds of (assistant call, long tool result); call k is message 2 + 2k."""
    messages = [Message("system", "You are OpenHands agent."), Message("user", "Fix the parser crash.")]
    for k in range(rounds):
        call = ToolCall(f"c{k}", "execute_bash", '{"command": "make"}')
        messages.append(Message("assistant", f"step {k}", tool_calls=(call,), metadata={"usage": {"prompt_tokens": 1}}))
        messages.append(Message("tool", f"build line {k}\n" * 300, tool_call_id=f"c{k}", name="execute_bash"))
    messages.append(Message("assistant", "fixed", metadata={"usage": {"prompt_tokens": 1}}))
    return Transcript(
        "oh", messages, source={"format": "openhands", "model": "gpt-4o"}, metadata={"condensations": condensations}
    )


def run_none(t: Transcript, window: int = 1_000_000) -> list[dict[str, Any]]:
    model = ModelSpec(name="gpt-4o", tokenizer="o200k_base", context_window=window, reserved_output_tokens=1000)
    return replay(t, FullHistory(), ExactEstimator("o200k_base"), model, TokenCounter(TOK)).calls


def prompt(messages: list[Message]) -> int:
    return TokenCounter(TOK).prompt(messages)


FIRST = {"at": 8, "forgotten": [2, 3, 4, 5], "summary": "Ran make twice; it failed in parser.c.", "summary_offset": 2}
SECOND = {"at": 14, "forgotten": [2, 3, 4, 5, 6, 7, 8, 9], "summary": "make fails in parser.c:88.", "summary_offset": 2}


def test_none_sends_the_history_the_agent_held() -> None:
    t = agent_run([FIRST, SECOND])
    m = t.messages
    calls = {c["message_index"]: c for c in run_none(t)}
    assert calls[6]["tokens_sent"] == prompt(m[:6])  # before any condensation: everything
    summary1, summary2 = Message("user", FIRST["summary"]), Message("user", SECOND["summary"])
    assert calls[8]["tokens_sent"] == prompt([*m[:2], summary1, *m[6:8]])
    # The second summary replaces the first; messages forgotten twice leave once.
    assert calls[14]["tokens_sent"] == prompt([*m[:2], summary2, *m[10:14]])
    assert calls[18]["tokens_sent"] == prompt([*m[:2], summary2, *m[10:18]])
    assert all(c["tokens_uncompacted"] == c["tokens_sent"] for c in calls.values())


def test_the_fidelity_measurement_counts_what_the_replay_sends() -> None:
    t = agent_run([FIRST, SECOND])
    sent = [c["tokens_sent"] for c in run_none(t)]
    assert [c.counted for c in measure([t]).calls] == sent


def test_a_run_that_fitted_its_window_by_condensing_is_not_rejected() -> None:
    condensed, whole = agent_run([FIRST, SECOND]), agent_run([])
    window = max(c["tokens_sent"] for c in run_none(condensed)) + 1000
    assert all(c["accepted"] for c in run_none(condensed, window))
    assert not all(c["accepted"] for c in run_none(whole, window))  # the raw history would not fit


def test_malformed_records_are_left_out() -> None:
    t = agent_run(
        [{"at": "x"}, {"at": 4, "forgotten": [99, -1, True, 2], "summary": 3}, "junk", {"at": 6, "forgotten": 7}]
    )
    first, second = recorded_condensations(t)
    assert first.forgotten == (2,) and first.summary is None and second.forgotten == ()


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_strategy_replays_a_condensed_run(name: str) -> None:
    """View and rewrite strategies alike take the condensed history without a crash and never send
    a message the agent had forgotten (unless they keep their own compacted copy of it)."""
    t = agent_run([FIRST, SECOND], rounds=12)
    cfg = composed(name, tuple(SMALL_WINDOW))
    model = build_model(cfg)
    forgotten = {id(t.messages[i]) for i in SECOND["forgotten"]}
    sent_forgotten: list[int] = []

    class Watch:
        def on_call(self, record: dict[str, Any], working: Any, ctx: Any) -> None:
            if record["message_index"] > SECOND["at"]:
                sent_forgotten.extend(i for i, m in enumerate(working) if id(m) in forgotten)

    result = replay(
        t,
        build_strategy(cfg),
        build_estimator(cfg),
        dataclasses.replace(model),
        TokenCounter(get_tokenizer(model.tokenizer)),
        workdir=workdir() / f"condensed-{name}",
        summariser=build_summariser(cfg, workdir() / f"condensed-{name}"),
        observers=[Watch()],
    )
    assert len(result.calls) == 13 and not sent_forgotten
    assert [e for e in result.events if e["type"] == "recorded_condensation"]
