"""Fuzzing every strategy config with hostile history shapes (issue 17.6, hypothesis).

``tests/test_strategy_properties.py`` holds the properties on well-formed histories. Here the
histories are what imports of real sessions produce: an assistant message before the task, no
system prompt or two, empty messages, calls never answered (an interrupted session), two user
messages in a row, one long message, emoji and zero-width text. For every strategy config
(discovered at test time) and every example:

* no crash: the replay ends;
* a sent prompt fits the window, or the call records an overflow: an accepted call's prompt plus
  the reserved output is within the window, a rejected one has ``overflow_errors`` >= 1;
* tool results are paired: a tool result in a request follows the assistant message that made its
  call, in that request (strategies that repair orphans: every one that prunes or forgets);
* system prompts and the task (the first user message) survive where the strategy promises it
  (``PROMISES`` of the property tests), also when the transcript opens with an assistant message.

Examples are bounded and derandomized (CI-safe, no deadline): the same examples every run. A
violation a strategy is known to have (its layers belong to another change) is listed in
``KNOWN_VIOLATIONS`` with its reason and counterexample and checked as xfail(strict=True).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ctxbench.build import build_estimator, build_model, build_strategy, build_summariser
from ctxbench.replay.engine import replay
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts.model import Message, ToolCall, Transcript
from tests.strategy_histories import build_history
from tests.test_strategy_properties import CONFIG_DIR, SMALL_WINDOW, STRATEGIES, composed, promises, workdir

FUZZ_SETTINGS = settings(
    max_examples=12,
    deadline=None,  # shared CI machines: time is not a property
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SHAPES = (
    "opens_with_assistant",
    "no_system",
    "two_systems",
    "empty_messages",
    "unanswered_call",
    "two_users",
    "long_message",
    "odd_unicode",
)
ODD = "emoji \U0001f600 zero\u200bwidth rtl \u202eevil\u202c combining e\u0301 nbsp\u00a0end"


def repairs_orphans(name: str) -> bool:
    """Strategies with a pruning or forgetting layer promise requests without orphan tool results."""
    text = (CONFIG_DIR / "strategy" / f"{name}.yaml").read_text("utf-8")
    return any(layer in text for layer in ("prune_history", "PruneHistory", "amortized_forgetting"))


def hostile(base: Transcript, shapes: Sequence[str], seed: int) -> Transcript:
    """``base`` reshaped as real imported sessions can be (the importer's guarantees still hold:
    every tool result answers a call made earlier)."""
    rng = random.Random(seed)
    messages = list(base.messages)
    task_at = next(i for i, m in enumerate(messages) if m.role == "user")
    for shape in shapes:
        if shape == "opens_with_assistant":
            messages.insert(task_at, Message("assistant", "Hello! What should I work on today?"))
        elif shape == "no_system":
            messages = [m for m in messages if m.role != "system"]
        elif shape == "two_systems" and messages and messages[0].role == "system":
            messages.insert(1, Message("system", "Tools: bash, read_file. Answer in English."))
        elif shape == "empty_messages":
            for i, m in enumerate(messages):
                if m.role in ("user", "assistant") and i > task_at + 1 and rng.random() < 0.3:
                    messages[i] = m.replace(content="")
        elif shape == "unanswered_call":
            at = max(i for i, m in enumerate(messages) if m.role == "assistant")
            last = messages[at]
            calls = (*last.tool_calls, ToolCall("interrupted_1", "bash", '{"cmd": "sleep 1000"}'))
            messages[at] = last.replace(tool_calls=calls)
        elif shape == "two_users":
            users = [i for i, m in enumerate(messages) if m.role == "user"]
            i = rng.choice(users)
            messages.insert(i + 1, Message("user", "Also: keep the public API unchanged."))
        elif shape == "long_message":
            words = " ".join(f"line{k} of a pasted log" for k in range(500))  # ~3k tokens, under the budget
            messages.insert(task_at + 1, Message("user", words))
        elif shape == "odd_unicode":
            messages = [m.replace(content=m.content + " " + ODD) if m.role == "user" else m for m in messages]
    if not any(m.role == "assistant" for m in messages):
        messages.append(Message("assistant", "Done."))
    return Transcript(id=f"{base.id}-{'+'.join(shapes) or 'plain'}", messages=messages)


def round_plans() -> st.SearchStrategy:
    plan = st.tuples(
        st.lists(st.sampled_from(("tiny", "small", "big", "huge")), max_size=3),
        st.sampled_from(("none", "none", "user", "pinned")),
        st.booleans(),
    )
    return st.lists(plan, min_size=1, max_size=8)


@st.composite
def hostile_histories(draw: st.DrawFn) -> Transcript:
    seed = draw(st.integers(0, 2**16))
    base = build_history(seed, draw(round_plans()), cjk=draw(st.booleans()))
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=4, unique=True))
    return hostile(base, shapes, seed)


class Invariants:
    """A replay observer checking every request against the invariants."""

    def __init__(self, transcript: Transcript, name: str, window: int, reserved: int) -> None:
        self.transcript, self.name = transcript, name
        self.window, self.reserved = window, reserved
        self.promise = promises(name)
        self.problems: dict[str, list[str]] = {}

    def _add(self, prop: str, text: str) -> None:
        self.problems.setdefault(prop, []).append(text)

    def on_call(self, record: dict[str, Any], working: Sequence[Message], ctx: StrategyContext) -> None:
        call = record["call"]
        if record["accepted"] and record["tokens_sent"] + self.reserved > self.window:
            self._add("fits_or_overflow", f"call {call}: accepted {record['tokens_sent']} + {self.reserved}")
        if not record["accepted"] and record["overflow_errors"] < 1:
            self._add("fits_or_overflow", f"call {call}: rejected without an overflow recorded")
        arrived = self.transcript.messages[: record["message_index"]]
        if repairs_orphans(self.name):
            made: set[str] = set()
            answered = {m.tool_call_id for m in working if m.role == "tool"}
            results_arrived = {m.tool_call_id for m in arrived if m.role == "tool"}
            for i, m in enumerate(working):
                made.update(c.id for c in m.tool_calls)
                if m.role == "tool" and m.tool_call_id not in made:
                    self._add("paired", f"call {call}: message {i} answers {m.tool_call_id!r}, not in the request")
                for c in m.tool_calls:  # a call whose result exists but was left out of the request
                    if c.id in results_arrived and c.id not in answered:
                        self._add("paired", f"call {call}: message {i} calls {c.id!r}, its result left out")
        texts = [m.content for m in working]

        def survives(original: Message) -> bool:
            return any(original.content in text for text in texts)

        for m in arrived:
            if m.role == "system" and not survives(m):
                self._add("system_kept", f"call {call}: system message {m.content[:40]!r} lost")
        task = next((m for m in arrived if m.role == "user"), None)
        if self.promise["first_user"] and task is not None and task.content and not survives(task):
            self._add("task_kept", f"call {call}: the task {task.content[:40]!r} lost")


def fuzz_problems(name: str, transcript: Transcript) -> dict[str, list[str]]:
    cfg = composed(name, tuple(SMALL_WINDOW))
    model = build_model(cfg)
    checks = Invariants(transcript, name, model.context_window, model.reserved_output_tokens)
    try:
        replay(
            transcript,
            build_strategy(cfg),
            build_estimator(cfg),
            model,
            TokenCounter(get_tokenizer(model.tokenizer)),
            workdir=workdir() / f"fuzz-{name}",
            summariser=build_summariser(cfg, workdir() / f"fuzz-{name}"),
            observers=[checks],
        )
    except Exception as exc:  # noqa: BLE001 - the first invariant: no crash, whatever the shape
        return {"no_crash": [f"{type(exc).__name__}: {exc}"]}
    return checks.problems


# (strategy, property) -> (why, the counterexample: build_history arguments and shapes). The layers are
# not edited here (the "upstream" change owns them); an XPASS means fixed: remove the entry.
KNOWN_VIOLATIONS: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}


def example_text(transcript: Transcript) -> str:
    return f"{transcript.id}: {[(m.role, len(m.content), len(m.tool_calls)) for m in transcript.messages]}"


@pytest.mark.parametrize("name", STRATEGIES)
@FUZZ_SETTINGS
@given(transcript=hostile_histories())
def test_hostile_histories_keep_the_invariants(name: str, transcript: Transcript) -> None:
    problems = fuzz_problems(name, transcript)
    unexpected = {prop: found[:3] for prop, found in problems.items() if (name, prop) not in KNOWN_VIOLATIONS}
    assert not unexpected, f"{name}: {unexpected}\n{example_text(transcript)}"


def known_cases() -> list[Any]:
    return [
        pytest.param(name, prop, id=f"{name}-{prop}", marks=pytest.mark.xfail(strict=True, reason=reason))
        for (name, prop), (reason, _) in sorted(KNOWN_VIOLATIONS.items())
        if name in STRATEGIES
    ]


@pytest.mark.parametrize(("name", "prop"), known_cases())
def test_known_violation_still_happens(name: str, prop: str) -> None:
    _, example = KNOWN_VIOLATIONS[(name, prop)]
    transcript = hostile(build_history(**example["history"]), example["shapes"], example["history"]["seed"])
    problems = fuzz_problems(name, transcript)
    assert prop not in problems, problems[prop][:3]


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_session_that_opens_with_an_assistant_message(name: str) -> None:
    """The fixed case of the brief: greeting first, then the task; every invariant holds or is known."""
    base = build_history(7, [(["big", "small"], "none", True)] * 6 + [(["huge"], "user", False)] * 3, cjk=False)
    problems = fuzz_problems(name, hostile(base, ["opens_with_assistant"], 7))
    unexpected = {prop: found[:3] for prop, found in problems.items() if (name, prop) not in KNOWN_VIOLATIONS}
    assert not unexpected, f"{name}: {unexpected}"


def test_the_invariants_catch_what_they_are_meant_to() -> None:
    """The checker itself, on requests a broken strategy would send (hand-made, not a strategy)."""
    base = hostile(build_history(3, [(["small"], "none", True)] * 3, cjk=False), ["opens_with_assistant"], 3)
    checks = Invariants(base, "five_layer", window=6000, reserved=1000)
    call_at = base.call_indices[-1]
    arrived = base.messages[:call_at]
    tool_at = next(i for i, m in enumerate(arrived) if m.role == "tool")
    broken = [m for i, m in enumerate(arrived) if m.role != "system" and i != tool_at - 1]  # system, a call dropped
    task = next(m for m in arrived if m.role == "user")
    assert base.messages[1].role == "assistant" and task is base.messages[2]  # the greeting opens the session
    broken = [m for m in broken if m is not task]  # the task dropped
    record = {"call": 9, "accepted": True, "tokens_sent": 5500, "overflow_errors": 0, "message_index": call_at}
    checks.on_call(record, broken, None)  # type: ignore[arg-type]
    checks.on_call({**record, "call": 10, "accepted": False, "tokens_sent": 9000}, arrived, None)  # type: ignore[arg-type]
    assert set(checks.problems) == {"fits_or_overflow", "paired", "system_kept", "task_kept"}
    assert len(checks.problems["fits_or_overflow"]) == 2
