"""Small hand-built histories for the DB-GPT layer tests (ReAct text and function calling)."""

from __future__ import annotations

from pathlib import Path

from ctxbench.replay.provider import ModelSpec
from ctxbench.strategies.base import StrategyContext
from ctxbench.tokens.estimators import Estimator, FixedRatioEstimator
from ctxbench.transcripts.model import Message, ToolCall, Transcript

TASK = "Find the top region by revenue in sales.db and report it."


def react_round(i: int, obs_chars: int = 40, thought_chars: int = 0) -> list[Message]:
    thought = f"Thought: step {i}" + "t" * thought_chars
    action = (
        f"{thought}\nPhase: explore\nAction Intention: look at table {i}\nAction Reason: need rows\n"
        f'Action: sql_query\nAction Input: {{"sql": "SELECT {i}"}}'
    )
    observation = f"Observation: rows of step {i} " + "o" * max(0, obs_chars - len(f"Observation: rows of step {i} "))
    return [Message("assistant", action), Message("user", observation)]


def react_history(rounds: int, obs_chars: int = 40, thought_chars: int = 0, system: bool = True) -> list[Message]:
    messages = [Message("system", "You are a ReAct data agent.")] if system else []
    messages.append(Message("user", TASK))
    for i in range(rounds):
        messages.extend(react_round(i, obs_chars, thought_chars))
    return messages


def tool_history(rounds: int, result_chars: int = 40) -> list[Message]:
    messages = [Message("system", "You are a coding agent."), Message("user", TASK)]
    for i in range(rounds):
        calls = (
            ToolCall(f"c{i}a", "read_file", f'{{"path": "src/m{i}.py"}}'),
            ToolCall(f"c{i}b", "grep", '{"q": "x"}'),
        )
        messages.append(Message("assistant", f"Reading module {i}.", tool_calls=calls))
        for call in calls:
            messages.append(
                Message("tool", f"{call.name} {i}: " + "r" * result_chars, tool_call_id=call.id, name=call.name)
            )
    return messages


def make_ctx(
    messages: list[Message],
    estimator: Estimator | None = None,
    summariser: object = None,
    workdir: Path | None = None,
    transcript_id: str = "conv-1",
) -> StrategyContext:
    return StrategyContext(
        model=ModelSpec(name="gpt-4-32k", context_window=32768, tokenizer="cl100k_base"),
        estimator=estimator or FixedRatioEstimator(4.0),
        transcript=Transcript(id=transcript_id, messages=list(messages)),
        summariser=summariser,
        workdir=workdir,
    )
