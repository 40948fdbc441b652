"""SWE-agent observation masking: golden histories for each rule of LastNObservations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbench.layers.mask_observations import MaskObservations, line_count
from ctxbench.replay.provider import ModelSpec, request_problems
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.estimators import ExactEstimator
from ctxbench.transcripts.model import Message, ToolCall, Transcript

ESTIMATOR = ExactEstimator("cl100k_base")


def ctx() -> StrategyContext:
    return StrategyContext(model=ModelSpec(), estimator=ESTIMATOR, transcript=Transcript("t", []))


def output(i: int, lines: int = 20) -> str:
    return "\n".join(f"obs {i} line {j}: some environment output here" for j in range(lines))


def history(observations: int, lines: int = 20) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "Task: fix it.")]
    for i in range(observations):
        messages.append(Message("assistant", f"step {i}", tool_calls=(ToolCall(f"c{i}", "bash", "{}"),)))
        messages.append(Message("tool", output(i, lines), tool_call_id=f"c{i}", name="bash"))
    return messages


def tool_indices(messages: list[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "tool"]


def test_masks_all_but_last_n_with_swe_agent_text() -> None:
    messages = history(14, lines=20)
    out = MaskObservations(n=10).apply(messages, ctx())
    tools = tool_indices(out)
    for i in tools[:4]:
        assert out[i].content == "Old environment output: (20 lines omitted)"
        assert out[i].tool_call_id == messages[i].tool_call_id  # still answers its call
    for i in tools[4:]:
        assert out[i] is messages[i]
    # The agent's own messages are never touched.
    assert all(out[i] is messages[i] for i, m in enumerate(messages) if m.role != "tool")
    assert request_problems(out) == []


@pytest.mark.parametrize("n", [0, 5, 13])
def test_window_size_is_configurable(n: int) -> None:
    messages = history(14)
    out = MaskObservations(n=n).apply(messages, ctx())
    masked = [i for i in tool_indices(out) if out[i] is not messages[i]]
    assert masked == tool_indices(messages)[: 14 - n]


def test_nothing_to_mask_returns_the_same_list() -> None:
    messages = history(10)
    assert MaskObservations(n=10).apply(messages, ctx()) is messages


def test_each_call_changes_only_the_newly_aged_observation() -> None:
    layer, c = MaskObservations(n=3), ctx()
    messages = layer.apply(history(6), c)
    masked_before = {i: messages[i] for i in tool_indices(messages)[:3]}
    for m in messages:
        ESTIMATOR.message(m)  # fill the token caches, as a replay does
    grown = [*messages, *history(7)[-2:]]  # one more round: obs 6
    grown[-2] = grown[-2].replace(tool_calls=(ToolCall("c6", "bash", "{}"),))
    out = layer.apply(grown, c)
    changed = [i for i in range(len(grown)) if out[i] is not grown[i]]
    assert changed == [tool_indices(grown)[3]]  # obs 3 just aged out of the window of 3
    for i, m in masked_before.items():
        assert out[i] is m  # already masked: not masked again, so its cached count stays
        assert ESTIMATOR.counter.key in out[i].token_cache


def test_small_observation_is_not_masked_when_the_placeholder_is_not_shorter() -> None:
    messages = history(3)
    messages[3] = messages[3].replace(content="ok")
    out = MaskObservations(n=1).apply(messages, ctx())
    assert out[3] is messages[3]  # "ok" is cheaper than the placeholder
    assert out[5].content.startswith("Old environment output")
    forced = MaskObservations(n=1, only_if_shorter=False).apply(messages, ctx())
    assert forced[3].content == "Old environment output: (1 lines omitted)"


def test_first_user_and_pinned_messages_are_never_masked_text_observations_are() -> None:
    messages = [
        Message("system", "sys"),
        Message("user", "Observation: the task itself " + output(0)),
        Message("assistant", "Thought: look"),
        Message("user", "Observation: " + output(1)),
        Message("assistant", "go", tool_calls=(ToolCall("p", "bash", "{}"),)),
        Message("tool", output(2), tool_call_id="p", name="bash", pinned=True),
        Message("assistant", "Thought: again"),
        Message("user", "Observation: " + output(3)),
    ]
    out = MaskObservations(n=0).apply(messages, ctx())
    assert out[1] is messages[1] and out[5] is messages[5]
    assert out[3].content == "Old environment output: (20 lines omitted)"
    assert out[7].content == "Old environment output: (20 lines omitted)"
    text_only = MaskObservations(n=0, text_observations=False).apply(messages, ctx())
    assert text_only is messages


def test_polling_masks_in_steps() -> None:
    # SWE-agent: last_removed = (len(obs) // polling) * polling - n
    layer = MaskObservations(n=2, polling=3)
    for count, expected in [(4, 1), (5, 1), (6, 4), (8, 4), (9, 7)]:
        messages = history(count)
        out = MaskObservations(n=2, polling=3).apply(messages, ctx())
        assert sum(out[i] is not messages[i] for i in tool_indices(messages)) == expected, count
    assert layer.polling == 3


def test_event_reports_what_was_masked() -> None:
    c = ctx()
    MaskObservations(n=1).apply(history(3, lines=7), c)
    assert c.events == [
        {"call": 0, "type": "mask_observations", "masked": 2, "lines_omitted": 14, "observations": 3, "window": 1}
    ]


def test_masking_shrinks_the_estimate() -> None:
    messages = history(12)
    out = MaskObservations(n=10).apply(messages, ctx())
    assert ESTIMATOR.prompt(out) < ESTIMATOR.prompt(messages)


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="n must be"):
        MaskObservations(n=-1)
    with pytest.raises(ValueError, match="polling"):
        MaskObservations(polling=0)


@given(st.text(alphabet=st.sampled_from(["a", "é", " ", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"])))
def test_line_count_is_splitlines(text: str) -> None:
    assert line_count(text) == len(text.splitlines())


def test_older_swe_agent_observations_sent_as_user_messages_are_masked(shared_transcripts) -> None:
    """SWE-agent's LastNObservations masks its history's observations whatever role they were sent
    as; older SWE-agent runs send them as user messages, which the importer marks as the tool results
    they are (``observation_of``)."""
    from ctxbench.transcripts.importer import import_file
    from ctxbench.transcripts.model import is_tool_result

    path = next((shared_transcripts / "swe-agent-official" / "tests").rglob("pydicom__pydicom-1458.traj"))
    messages = import_file(path)[0].messages
    marked = [i for i, m in enumerate(messages) if m.role == "user" and is_tool_result(m)]
    assert len(marked) >= 5
    out = MaskObservations(n=2, text_observations=False).apply(messages, ctx())
    masked = [i for i in marked if out[i] is not messages[i]]
    assert masked and set(masked) <= set(marked[:-2])
    assert all(out[i].content.startswith("Old environment output:") for i in masked)
    assert all(is_tool_result(out[i]) for i in masked)  # still the observation it was
