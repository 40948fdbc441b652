"""Strategy 2: old whitelisted tool results compacted oldest first until the input fits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.layers.compact_old_tool_results import (
    COMPACTION_PLACEHOLDER,
    DEFAULT_KEEP,
    DEFAULT_WHITELIST,
    CompactOldToolResults,
    estimate_chars,
    tool_matches,
)
from ctxbench.transcripts.model import Message
from tests.five_layer_helpers import assert_valid, call, make_ctx

P = "[compacted: tool output removed to free context]"
WINDOW = 1000  # total budget max(1024, 1000 x 4 x 0.75) = 3000 chars


def test_placeholder_and_budget() -> None:
    assert COMPACTION_PLACEHOLDER == P
    assert CompactOldToolResults().budget(make_ctx(16_000)) == 48_000
    assert CompactOldToolResults().budget(make_ctx(WINDOW)) == 3000
    assert CompactOldToolResults().budget(make_ctx(100)) == 1024
    assert CompactOldToolResults(context_input_headroom_ratio=0.8).budget(make_ctx(16_000)) == 51_200


def test_tool_results_weigh_double() -> None:
    assert estimate_chars(Message("tool", "x" * 600, tool_call_id="c")) == 1200
    assert estimate_chars(Message("user", "x" * 600)) == 600


@pytest.mark.parametrize(
    "tool",
    [
        "read_file",
        "Read File",
        "Read",
        "ReadFile",
        "bash",
        "Bash",
        "execute_bash",
        "grep",
        "Grep",
        "glob",
        "search_files",
        "Search Files",
        "web_fetch",
        "WebFetch",
        "edit_file",
        "Edit",
    ],
)
def test_whitelisted_names_match(tool: str) -> None:
    assert CompactOldToolResults(eligibility="by_name").eligible(tool)
    assert CompactOldToolResults().eligible(tool)  # by what they do: the same


@pytest.mark.parametrize(
    "tool", ["write_file", "Write", "create_file", "Create", "web_search", "sql_query", "str_replace_editor", "", "x"]
)
def test_other_names_do_not(tool: str) -> None:
    """The literal reading of the seed's list (eligibility=by_name)."""
    assert not CompactOldToolResults(eligibility="by_name").eligible(tool)


def test_keep_list_wins_over_whitelist() -> None:
    layer = CompactOldToolResults(whitelist=[*DEFAULT_WHITELIST, "Write File"], keep_tools=DEFAULT_KEEP)
    assert tool_matches("write_file", "Write File") and not layer.eligible("write_file")


def _history(tools: list[str], size: int = 600, tail: Message | None = None) -> list[Message]:
    messages = [Message("system", "s"), Message("user", "u")]
    for i, tool in enumerate(tools):
        messages += call(f"c{i}", tool, f"{i}" * size)
    messages.append(tail or Message("assistant", "done"))
    return messages


def _contents(messages: list[Message]) -> list[str]:
    return [m.content if m.content == P else m.content[:1] for m in messages if m.role == "tool"]


def test_oldest_first_and_stop_as_soon_as_under_budget() -> None:
    # 4 results x 1200 weighted chars: total 4830 > 3000; each compaction frees 1200 - 96 = 1104,
    # so two are needed and the two newest stay whole.
    messages = _history(["bash"] * 4)
    ctx = make_ctx(WINDOW)
    out = CompactOldToolResults().apply(messages, ctx)
    assert _contents(out) == [P, P, "2", "3"]
    assert ctx.events[-1]["results"] == 2 and ctx.events[-1]["under_budget"]
    assert out[3].metadata["compacted_by"] == ["compact_old_tool_results"]
    assert_valid(out)


def test_write_create_and_unlisted_tools_kept() -> None:
    messages = _history(["write_file", "create_file", "sql_query", "read_file", "grep"])
    out = CompactOldToolResults(eligibility="by_name").apply(messages, make_ctx(WINDOW))
    assert _contents(out) == ["0", "1", "2", P, P]


def test_under_budget_returns_the_same_list() -> None:
    messages = _history(["bash"] * 2)
    assert CompactOldToolResults().apply(messages, make_ctx(WINDOW)) is messages


def test_results_the_model_has_not_seen_are_kept() -> None:
    messages = _history(["bash"] * 4)[:-1]  # ends with the newest tool result: the current message
    out = CompactOldToolResults().apply(messages, make_ctx(WINDOW))
    assert _contents(out)[-1] == "3"
    assert _contents(out)[:2] == [P, P]


V2 = {"context_input_headroom_ratio": 0.8, "protect_recent_results": 3, "min_compaction_savings_ratio": 0.2}


def test_later_variant_protects_the_three_most_recent_results() -> None:
    # budget 3200; 5 results: the 3 newest are protected, the 2 eligible save 2208 >= 640.
    out = CompactOldToolResults(**V2).apply(_history(["bash"] * 5), make_ctx(WINDOW))
    assert _contents(out) == [P, P, "2", "3", "4"]


