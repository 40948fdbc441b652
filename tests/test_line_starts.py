"""Counting from line pieces must equal counting the whole text, for every tokenizer that opts in."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.data import BUNDLED
from ctxbench.errors import ConfigError
from ctxbench.layers.snapshots import POINTER
from ctxbench.tokens.dbgpt import DbgptEstimator
from ctxbench.tokens.line_starts import LINE_START, SPACE_AFTER_WORD, PieceCounter, last_line_start, line_pieces
from ctxbench.tokens.tokenizers import available_tokenizers, get_tokenizer
from ctxbench.transcripts.canonical import read_transcripts
from ctxbench.transcripts.model import Message, ToolCall


def _splits(name: str) -> bool:
    try:
        return get_tokenizer(name).splits_at_line_starts
    except ConfigError:  # an optional tokenizer package is missing: its tests skip (tests/conftest.py)
        return name in MAIN


MAIN = {"cl100k_base", "o200k_base", "llama3", "qwen2.5", "mistral-tekken"}
SPLITTING = [name for name in available_tokenizers() if _splits(name)]

# Characters around which pre-tokenizers behave differently: line breaks, runs of spaces, "/" (o200k's
# punctuation pre-token takes "\n/"), digits, apostrophes, combining marks, CJK, emoji, Unicode spaces
# and separators that Python and the tokenizers' regex engines class differently.
TRICKY = list("\n\n\n\r  \t/./'s9 aZé") + ["\u0301", "中", "✅", "\u00a0", "\u2028", "\x1c", "\u3000", "ﬁ", "'ll"]
texts = st.lists(st.sampled_from(TRICKY), max_size=40).map("".join)


def test_the_fast_path_is_taken_by_the_main_tokenizers() -> None:
    assert {name for name in MAIN if get_tokenizer(name).splits_at_line_starts} == MAIN


@pytest.mark.parametrize("name", SPLITTING)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, suffix=texts)
def test_pieces_and_appending_count_exactly(name: str, text: str, suffix: str) -> None:
    tokenizer = get_tokenizer(name)
    count = tokenizer.count
    for match in LINE_START.finditer(text):
        cut = match.end()
        assert count(text) == count(text[:cut]) + count(text[cut:]), (text[:cut], text[cut:])
    assert PieceCounter(count)(text) == count(text)
    assert PieceCounter(count).appended(text, count(text), suffix) == count(text + suffix)


@settings(max_examples=200, deadline=None)
@given(batch=st.lists(texts, min_size=2, max_size=6))
def test_one_piece_counter_reused_over_many_texts_counts_exactly(batch: list[str]) -> None:
    """Remembered lines and pieces (both memos) must give every later text its fresh count."""
    count = get_tokenizer("o200k_base").count
    pieces = PieceCounter(count)
    for text in [*batch, *batch, "\n".join(batch)]:
        assert pieces(text) == count(text), text


@settings(max_examples=500, deadline=None)
@given(text=texts)
def test_line_pieces_cut_exactly_at_the_line_starts(text: str) -> None:
    cuts = [0, *(match.end() for match in LINE_START.finditer(text)), len(text)]
    assert line_pieces(text) == [text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def test_the_slash_exclusion_is_needed() -> None:
    """o200k keeps "\\n/" in one pre-token: cutting there would miscount."""
    count = get_tokenizer("o200k_base").count
    text = "x;\n//"
    assert count(text) != count("x;\n") + count("//")
    assert LINE_START.search(text) is None


def test_pieces_join_back_and_the_last_line_start_is_found() -> None:
    text = "head\n  indented\n\nnext\n/slash\n"
    pieces = line_pieces(text)
    assert "".join(pieces) == text
    assert pieces == ["head\n", "  indented\n\n", "next\n/slash\n"]
    assert last_line_start(text) == text.index("next")
    assert last_line_start("one line") is None
    assert last_line_start("x" * 10 + "\nlast", within=3) is None


@pytest.mark.parametrize("name", ["o200k_base", "llama3", "qwen2.5"])
def test_snapshot_pointers_on_real_tool_output_count_exactly(name: str) -> None:
    """Every tool result of a bundled transcript with DB-GPT's pointer appended, counted from
    the result's own count, equals counting the grown text afresh."""
    tokenizer = get_tokenizer(name)
    transcript = next(iter(read_transcripts(BUNDLED / "coding_090k.jsonl")))
    tools = [m for m in transcript.messages if m.role == "tool"]
    assert len(tools) > 20
    for n, message in enumerate(tools):
        grown = message.with_appended(POINTER.format(path=f"op_snapshots/step_{n:03d}_run.json"))
        fresh = Message(role=grown.role, content=grown.content, name=grown.name, tool_call_id=grown.tool_call_id)
        assert tokenizer.count_message(grown) == tokenizer.count_message(fresh)


