"""DB-GPT Layer 1: old observations cut to 200 chars (+30 slack), recent rounds whole, pointer kept."""

from ctxbench.layers.llm_full_compression import BREAKER_KEY
from ctxbench.layers.observation_micro import ObservationMicroCompact
from ctxbench.transcripts.rounds import dbgpt_rounds
from tests.dbgpt_histories import make_ctx, react_history, tool_history


def test_only_rounds_older_than_the_age_are_cut_to_max_chars():
    messages = react_history(10, obs_chars=1000)
    out = ObservationMicroCompact(max_observation_age_rounds=5, truncated_observation_max_chars=200).apply(
        messages, make_ctx(messages)
    )
    rounds = dbgpt_rounds(out)
    assert len(rounds) == 10
    for index, indices in enumerate(rounds):
        observation = out[indices[-1]]
        original = messages[indices[-1]]
        if index < 5:  # older than current_round (10) - 5
            assert observation.content == original.content[:200] + "... [truncated]"
            assert observation.content.startswith("Observation: ")
            assert observation.metadata["compacted_by"] == ["layer1"]
        else:
            assert observation is original
    # Thoughts/actions and the task are never touched.
    assert [m for m in out if m.role != "user" or not m.content.startswith("Observation")] == [
        m for m in messages if m.role != "user" or not m.content.startswith("Observation")
    ]


def test_age_parameter_moves_the_cutoff():
    messages = react_history(10, obs_chars=1000)
    out = ObservationMicroCompact(max_observation_age_rounds=2).apply(messages, make_ctx(messages))
    cut = [i for i, r in enumerate(dbgpt_rounds(out)) if out[r[-1]].content.endswith("[truncated]")]
    assert cut == list(range(8))


def test_thirty_char_slack():
    layer = ObservationMicroCompact(max_observation_age_rounds=1, truncated_observation_max_chars=200)
    at_limit = react_history(3, obs_chars=230)
    assert layer.apply(at_limit, make_ctx(at_limit)) is at_limit  # 230 <= 200 + 30: kept
    over = react_history(3, obs_chars=231)
    out = layer.apply(over, make_ctx(over))
    assert out is not over
    assert sum(m.content.endswith("... [truncated]") for m in out) == 2  # rounds 0 and 1 of 3


def test_pointer_to_snapshot_is_kept():
    messages = react_history(8, obs_chars=800)
    first_obs = next(i for i, m in enumerate(messages) if m.content.startswith("Observation"))
    messages[first_obs] = messages[first_obs].replace(metadata={"snapshot": "op_snapshots/step_001_sql_query.json"})
    out = ObservationMicroCompact().apply(messages, make_ctx(messages))
    assert out[first_obs].content == (
        messages[first_obs].content[:200] + "... [truncated, full detail at: op_snapshots/step_001_sql_query.json]"
    )


def test_tool_results_that_end_their_turn_are_observations_too():
    """The tool result that closes a round is DB-GPT's observation; the other results of a parallel
    batch stay whole (what DB-GPT's own Layer 1 does with that rule: tests/test_upstream_dbgpt.py)."""
    messages = tool_history(8, result_chars=600)
    out = ObservationMicroCompact().apply(messages, make_ctx(messages))
    cut = [m for m in out if m.role == "tool" and m.content.endswith("... [truncated]")]
    assert len(cut) == 3  # the last of the two results in each of the 3 rounds older than 8 - 5
    assert all(out[out.index(m) + 1].role != "tool" for m in cut)
    assert all(len(m.content) == 200 + len("... [truncated]") for m in cut)


def test_unchanged_returns_same_list_and_second_pass_is_a_no_op():
    layer = ObservationMicroCompact()
    short = react_history(10, obs_chars=100)
    assert layer.apply(short, make_ctx(short)) is short
    long = react_history(10, obs_chars=1000)
    once = layer.apply(long, make_ctx(long))
    assert layer.apply(once, make_ctx(once)) is once


def test_stops_when_circuit_breaker_open():
    messages = react_history(10, obs_chars=1000)
    ctx = make_ctx(messages)
    ctx.shared[BREAKER_KEY] = True
    assert ObservationMicroCompact().apply(messages, ctx) is messages
    assert ObservationMicroCompact(stop_when_breaker_open=False).apply(messages, ctx) is not messages
