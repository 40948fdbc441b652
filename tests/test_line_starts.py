"""Counting from line pieces must equal counting the whole text, for every tokenizer that opts in."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.data import BUNDLED
from ctxbench.errors import ConfigError
from ctxbench.layers.snapshots import POINTER
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.dbgpt import DbgptEstimator, count_with_head
from ctxbench.tokens.line_starts import (
    LINE_START,
    SLASH_AFTER_WORD,
    SPACE_AFTER_WORD,
    PieceCounter,
    last_cut,
    last_line_start,
    last_word_start,
    line_pieces,
    starts_pre_token,
)
from ctxbench.tokens.tokenizers import available_tokenizers, get_tokenizer
from ctxbench.transcripts.canonical import read_transcripts
from ctxbench.transcripts.model import Message, ToolCall, Transcript


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


@pytest.mark.parametrize("name", SPLITTING)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(texts, min_size=1, max_size=8), tail=texts)
def test_lines_up_to_a_break_that_starts_no_line_count_exactly(name: str, lines: list[str], tail: str) -> None:
    """Lines counted from their remembered counts up to the first line break that is not a line
    start (DB-GPT's footer, after its blank line), the rest as pieces: the whole text's count,
    each time the block grows by a line."""
    count = get_tokenizer(name).count
    pieces = PieceCounter(count)
    for n in range(1, len(lines) + 1):
        for footer in ("\n\nPlease Solve this task:\n", "\n/x\n", "\n", ""):
            block = "\n".join(["## Task Progress", *lines[:n]]) + footer + tail
            assert pieces(block) == count(block), block


@pytest.mark.parametrize("name", SPLITTING)
def test_a_progress_block_with_its_changing_notice_counts_exactly(name: str) -> None:
    """A new line is counted as its first word and its remembered rest: the notice whose number
    changes every step, words before odd spaces, and lines without a space must keep their counts."""
    count = get_tokenizer(name).count
    pieces = PieceCounter(count)
    steps = [f"✅ {n}. {a} (step_{n:03d}_{a}.json)" for n, a in enumerate(["bash", "a  b", "x\u00a0y", "q"] * 20)]
    for n in range(len(steps)):
        notice = [
            f"({n} earlier steps, snapshots in op_snapshots/)",
            f"  {n} indented",
            f"\t  {n} tab",
            f"{n}",
            f"(x{n}  y)",
        ]
        block = "\n".join(["## Task progress", *notice, *steps[max(0, n - 50) : n + 1], "footer end"])
        assert pieces(block) == count(block), block


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


# Pointers, paths and words: the cut points of every kind, between the characters that make them fail.
path_texts = st.lists(
    st.sampled_from([*TRICKY, " ", " ", "/", "/", "x", "1", "_", ".", "[", "]", "-", ":", "\n"]), max_size=40
).map("".join)


@pytest.mark.parametrize("name", SPLITTING)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=path_texts)
def test_a_slash_after_a_letter_or_digit_starts_a_pre_token(name: str, text: str) -> None:
    count = get_tokenizer(name).count
    for match in SLASH_AFTER_WORD.finditer(text):
        cut = match.start()
        assert count(text) == count(text[:cut]) + count(text[cut:]), (text[:cut], text[cut:])


def test_the_slash_must_follow_a_letter_or_digit() -> None:
    """o200k's punctuation pre-token runs on into "/": after punctuation a "/" is no cut point."""
    count = get_tokenizer("o200k_base").count
    text = "x;//x"
    assert count(text) != count("x;") + count("//x")
    assert SLASH_AFTER_WORD.search(text) is None


@settings(max_examples=500, deadline=None)
@given(text=path_texts, low=st.integers(0, 45))
def test_the_last_cut_is_the_last_match_of_any_kind(text: str, low: int) -> None:
    words = [m.start() for p in (SPACE_AFTER_WORD, SLASH_AFTER_WORD) for m in p.finditer(text)]
    assert last_word_start(text, low) == max((w for w in words if w >= low), default=-1)
    within = max(1, len(text) - low)  # the window holds the space, the slash or the line's "\n"
    lines = [m.end() for m in LINE_START.finditer(text) if m.start() >= len(text) - within]
    expected = [c for c in [*words, *lines] if c > 0 and c >= len(text) - within]
    assert last_cut(text, within) == max(expected, default=None)


@settings(max_examples=300, deadline=None)
@given(text=path_texts, suffix=path_texts)
def test_a_suffix_is_counted_apart_only_where_a_pre_token_starts(text: str, suffix: str) -> None:
    joined = text + suffix
    cuts = {m.start() for p in (SPACE_AFTER_WORD, SLASH_AFTER_WORD) for m in p.finditer(joined)}
    assert starts_pre_token(text, suffix) == (not text or not suffix or len(text) in cuts)


@pytest.mark.parametrize("name", SPLITTING)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(st.tuples(path_texts, path_texts), min_size=1, max_size=5))
def test_pointers_and_cut_notices_appended_through_one_counter_count_exactly(
    name: str, batch: list[tuple[str, str]]
) -> None:
    """One counter (remembered lines, heads and pieces) over many appends, as in a replay: every
    grown text must count as a fresh count of it, pointers and Layer 1's notices included."""
    count = get_tokenizer(name).count
    pieces = PieceCounter(count)
    pointer = POINTER.format(path="/root/.dbgpt/workspace/op_snapshots/conv-1/step_007_read_file.json")
    for text, suffix in [*batch, *batch]:
        for tail in (suffix, f"{suffix}{pointer}", f"... [truncated, full detail at: /a1/b{suffix}]"):
            assert pieces.appended(text, count(text), tail) == count(text + tail), (text, tail)
        assert pieces(text + suffix) == count(text + suffix)