def test_later_variant_skips_a_pass_that_would_free_too_little() -> None:
    # 4 results of 300 chars (weighted 600); only the oldest is eligible and saves 504 < 20% of 3200.
    small = _history(["bash"] * 4, size=300) + [Message("user", "x" * 2000)]
    ctx = make_ctx(WINDOW)
    assert CompactOldToolResults(**V2).apply(small, ctx) is small
    assert ctx.events[-1]["skipped"] == "below_min_savings"
    assert _contents(CompactOldToolResults().apply(small, make_ctx(WINDOW)))[0] == P  # v1 would compact


def test_later_variant_frees_at_least_a_fifth_of_the_budget() -> None:
    # 3 results of 298 chars save 500 each; the input is 50 chars over 3200. v1 stops after one
    # result; the variant must free 640, so it compacts two (the newest is protected).
    messages = _history(["bash"] * 3, size=298) + [Message("user", "y" * 1438)]
    assert sum(estimate_chars(m) for m in messages) == 3250
    v2 = CompactOldToolResults(**{**V2, "protect_recent_results": 1})
    assert _contents(v2.apply(messages, make_ctx(WINDOW))) == [P, P, "2"]
    v1 = CompactOldToolResults(context_input_headroom_ratio=0.8)
    assert _contents(v1.apply(messages, make_ctx(WINDOW))) == [P, "1", "2"]


# --- eligibility by what a real agent's call does (issue 26) ------------------------------------------


def _calls(calls: list[tuple[str, dict[str, str]]], size: int = 600) -> list[Message]:
    """A history of real tool calls (name, JSON arguments), each with a result of ``size`` chars."""
    import json

    from ctxbench.transcripts.model import ToolCall

    messages = [Message("system", "s"), Message("user", "u")]
    for i, (name, arguments) in enumerate(calls):
        messages.append(Message("assistant", "", tool_calls=(ToolCall(f"c{i}", name, json.dumps(arguments)),)))
        messages.append(Message("tool", f"{i}" * size, tool_call_id=f"c{i}", name=name))
    messages.append(Message("assistant", "done"))
    return messages


@pytest.mark.parametrize(
    ("name", "arguments", "category"),
    [
        ("str_replace_editor", {"command": "view", "path": "/r/a.py"}, "Read File"),  # OpenHands, SWE-agent
        ("str_replace_editor", {"command": "str_replace", "path": "/r/a.py"}, "Edit"),
        ("str_replace_editor", {"command": "insert", "path": "/r/a.py"}, "Edit"),
        ("str_replace_editor", {"command": "create", "path": "/r/b.py"}, "Write"),
        ("execute_bash", {"command": "python reproduce.py"}, "Bash"),  # OpenHands
        ("bash", {"command": "cd /testbed && grep -rn parse src/"}, "Grep"),  # mini-swe-agent's text actions
        ("bash", {"command": "nl -ba src/a.py | sed -n '10,40p'"}, "Read File"),
        ("bash", {"command": "sed -i 's/a/b/' src/a.py"}, "Edit"),
        ("bash", {"command": "cat <<'EOF' > test_x.py\nimport x\nEOF"}, "Write"),
        ("bash", {"command": "find . -name '*.py'"}, "Glob"),
        ("open", {"path": "a.py"}, "Read File"),  # SWE-agent
        ("find_file", {"file_name": "a.py"}, "Glob"),
        ("search_dir", {"search_term": "x"}, "Grep"),
        ("create", {"filename": "b.py"}, "Write"),
        ("Read", {"file_path": "/a.py"}, "Read File"),  # Claude Code
        ("WebFetch", {"url": "https://x"}, "Web Fetch"),
        ("MultiEdit", {"file_path": "/a.py"}, "Edit"),
        ("Write", {"file_path": "/a.py"}, "Write"),
        ("get_reservation_details", {"reservation_id": "X"}, "Web Fetch"),  # tau-bench
        ("search_direct_flight", {"origin": "JFK"}, "Web Fetch"),
        ("book_reservation", {"user_id": "u"}, "Write"),
        ("cancel_reservation", {"reservation_id": "X"}, "Write"),
        ("think", {"thought": "..."}, "Other"),
    ],
)
def test_a_real_call_is_put_in_the_seeds_category_by_what_it_does(
    name: str, arguments: dict[str, str], category: str
) -> None:
    import json

    from ctxbench.layers.tool_actions import action_category

    assert action_category(name, json.dumps(arguments)) == category


# Words, shell quoting, the comment sign, and whitespace that shlex and str.split read differently.
_SHELL_CHARS = [*"ab-=/.", " ", "\t", "\n", "\r", "'", '"', "\\", "#", "\x0b", "\x1c", "\xa0"]
_SHELL_TEXT = st.text(alphabet=st.sampled_from(_SHELL_CHARS))


@settings(max_examples=500)
@given(_SHELL_TEXT)
def test_a_command_segment_is_split_into_the_words_shlex_reads(segment: str) -> None:
    import shlex

    from ctxbench.layers.tool_actions import _split

    try:
        expected = shlex.split(segment, comments=True)
    except ValueError:  # an unclosed quote
        expected = segment.split()
    assert _split(segment) == expected


