"""Properties every strategy config must keep, on generated histories (hypothesis).

Every ``ctxbench/configs/strategy/*.yaml`` is discovered at test time, composed with Hydra's compose API
and built with ``ctxbench.build.build_strategy``, then replayed with the real engine:

* valid requests: ``request_problems`` is 0 in every call record;
* provider role order (``role_order_problems``): system messages only as a leading block; the
  first other message is a user message; a tool message only inside the tool batch right after
  the assistant message that called it, one result per call; every call answered in that batch;
* system messages survive (their text is still in the request), pinned messages survive and the
  first user message survives where the strategy promises it (``PROMISES``);
* compaction never increases the estimate, measured over each ``before_call`` / ``on_overflow``
  (so a layer that adds a pointer or notice is judged by what the whole call did);
* a history that fits a large window is left alone (the same messages, no layer fired).

Where a strategy documents otherwise, its PROMISES entry says so with the reason. A property
that fails for a strategy that promises it is marked xfail(strict=True) with the counterexample.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hypothesis import HealthCheck, Phase, given, settings
from omegaconf import DictConfig

from ctxbench.build import build_estimator, build_model, build_strategy, build_summariser
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ContextOverflowError
from ctxbench.strategies.base import Strategy, StrategyContext
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts.model import Message, Transcript
from tests.strategy_histories import build_history, histories

CONFIG_DIR = Path(__file__).resolve().parents[1] / "ctxbench" / "configs"
# Every strategy, the upstream ones too: scripts/setup.sh installs their packages, so one that does not
# run here fails (tests/upstream_required.py).
STRATEGIES = sorted(p.stem for p in (CONFIG_DIR / "strategy").glob("*.yaml"))
SMALL_WINDOW = ["model=gpt-4o", "model.context_window=6000", "model.reserved_output_tokens=1000"]
LARGE_WINDOW = ["model=gpt-4o", "model.context_window=10000000", "model.reserved_output_tokens=1000"]
# Modest and deterministic (the same 25 examples every run); no shrinking, which costs minutes per
# failure here: a failure prints its build_history arguments, enough to replay it.
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow],
)

# What each strategy promises. Unknown (new) strategies are held to every promise.
ALL = {"first_user": True, "pinned": True, "leaves_fitting_history": True}
PROMISES: dict[str, dict[str, Any]] = {
    # SWE-agent masks old observations on every call by design (no trigger), fitting or not.
    "observation_masking": {**ALL, "leaves_fitting_history": False},
    "masking_then_summary": {**ALL, "leaves_fitting_history": False},
    # DB-GPT's Layer 2/3/4 output is system messages + kept rounds: the task message is not kept
    # on its own, and DB-GPT has no notion of pinned messages (reference.md 1a).
    "dbgpt": {**ALL, "first_user": False, "pinned": False},
    "upstream_dbgpt": {**ALL, "first_user": False, "pinned": False},  # DB-GPT's own code: the same
    # inspect_ai keeps its prefix (system prompt and task) but has no notion of pinned messages.
    "inspect_compaction": {**ALL, "pinned": False},
    # LangChain's SummarizationMiddleware summarises everything but the last messages, the task included;
    # neither middleware knows pinned messages.
    "langchain_middleware": {**ALL, "first_user": False, "pinned": False},
}
# Properties that fail for a strategy that promises them (other helpers' strategies are not edited
# here): (strategy, property) -> (what happens, the counterexample's build_history arguments).
# DB-GPT's snapshot pointers and task-progress block are written by the strategy's ``prepare`` (what
# its memory stores), not by its compaction, so they are no longer judged as compaction here.
_TINY_THEN_HUGE = {
    "seed": 0,
    "rounds": [(["tiny"], "none", False), (["tiny"], "none", False), (["huge", "huge"], "none", False)],
    "cjk": False,
}
_SMALL_OLD_ROUNDS = {
    "seed": 14338,
    "rounds": [
        (["tiny", "tiny", "small"], "none", True),
        ([], "none", True),
        (["big"], "none", True),
        (["small"], "user", False),
        (["tiny", "small"], "pinned", False),
        (["big", "tiny", "small"], "pinned", False),
    ],
    "cjk": True,
}
KNOWN_VIOLATIONS: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("dbgpt", "never_grows"): (
        "DB-GPT's Layer 3 replaces the old rounds by its summary whatever their size (compact.py has no size "
        "check), and as a per-call view it summarises the whole history's old rounds, small ones included: "
        "build_history(seed=14338, ...) call 4, estimate 2473 -> 2536",
        _SMALL_OLD_ROUNDS,
    ),
    ("dbgpt", "role_order"): (
        "after an overflow DB-GPT Layer 4 keeps system messages + the last 2 rounds, so the request starts "
        "with an assistant message (Anthropic requires a user message first): build_history(seed=0, "
        "rounds=[tiny], [tiny], [huge, huge]) call 3",
        _TINY_THEN_HUGE,
    ),
}


# DB-GPT's own context manager behaves as ctxbench's dbgpt call by call (tests/test_upstream_dbgpt.py),
# its Layer 3 summarising too (set_model_name defaults to true): the same violations.
KNOWN_VIOLATIONS.update(
    {("upstream_dbgpt", prop): found for (name, prop), found in list(KNOWN_VIOLATIONS.items()) if name == "dbgpt"}
)


# LangChain's SummarizationMiddleware (the default kind) summarises everything before its last 20 messages
# whatever its size (no size check), so a small span can come back as a longer summary message.
KNOWN_VIOLATIONS[("langchain_middleware", "never_grows")] = (
    "SummarizationMiddleware replaces the span before the kept messages by its summary whatever their "
    "size: build_history(seed=9011, ...) call 7, estimate 20274 -> 20325",
    {
        "seed": 9011,
        "rounds": [
            (["huge", "big", "tiny"], "none", True),
            (["huge"], "none", True),
            (["small"], "none", True),
            (["small", "huge", "huge"], "pinned", True),
            (["small"], "none", True),
            (["big"], "none", True),
            (["huge", "big", "small"], "none", True),
            ([], "user", False),
        ],
        "cjk": False,
    },
)


def promises(name: str) -> dict[str, Any]:
    return PROMISES.get(name, ALL)


@cache
def composed(name: str, window: tuple[str, ...]) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=[f"strategy={name}", *window])


@cache
def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="ctxbench-props-"))


def role_order_problems(messages: Sequence[Message]) -> list[str]:
    """What a strict provider (Anthropic's Messages API, OpenAI with tools) rejects in role order."""
    problems: list[str] = []
    leading = True
    batch: set[str] | None = None  # call ids of the assistant whose tool batch is open
    answered: set[str] = set()
    first_other = next((m for m in messages if m.role != "system"), None)
    if first_other is None:
        problems.append("no message besides system messages")
    elif first_other.role != "user":
        problems.append(f"first non-system message is {first_other.role!r}, not 'user'")
    for i, message in enumerate(messages):
        if message.role == "system":
            if not leading:
                problems.append(f"message {i}: system message after the conversation started")
            continue
        leading = False
        if message.role == "tool":
            if batch is None or message.tool_call_id not in batch:
                problems.append(f"message {i}: tool result {message.tool_call_id!r} outside its call's batch")
            elif message.tool_call_id in answered:
                problems.append(f"message {i}: second result for {message.tool_call_id!r}")
            answered.add(message.tool_call_id)
            continue
        if batch is not None and not batch <= answered:
            problems.append(f"message {i}: calls {sorted(batch - answered)} not answered before a {message.role}")
        batch, answered = (set(c.id for c in message.tool_calls) or None), set()
    return problems


class Checked(Strategy):
    """Wraps a strategy and measures each of its calls (the estimate before and after)."""

    def __init__(self, inner: Strategy) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_retries = inner.max_retries
        self.compaction = inner.compaction
        self.growth: list[str] = []
        self.changed: list[str] = []

    def _measure(self, kind: str, before: list[Message], after: list[Message] | None, ctx: StrategyContext) -> None:
        if after is None:
            return
        old, new = ctx.estimator.prompt(before), ctx.estimator.prompt(after)
        if new > old:
            self.growth.append(f"call {ctx.call_index} {kind}: estimate {old} -> {new} ({ctx.layers_applied})")
        if len(after) != len(before) or any(a is not b for a, b in zip(after, before, strict=True)):
            self.changed.append(f"call {ctx.call_index} {kind}: layers {ctx.layers_applied}")

    def prepare(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        return self.inner.prepare(messages, ctx)

    def before_call(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        before = list(messages)
        out = self.inner.before_call(messages, ctx)
        self._measure("before_call", before, out, ctx)
        return out

    def on_overflow(
        self, messages: list[Message], error: ContextOverflowError, ctx: StrategyContext, attempt: int
    ) -> list[Message] | None:
        before = list(messages)
        out = self.inner.on_overflow(messages, error, ctx, attempt)
        self._measure(f"on_overflow#{attempt}", before, out, ctx)
        if out is not None:
            self.changed.append(f"call {ctx.call_index} on_overflow#{attempt}")
        return out

    def after_call(self, messages: list[Message], prompt_tokens: int, ctx: StrategyContext) -> None:
        self.inner.after_call(messages, prompt_tokens, ctx)


class RequestChecks:
    """A replay observer checking every request sent against the promises."""

    def __init__(self, transcript: Transcript, promise: dict[str, Any]) -> None:
        self.transcript = transcript
        self.promise = promise
        self.problems: dict[str, list[str]] = {}

    def _add(self, prop: str, text: str) -> None:
        self.problems.setdefault(prop, []).append(text)

    def on_call(self, record: dict[str, Any], working: Sequence[Message], ctx: StrategyContext) -> None:
        call = record["call"]
        if record["request_problems"]:
            self._add("valid_request", f"call {call}: {record['request_problems']} request problems")
        for problem in role_order_problems(working):
            self._add("role_order", f"call {call}: {problem}")
        arrived = self.transcript.messages[: record["message_index"]]
        texts = [m.content for m in working]

        def survives(original: Message) -> bool:
            return any(original.content in text for text in texts)

        for m in arrived:
            if m.role == "system" and not survives(m):
                self._add("system_survives", f"call {call}: system message {m.content[:40]!r} lost")
            if m.pinned and self.promise["pinned"] and not survives(m):
                self._add("pinned_survives", f"call {call}: pinned {m.content[:40]!r} lost")
        first_user = next((m for m in arrived if m.role == "user"), None)
        if self.promise["first_user"] and first_user is not None and not survives(first_user):
            self._add("first_user_survives", f"call {call}: first user message lost")


def run(name: str, window: tuple[str, ...], transcript: Transcript) -> tuple[Checked, RequestChecks, Any]:
    cfg = composed(name, window)
    model = build_model(cfg)
    strategy = Checked(build_strategy(cfg))
    checks = RequestChecks(transcript, promises(name))
    result = replay(
        transcript,
        strategy,
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer(model.tokenizer)),
        workdir=workdir() / name,
        summariser=build_summariser(cfg, workdir() / name),
        observers=[checks],
    )
    return strategy, checks, result


def small_window_problems(name: str, transcript: Transcript) -> dict[str, list[str]]:
    """Every property checked on one replay in a small window, by property name."""
    strategy, checks, _ = run(name, tuple(SMALL_WINDOW), transcript)
    problems = dict(checks.problems)
    if strategy.growth:
        problems["never_grows"] = strategy.growth
    return problems


def example_text(transcript: Transcript) -> str:
    plan = [(m.role, len(m.content), m.pinned) for m in transcript.messages]
    return f"{transcript.id}: {plan}"


@pytest.mark.parametrize("name", STRATEGIES)
@SETTINGS
@given(transcript=histories())
def test_small_window_requests_are_valid_and_compaction_only_shrinks(name: str, transcript: Transcript) -> None:
    problems = small_window_problems(name, transcript)
    unexpected = {prop: found for prop, found in problems.items() if (name, prop) not in KNOWN_VIOLATIONS}
    assert not unexpected, f"{name}: {unexpected}\n{example_text(transcript)}"


def fits_problems(name: str, transcript: Transcript) -> dict[str, list[str]]:
    """In a window the history fits: no overflow, and (where promised) nothing changed."""
    strategy, _, result = run(name, tuple(LARGE_WINDOW), transcript)
    problems: dict[str, list[str]] = {}
    if result.summary["overflow_errors"]:
        problems["fits_without_overflow"] = [f"{result.summary['overflow_errors']} overflow errors"]
    if promises(name)["leaves_fitting_history"] and strategy.changed:
        problems["leaves_fitting"] = strategy.changed
    return problems


@pytest.mark.parametrize("name", STRATEGIES)
@SETTINGS
@given(transcript=histories(max_rounds=8, sizes=("tiny", "small", "big")))
def test_a_history_that_fits_is_left_alone(name: str, transcript: Transcript) -> None:
    problems = fits_problems(name, transcript)
    unexpected = {prop: found for prop, found in problems.items() if (name, prop) not in KNOWN_VIOLATIONS}
    assert not unexpected, f"{name}: {unexpected}\n{example_text(transcript)}"


def known_violation_cases() -> list[Any]:
    return [
        pytest.param(name, prop, id=f"{name}-{prop}", marks=pytest.mark.xfail(strict=True, reason=reason))
        for (name, prop), (reason, _) in sorted(KNOWN_VIOLATIONS.items())
        if name in STRATEGIES
    ]


@pytest.mark.parametrize(("name", "prop"), known_violation_cases())
def test_known_violation_still_happens(name: str, prop: str) -> None:
    """Each known violation, on its recorded counterexample; an XPASS means it was fixed:
    remove its KNOWN_VIOLATIONS entry so the property is enforced again."""
    _, example = KNOWN_VIOLATIONS[(name, prop)]
    check = fits_problems if prop == "leaves_fitting" else small_window_problems
    problems = check(name, build_history(**example))
    assert prop not in problems, problems[prop]


@pytest.mark.parametrize("name", [n for n in STRATEGIES if promises(n)["first_user"]])
def test_task_survives_when_the_transcript_opens_with_an_assistant_message(name: str) -> None:
    """Imported sessions may start with the agent's greeting before the user's task: the task is
    still the first user message, and a strategy that promises to keep it keeps it."""
    from tests.strategy_histories import fixed_history

    base = fixed_history(rounds=30)
    opener = Message("assistant", "Hello! What should I work on today?")
    transcript = Transcript(id="opener", messages=[base.messages[0], opener, *base.messages[1:]])
    _, checks, _ = run(name, tuple(SMALL_WINDOW), transcript)
    assert "first_user_survives" not in checks.problems, checks.problems["first_user_survives"][:3]