def test_a_progress_block_rebuilt_every_step_counts_exactly() -> None:
    """The task-progress block grows and slides; counted from remembered lines it must equal a fresh count."""
    tokenizer = get_tokenizer("o200k_base")
    rng = random.Random(3)
    system = Message(role="system", content="You are an agent.\n  Use tools.")
    lines = ["## Task progress", "Task: fix\n the bug"]
    for step in range(1, 80):
        lines.append(f"✅ {step}. {rng.choice(['sql_query', 'bash', '/bin/ls'])} (step_{step:03d}.json)")
        block = "\n".join([*lines[:2], *lines[2:][-50:], "You MUST NOT repeat any action."])
        grown = system.with_appended(f"\n\n{block}")
        assert tokenizer.count_content(grown) == tokenizer.count(grown.content)


def test_appended_messages_keep_dbgpt_estimates_and_plain_replace_forgets_the_base() -> None:
    base = Message(role="tool", content="line one\n   2\tline two", tool_call_id="c1", name="bash")
    grown = base.with_appended("\n[Full detail available at: x.json]", metadata={"snapshot": "x.json"})
    assert grown.appended_to is base and grown.metadata == {"snapshot": "x.json"}
    assert grown.replace(content="other").appended_to is None
    estimator = DbgptEstimator("gpt-4o")
    assert estimator.message(grown) == get_tokenizer("o200k_base").count(grown.content)
    assert estimator.prompt([base, grown]) == estimator.message(base) + estimator.message(grown)


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4"])
def test_dbgpt_counts_content_and_calls_as_one_text(model: str) -> None:
    """DB-GPT counts "content\\ncall args" as one string; counting it from the content's count must agree."""
    from ctxbench.tokens.dbgpt import message_text

    estimator = DbgptEstimator(model)
    transcript = next(iter(read_transcripts(BUNDLED / "coding_090k.jsonl")))
    with_calls = [m for m in transcript.messages if m.tool_calls][:40]
    assert with_calls
    empty = Message(role="assistant", content="", tool_calls=with_calls[0].tool_calls)
    for message in [*with_calls, empty]:
        fresh = Message(role=message.role, content=message.content, tool_calls=message.tool_calls)
        assert estimator.message(fresh) == estimator.tokenizer.count(message_text(message))


@pytest.mark.parametrize("name", SPLITTING)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from([*TRICKY, " ", " ", "{", '"', ":", "x", "1"]), max_size=40).map("".join))
def test_a_space_after_a_non_space_character_starts_a_pre_token(name: str, text: str) -> None:
    count = get_tokenizer(name).count
    for match in SPACE_AFTER_WORD.finditer(text):
        cut = match.start()
        assert count(text) == count(text[:cut]) + count(text[cut:]), (text[:cut], text[cut:])


call_parts = st.lists(st.sampled_from([*TRICKY, " ", "{", '"', ":", "x", "_", "1", "/"]), max_size=24).map("".join)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
@settings(max_examples=300, deadline=None)
@given(content=call_parts, name=call_parts, arguments=call_parts)
def test_dbgpt_counts_one_call_from_the_arguments_count_exactly(
    model: str, content: str, name: str, arguments: str
) -> None:
    """After the provider counted the message (which keeps the arguments' count), DB-GPT's count
    of "content\\nname arguments" from the pieces must equal counting that text afresh."""
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.dbgpt import message_text

    estimator = DbgptEstimator(model)
    assert estimator.tokenizer is not None
    message = Message(role="assistant", content=content, tool_calls=(ToolCall("c1", name, arguments),))
    TokenCounter(estimator.tokenizer).message(message)
    assert estimator.message(message) == estimator.tokenizer.count(message_text(message))


def test_dbgpt_counts_real_tool_calls_from_their_arguments() -> None:
    """The bundled transcripts' calls take the piecewise path and count exactly."""
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.dbgpt import _count_with_one_call, message_text

    estimator = DbgptEstimator("gpt-4o")
    tokenizer = estimator.tokenizer
    assert tokenizer is not None
    counter = TokenCounter(tokenizer)
    taken = 0
    for transcript in (t for path in sorted(BUNDLED.glob("*.jsonl")) for t in read_transcripts(path)):
        for message in transcript.messages:
            if len(message.tool_calls) != 1:
                continue
            counter.message(message)
            taken += _count_with_one_call(tokenizer, message, tokenizer.count_content(message)) is not None
            assert estimator.message(message) == tokenizer.count(message_text(message))
    assert taken > 100
