"""Running totals and incremental layers must give exactly what a walk over the whole list gives."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.layers.compact_old_tool_results import CompactOldToolResults
from ctxbench.layers.mask_observations import MaskObservations
from ctxbench.layers.truncate_tool_result import TruncateToolResult
from ctxbench.replay.provider import ModelSpec, RequestProblemCount, request_problems
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.estimators import EmaEstimator, ExactEstimator, FixedRatioEstimator, message_chars
from ctxbench.tokens.reasoning import LoopReasoning, tool_loop_reasoning
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts import running
from ctxbench.transcripts.model import Message, ToolCall, Transcript
from ctxbench.transcripts.rounds import DbgptRoundsCache, dbgpt_rounds
from ctxbench.transcripts.running import DerivedList, RunningSum, RunningSums, common_prefix, noted_changes
from tests.strategy_histories import histories

ROLES = ("system", "user", "assistant", "tool")


def random_message(rng: random.Random, n: int) -> Message:
    role = rng.choice(ROLES)
    text = rng.choice(["ok", "Observation: ls -la\nfile_a\nfile_b", "x" * rng.randint(0, 3000), f"step {n}\n" * 5])
    if role == "assistant" and rng.random() < 0.6:
        ids = [f"c{rng.randint(0, 5)}" for _ in range(rng.randint(1, 2))]
        calls = tuple(ToolCall(id=cid, name="bash", arguments="{}") for cid in ids)
        return Message(role, text, tool_calls=calls)
    if role == "tool":
        return Message(role, text, tool_call_id=f"c{rng.randint(0, 5)}", name=rng.choice(["bash", "read_file"]))
    return Message(role, text)


def edit(rng: random.Random, messages: list[Message], n: int) -> list[Message]:
    """What happens to a working context between two looks: it grows, a layer replaces or drops messages."""
    out = list(messages)
    action = rng.choice(
        ["append", "append", "append", "replace", "replace_any", "derived", "drop", "same", "mutate_in_place"]
    )
    if action == "append" or not out:
        out.extend(random_message(rng, n + k) for k in range(rng.randint(1, 3)))
    elif action == "replace":
        i = rng.randrange(len(out))
        out[i] = out[i].replace(content=out[i].content[:10] + " [compacted]")
    elif action == "replace_any":  # possibly another role, calls or result: the request check must notice
        out[rng.randrange(len(out))] = random_message(rng, n)
    elif action == "derived":  # a layer's copy, with a note of the positions it replaced
        at = sorted(rng.sample(range(len(out)), min(len(out), rng.randint(1, 3))))
        for i in at:
            masked = out[i].replace(content=f"(masked at {n})")  # an assistant's keeps its reasoning
            out[i] = masked if rng.random() < 0.5 else random_message(rng, n)
        return DerivedList(out, messages, at)
    elif action == "drop":
        i = rng.randrange(len(out))
        del out[i : i + rng.randint(1, 4)]
    elif action == "mutate_in_place":  # the engine appends to the very list it passed before
        messages.append(random_message(rng, n))
        return messages
    return out


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 80))
def test_running_sums_and_problem_counts_match_a_full_walk(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    chars, problems = RunningSum(message_chars), RequestProblemCount()
    ratio = FixedRatioEstimator(3.0)
    messages: list[Message] = []
    for n in range(steps):
        messages = edit(rng, messages, n)
        assert chars(messages) == sum(map(message_chars, messages))
        assert problems(messages) == len(request_problems(messages))
        assert ratio.prompt(messages) == sum(ratio.message(m) for m in messages)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 80))
def test_the_provider_follows_the_tool_loops_reasoning_as_a_full_walk_back(seed: int, steps: int) -> None:
    """The reasoning a prompt resends (its last user message's tool loop), kept from call to call,
    is the walk back from the end, while the context grows, is compacted, drops rounds and gets new
    questions."""
    rng = random.Random(seed)
    tokenizer = get_tokenizer("o200k_base")
    follower = LoopReasoning(tokenizer)
    messages: list[Message] = []
    for n in range(steps):
        messages = edit(rng, messages, n)
        if rng.random() < 0.5:  # an assistant turn with its reasoning, appended to a copy or in place
            thought = Message("assistant", "", metadata={"reasoning": f"think {n} " * rng.randint(1, 4)})
            if rng.random() < 0.5:
                messages = [*messages, thought]
            else:
                messages.append(thought)  # the engine appends to the very list it passed before
        assert follower(messages) == tool_loop_reasoning(messages, tokenizer), n


def test_common_prefix_compares_identity_not_equality() -> None:
    a, b = Message("user", "same"), Message("user", "same")
    assert a == b and a is not b
    assert common_prefix([a, a], [a, b]) == 1
    assert common_prefix([a], [a, b]) == 1
    assert common_prefix([], [a]) == 0


def test_exact_and_ema_prompts_follow_a_changing_context() -> None:
    rng = random.Random(5)
    exact, ema = ExactEstimator("o200k_base"), EmaEstimator()
    messages: list[Message] = []
    for n in range(60):
        messages = edit(rng, messages, n)
        assert exact.prompt(messages) == exact.counter.tokenizer.per_request + sum(map(exact.message, messages))
        assert ema.prompt(messages) == int(sum(map(message_chars, messages)) / ema.cpt)
        if n % 7 == 0:
            ema.observe(messages, max(1, exact.prompt(messages)))


def ctx() -> StrategyContext:
    return StrategyContext(
        model=ModelSpec(context_window=6000), estimator=ExactEstimator("o200k_base"), transcript=Transcript("t", [])
    )


LAYERS = {
    "mask": lambda: MaskObservations(n=3),
    "mask_polling": lambda: MaskObservations(n=2, polling=3),
    "truncate": lambda: TruncateToolResult(context_window=2000),
    "compact": lambda: CompactOldToolResults(context_window=3000, whitelist=("Bash", "Read File", "Search")),
}


@settings(max_examples=40, deadline=None)
@given(history=histories(), text_observations=st.booleans())
def test_layers_that_remember_the_last_call_decide_as_a_fresh_layer_would(history, text_observations: bool) -> None:
    """Replay-style: the working list grows, each layer's output is the next input. A layer that
    reuses what it saw last call must return the same messages as a new instance of it."""
    messages = history.messages
    if text_observations:  # DB-GPT style: observations as user messages
        messages = [
            Message("user", "Observation: " + m.content) if m.role == "tool" else m.replace(tool_calls=())
            for m in messages
        ]
    for name, make in LAYERS.items():
        layer, context = make(), ctx()
        working: list[Message] = []
        for n, message in enumerate(messages):
            working.append(message)
            if n % 9 == 8:  # another layer drops old messages: the remembered prefix no longer holds
                del working[1:4]
            fresh = make().apply(list(working), context)
            kept = layer.apply(working, context)
            assert [(m.role, m.content) for m in kept] == [(m.role, m.content) for m in fresh], name
            working = list(kept)


def test_running_sums_follow_a_growing_history_and_its_views_without_rewalking():
    """A view strategy sizes the whole history, a cut copy of it and a short view every call: each
    list keeps its own follower, so only what changed is valued (not the history once per call)."""
    from ctxbench.transcripts.running import RunningSums

    walked = []

    def value(message: Message) -> int:
        walked.append(message)
        return len(message.content)

    sums = RunningSums(value)
    history: list[Message] = []
    cut: dict[int, Message] = {}
    for call in range(200):
        system = Message("system", f"progress {call}")
        history = [system, *history[1:], Message("user", f"u{call} " * 10), Message("assistant", f"a{call}")]
        copy = [
            cut.setdefault(i, m.replace(content="cut")) if 0 < i < len(history) - 10 else m
            for i, m in enumerate(history)
        ]
        view = [system, *history[-6:]]
        for messages in (history, copy, view, view):
            assert sums(messages) == sum(len(m.content) for m in messages)
    assert len(walked) < 20 * 200  # a few per list per call; one follower would re-walk ~400 per call


def test_counter_sizes_match_per_message_counts_and_count_each_message_once() -> None:
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer

    rng = random.Random(7)
    messages = [random_message(rng, n) for n in range(40)]
    counter, reference = TokenCounter(get_tokenizer("o200k_base")), TokenCounter(get_tokenizer("o200k_base"))
    counter.message(messages[3])  # some counts cached, some not
    counter.message(messages[20])
    expected = [reference.message(Message(m.role, m.content, tool_calls=m.tool_calls, name=m.name)) for m in messages]
    assert counter.sizes(iter(messages)) == expected
    assert counter.tokenized_chars == sum(m.char_count for m in messages)  # every message tokenized once
    assert counter.sizes(messages[5:9]) == expected[5:9] and counter.tokenized_chars == sum(
        m.char_count for m in messages
    )


def true_note(new: list[Message], base: list[Message]) -> DerivedList:
    """``new`` with the note a layer would write: every position of ``base`` that differs."""
    return DerivedList(new, base, [i for i in range(min(len(base), len(new))) if new[i] is not base[i]])


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 60))
def test_followers_of_noted_lists_match_a_full_walk_without_comparing(seed: int, steps: int) -> None:
    """A list that says how it was derived from the last one is followed from its note: the sums,
    rounds and request problems are a full walk's, and the two lists are not compared again."""
    compared: list[int] = []
    original = running.replaced_positions
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(running, "replaced_positions", lambda *a, **k: compared.append(1) or original(*a, **k))
        follow_noted_lists(random.Random(seed), steps, compared)


def follow_noted_lists(rng: random.Random, steps: int, compared: list[int]) -> None:
    chars, sums, rounds = RunningSum(message_chars), RunningSums(message_chars), DbgptRoundsCache()
    problems = RequestProblemCount()
    messages: list[Message] = []
    for n in range(steps):
        edited = edit(rng, messages, n)
        noted = edited is not messages and len(edited) >= len(messages)  # not a drop: a layer notes its swaps
        messages = true_note(edited, messages) if noted else edited
        compared.clear()
        assert chars(messages) == sum(map(message_chars, messages))
        assert sums(messages) == sum(map(message_chars, messages))
        assert rounds(messages) == dbgpt_rounds(messages)
        assert problems(messages) == len(request_problems(messages))
        if noted and n:
            assert not compared, n


def test_a_note_about_another_list_is_not_taken() -> None:
    a, b = [Message("user", "a"), Message("user", "b")], [Message("user", "a"), Message("user", "b")]
    derived = true_note([Message("user", "c"), a[1]], a)
    assert noted_changes(a, 2, derived) == [0]
    assert noted_changes(b, 2, derived) is None  # equal messages, but another list
    assert noted_changes(a, 2, [*derived]) is None  # a plain copy carries no note
    assert noted_changes(a, 1, derived) == [0] and noted_changes(a, 3, derived) is None  # seen longer than noted
    total = RunningSum(message_chars)
    total(b)
    assert total(derived) == sum(map(message_chars, derived))  # compared, not taken from the note


def test_dbgpt_layers_notes_say_exactly_what_changed(monkeypatch) -> None:
    """Every note DB-GPT's snapshot layer and Layer 1 write (the history, and Layer 1's copy of it)
    lists exactly the positions where the new list differs from the one it was derived from."""
    from ctxbench.build import build_estimator, build_model, build_strategy
    from ctxbench.replay.engine import replay
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer
    from tests.test_strategy_dbgpt import composed, react_transcript

    notes = []
    original = DerivedList.__init__

    def checked(self, items, base, changed):
        original(self, items, base, changed)
        notes.append((self, base, len(base), changed))  # checked once returned (Layer 1 fills it after)

    monkeypatch.setattr(DerivedList, "__init__", checked)
    cfg = composed("model=gpt-4-32k", "strategy.params.max_context_tokens=null")
    model = build_model(cfg)
    counter = TokenCounter(get_tokenizer(model.tokenizer))
    result = replay(react_transcript(rounds=60, tid="notes"), build_strategy(cfg), build_estimator(cfg), model, counter)
    assert result.summary["layers"].get("layer1", 0) > 10
    assert len(notes) > 60
    for out, base, base_len, changed in notes:
        assert changed == [i for i in range(min(base_len, len(out))) if out[i] is not base[i]]


def note_is_true(out: DerivedList) -> bool:
    """Each note of ``out`` gives exactly the positions where it differs from the list it names."""
    notes = [note for note in (out.note, out.prior) if note is not None]
    return bool(notes) and all(
        noted_changes(base, base_len, out)
        == [i for i in range(min(base_len, len(out))) if out[i] is not base[i]][: running.REPLACED_LIMIT + 1]
        for base, base_len, _ in notes
    )


@settings(max_examples=40, deadline=None)
@given(history=histories(), text_observations=st.booleans())
def test_masking_and_five_layer_notes_say_exactly_what_changed(history, text_observations: bool) -> None:
    """Replay-style, each layer's output feeds the next call: every list a layer returns that
    differs from its input is noted, and the note lists every replaced position (compared with
    ``replaced_positions`` on the lists themselves)."""
    messages = history.messages
    if text_observations:
        messages = [
            Message("user", "Observation: " + m.content) if m.role == "tool" else m.replace(tool_calls=())
            for m in messages
        ]
    pipelines = {
        **{name: (make,) for name, make in LAYERS.items()},
        "truncate+compact": (
            lambda: TruncateToolResult(context_window=600),
            lambda: CompactOldToolResults(context_window=1500, whitelist=("Bash", "Read File", "Search")),
        ),
    }
    for name, makers in pipelines.items():
        layers, context = [make() for make in makers], ctx()
        working: list[Message] = []
        for message in messages:
            working.append(message)
            out = working
            for layer in layers:  # the layers of one call, each given the last one's output
                given, out = out, layer.apply(out, context)
                if out is not given:
                    assert out.note is not None and out.note[2] == running.replaced_positions(given, out, len(out))
            if out is not working:
                assert type(out) is DerivedList and note_is_true(out), name
                changed = [i for i in range(len(working)) if out[i] is not working[i]]
                assert noted_changes(working, len(working), out) == changed[: running.REPLACED_LIMIT + 1], name
            working = out  # the engine appends to the very list the layers returned


def test_a_list_derived_twice_in_one_call_is_followed_from_the_prior_note() -> None:
    """Two layers of one call (truncate, then compact) each copy the list: a follower that saw
    the list before both takes the changes of both from the second copy's ``prior`` note."""
    rng = random.Random(3)
    before = [random_message(rng, n) for n in range(30)]
    first = DerivedList(before, before, [4])
    first[4] = Message("tool", "cut", tool_call_id="c1")
    second = DerivedList(first, first, [2, 9])
    second[2], second[9] = Message("user", "x"), Message("user", "y")
    assert first.note is None and second.note is not None and second.prior is not None
    assert noted_changes(before, len(before), second) == [2, 4, 9]
    assert noted_changes(first, len(first), second) == [2, 9]
    assert note_is_true(second)


def test_a_list_passed_again_is_followed_without_comparing(monkeypatch) -> None:
    """The engine appends to the list it passed (a rewrite strategy's prompt becomes its history):
    the same list object again is followed from where it was seen."""
    compared: list[int] = []
    original = running.replaced_positions
    monkeypatch.setattr(running, "replaced_positions", lambda *a, **k: compared.append(1) or original(*a, **k))
    rng = random.Random(11)
    messages = [random_message(rng, n) for n in range(20)]
    total, seen = RunningSum(message_chars), running.SeenPrefix()
    for n in range(20, 40):
        assert total(messages) == sum(map(message_chars, messages))
        assert seen.unchanged(messages) == (len(messages) - 1 if n > 20 else 0)
        seen.remember(messages)
        messages.append(random_message(rng, n))
    assert compared == [] or compared == [1]  # the first call only (nothing seen yet)


def unnamed_message(rng: random.Random, n: int) -> Message:
    """Tool results without their own name (named by their call), calls whose ids repeat."""
    if rng.random() < 0.4:
        calls = tuple(
            ToolCall(id=f"c{rng.randint(0, 6)}", name=rng.choice(["bash", "write_file", "read_file"]), arguments="{}")
            for _ in range(rng.randint(1, 2))
        )
        return Message("assistant", "", tool_calls=calls)
    if rng.random() < 0.7:
        text = rng.choice(["x" * rng.randint(0, 400), "[compacted: tool output removed to free context]"])
        return Message("tool", text, tool_call_id=f"c{rng.randint(0, 6)}", name=rng.choice(["", "", "grep"]))
    return random_message(rng, n)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 60))