def test_by_action_compacts_a_file_view_and_keeps_a_file_creation() -> None:
    """The agents' own file tool: a `str_replace_editor` view is Read File (compacted), a create is Write
    (kept); the literal reading left both alone (no listed name matches `str_replace_editor`)."""
    calls = [
        ("str_replace_editor", {"command": "create", "path": "b.py"}),
        ("str_replace_editor", {"command": "view", "path": "a.py"}),
        ("get_user_details", {"user_id": "u"}),
        ("book_reservation", {"user_id": "u"}),
        ("execute_bash", {"command": "ls"}),
    ]
    out = CompactOldToolResults().apply(_calls(calls), make_ctx(WINDOW))
    assert _contents(out) == ["0", P, P, "3", P]
    literal = CompactOldToolResults(eligibility="by_name").apply(_calls(calls), make_ctx(WINDOW))
    assert _contents(literal) == ["0", "1", "2", "3", P]


def test_unknown_tools_follow_compact_unknown_and_all_compacts_every_result() -> None:
    calls = [("frobnicate", {}), ("book_reservation", {}), ("frobnicate", {}), ("frobnicate", {})]
    assert _contents(CompactOldToolResults().apply(_calls(calls), make_ctx(WINDOW)))[:3] == [P, "1", P]
    kept = CompactOldToolResults(compact_unknown=False).apply(_calls(calls), make_ctx(WINDOW))
    assert kept is not None and _contents(kept)[:3] == ["0", "1", "2"]
    every = CompactOldToolResults(eligibility="all").apply(_calls(calls), make_ctx(WINDOW))
    assert _contents(every)[:2] == [P, P]
    with pytest.raises(ValueError, match="eligibility"):
        CompactOldToolResults(eligibility="names")


def test_the_system_prompt_is_outside_the_budget_as_openclaw_measures_it() -> None:
    """OpenClaw's guard measures the `messages` it is given; the system prompt is not one of them.
    A 2,500-char system prompt with 2,400 chars of other input on a 3,000-char budget: nothing to compact;
    counted in (system_in_budget=true, the default) the old result goes."""
    messages = [Message("system", "s" * 2_500), *_history(["bash"] * 2, size=600)[1:]]
    assert CompactOldToolResults(system_in_budget=False).apply(messages, make_ctx(WINDOW)) is messages
    counted = CompactOldToolResults().apply(messages, make_ctx(WINDOW))
    assert _contents(counted)[0] == P


def _older_swe_agent_run(tmp_path, outputs: list[tuple[str, str]]) -> list[Message]:
    """An older SWE-agent run (text actions, their output in the next user message) through the importer."""
    import json

    from ctxbench.transcripts.importer import import_file
    from tests.test_importers import older_swe_agent_traj

    doc = older_swe_agent_traj()
    doc["history"] = doc["history"][:3]
    for action, output in outputs:
        doc["history"].append({"role": "assistant", "content": f"```\n{action}\n```", "thought": "", "action": action})
        doc["history"].append({"role": "user", "content": output})
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc))
    return import_file(path)[0].messages


def test_older_swe_agent_observations_are_compacted_as_the_tool_results_they_are(tmp_path) -> None:
    """SWE-agent before function calling sends a command's output as a user message; the importer marks
    it with its action, and strategy 2 measures and compacts it as a tool result by what the action did:
    `open` is Read File, `create` Write (kept), the newest output (not yet seen) is never compacted."""
    outputs = [
        ("open src/a.py", "a" * 800),
        ("create notes.py", "n" * 800),
        ("search_dir parse", "s" * 800),
        ("python reproduce.py", "p" * 800),
    ]
    messages = _older_swe_agent_run(tmp_path, outputs)
    out = CompactOldToolResults().apply(messages, make_ctx(WINDOW))
    observations = [m.content for m in out[4::2]]
    assert observations == [P, "n" * 800, P, "p" * 800]
    assert [m.role for m in out] == [m.role for m in messages]  # still user messages: what was sent
    assert CompactOldToolResults(eligibility="all").apply(messages, make_ctx(WINDOW))[6].content == P
    by_name = CompactOldToolResults(eligibility="by_name").apply(messages, make_ctx(WINDOW))
    assert by_name[4].content == "a" * 800  # literally, `open` is no listed name
    assert estimate_chars(messages[4]) == 1_600  # a tool result's weight (4/2 chars per token)


def test_an_oversized_older_swe_agent_observation_is_cut_by_strategy_1(tmp_path) -> None:
    from ctxbench.layers.truncate_tool_result import TRUNCATION_NOTICE, TruncateToolResult

    messages = _older_swe_agent_run(tmp_path, [("strings flash.bin", "x" * 40_000)])
    out = TruncateToolResult().apply(messages, make_ctx(12_000))
    assert out[-1].role == "user" and out[-1].content.endswith(TRUNCATION_NOTICE) and len(out[-1].content) <= 12_000