class _CheckedDbgptEstimator(DbgptEstimator):
    """DB-GPT's estimator that also counts every message's text afresh and keeps any mismatch."""

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.mismatches: list[tuple[str, int, int]] = []
        self.seen: set[str] = set()

    def message(self, message: Message) -> int:
        from ctxbench.tokens.dbgpt import message_text

        fast = super().message(message)
        assert self.tokenizer is not None
        fresh = self.tokenizer.count(message_text(message))
        if fast != fresh:
            self.mismatches.append((message_text(message)[-200:], fast, fresh))
        if message.appended_to is not None:
            self.seen.add("cut" if "layer1" in message.metadata.get("compacted_by", ()) else "grown")
        if message.tool_calls:
            self.seen.add("calls")
        return fast


class _CheckedCounter(TokenCounter):
    """The provider's counter, checked against a fresh count of a copy that was not grown."""

    mismatches: list[tuple[str, int, int]]

    def message(self, message: Message) -> int:
        fast = super().message(message)
        fresh = self.tokenizer.count_message(message.replace())
        if fast != fresh:
            self.mismatches.append((message.content[-200:], fast, fresh))
        return fast


@pytest.mark.parametrize("model", ["gpt-4o", "llama-3.1-70b"])
def test_dbgpt_replays_of_bundled_data_count_every_prompt_as_a_fresh_count(tmp_path, model: str) -> None:
    """The fast paths (pointers, progress blocks, Layer 1's cut notices, tool calls) against a full
    count of each text, in real DB-GPT replays of bundled transcripts in which Layer 1 cuts."""
    from hydra import compose, initialize_config_dir

    from ctxbench.build import build_model, build_strategy
    from ctxbench.replay.engine import replay
    from tests.conftest import ROOT

    with initialize_config_dir(config_dir=str(ROOT / "ctxbench" / "configs"), version_base="1.3"):
        cfg = compose("config", overrides=["strategy=dbgpt", f"model={model}", "model.context_window=16000"])
    spec = build_model(cfg)
    estimator = _CheckedDbgptEstimator(model)
    counter = _CheckedCounter(get_tokenizer(spec.tokenizer))
    counter.mismatches = []
    cut = 0
    for name in ("coding_090k.jsonl", "sql_060k.jsonl", "research_130k.jsonl"):
        transcript = next(iter(read_transcripts(BUNDLED / name)))
        result = replay(transcript, build_strategy(cfg), estimator, spec, counter, workdir=tmp_path / name)
        cut += result.summary["layers"].get("layer1", 0)
    assert estimator.mismatches == [] and counter.mismatches == []
    assert cut > 0 and estimator.seen == {"cut", "grown", "calls"}