def test_compaction_candidates_follow_the_context_as_a_full_walk_finds_them(seed: int, steps: int) -> None:
    """The tool results and compaction candidates kept from call to call are those a walk over the
    whole list finds, whether the list grew, was noted, renamed a result or was unrelated."""
    from ctxbench.layers.compact_old_tool_results import tool_names

    rng = random.Random(seed)
    layer = CompactOldToolResults(context_window=3000, whitelist=("Bash", "Read File", "Grep"))
    found = layer._results
    messages: list[Message] = []
    for n in range(steps):
        if rng.random() < 0.5 or not messages:
            messages.append(unnamed_message(rng, n))  # grown in place
        else:
            edited = list(messages)
            i = rng.randrange(len(edited))
            edited[i] = edited[i].replace(content=rng.choice(["", "y" * 300]))
            if rng.random() < 0.2:
                edited[rng.randrange(len(edited))] = unnamed_message(rng, n)  # may rename results
            messages = true_note(edited, messages) if rng.random() < 0.8 else edited  # noted, or compared
        found.follow(messages)
        names = tool_names(messages, found.label)
        assert found.results == list(names)
        assert found.candidates == [i for i in names if layer._is_candidate(messages[i], names[i])]


def test_seen_prefix_positions_are_what_changed_since_the_list_remembered() -> None:
    from ctxbench.transcripts.running import REPLACED_LIMIT, DerivedList, SeenPrefix

    messages = [Message("user", f"m{i}") for i in range(40)]
    seen = SeenPrefix()
    seen.remember(messages)
    grown = messages
    grown.append(Message("user", "new"))
    assert list(seen.positions(grown)) == [40]  # the same list grown: the appended message only
    derived = DerivedList(grown, grown, [3, 17])
    derived[3], derived[17] = Message("user", "x"), Message("user", "y")
    derived.append(Message("user", "next"))
    seen.remember(grown)
    assert list(seen.positions(derived)) == [3, 17, 41]  # the note's replacements and the appended one
    copy = list(derived)
    seen.remember(derived)
    copy[5] = Message("user", "z")
    assert list(seen.positions(copy)) == list(range(5, 42))  # no note: every one from the first change
    many = DerivedList(derived, derived, list(range(REPLACED_LIMIT + 2)))
    assert list(seen.positions(many)) == list(range(42))  # too many to name: from the first on