@pytest.mark.parametrize("name", SPLITTING)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=path_texts, within=st.integers(1, 45))
def test_a_text_counted_with_its_head_remembered_counts_exactly(name: str, text: str, within: int) -> None:
    """A tool result's count keeps its start's count; the start cut off later (Layer 1) reuses it."""
    tokenizer = get_tokenizer(name)
    assert count_with_head(tokenizer, text, within) == tokenizer.count(text)
    kept = f"{text[:within]}..."
    assert count_with_head(tokenizer, kept, within) == tokenizer.count(kept)


def _tokenized(tokenizer, work):
    """What ``work()`` made ``tokenizer`` tokenize (its piece counter and its plain count)."""
    pieces = tokenizer.pieces()
    calls: list[str] = []
    inner, count = pieces._count, tokenizer._count
    pieces._count = lambda text: calls.append(text) or inner(text)
    tokenizer._count = lambda text: calls.append(text) or count(text)
    try:
        work()
    finally:
        pieces._count, tokenizer._count = inner, count
    return calls


def test_a_dbgpt_estimator_leaves_the_shared_tokenizer_as_it_was() -> None:
    """DB-GPT's head count is its estimator's: building one does not change how the tokenizer every
    strategy of the process shares counts a tool result (nothing in tokens/base.py knows the number)."""
    tokenizer = get_tokenizer("o200k_base")
    DbgptEstimator("gpt-4o", observation_head_chars=200)
    # Shorter than the persistent count cache's texts (count_cache.MIN_CHARS): tokenized here.
    result = Message(role="tool", content="first line of output\n" + "unshared " * 50, tool_call_id="c1")
    assert _tokenized(tokenizer, lambda: tokenizer.count_content(result)) == [result.content]


def test_an_observation_cut_to_its_start_is_counted_from_the_remembered_head() -> None:
    """DB-GPT's estimator counts the transcript's observations as their start (as many characters
    as its Layer 1 keeps: strategy.params.truncated_observation_max_chars) and the rest, before the
    provider counts them; the cut Layer 1 makes later is counted from that start."""
    tokenizer = get_tokenizer("o200k_base")
    estimator = DbgptEstimator("gpt-4o", observation_head_chars=200)
    result = Message(role="tool", content="first line of output\n" + "word " * 60, tool_call_id="c1")
    observation = Message(role="user", content="Observation: rows\n" + "cell " * 60)
    call = Message(role="assistant", content="", tool_calls=(ToolCall("c1", "bash", "{}"),))
    task = Message(role="user", content="the task")
    transcript = Transcript("t", [task, call, result, observation, Message(role="assistant", content="done")])
    estimator.start(transcript)
    for message in (result, observation):
        cut = message.replace(content=message.content[:200] + "...")
        tokenized = _tokenized(tokenizer, lambda cut=cut: estimator.message(cut))
        assert len(tokenized) == 1 and tokenized[0].endswith("...") and len(tokenized[0]) <= 8, tokenized
        assert estimator.message(cut) == tokenizer.count(cut.content)
        assert tokenizer.count_content(message) == tokenizer.count(message.content)


@pytest.mark.parametrize("name", SPLITTING)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from([*TRICKY, "\ud800", "\udfff", "x"]), max_size=30).map("".join))
def test_the_quick_piece_count_is_the_count(name: str, text: str) -> None:
    """The pieces are counted without the tokenizer's wrappers; lone surrogates still count as they do."""
    tokenizer = get_tokenizer(name)
    assert tokenizer.piece_count()(text) == tokenizer.count(text)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_a_first_line_that_starts_no_line_is_not_remembered_as_one(name: str) -> None:
    """Remembered lines skip the check that each line starts a line; a text's first line is not
    checked (it follows no line break), so it must not be taken later for a line that does."""
    count = get_tokenizer(name).count
    pieces = PieceCounter(count)
    for text in ["/x\nab", "ab\n/x\ncd", "ab\n/x", "  \nab", "ab\n  \ncd", "x;\n//\nab", "ab\nx;\n//"]:
        assert pieces(text) == count(text), text
