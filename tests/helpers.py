"""Small hand-built transcripts for tests (real Message objects, deterministic content)."""

from __future__ import annotations

import random

from ctxbench.transcripts.model import Message, Probe, ToolCall, Transcript


def coding_transcript(
    rounds: int = 30, lines_per_output: int = 120, seed: int = 0, tid: str = "t-coding"
) -> Transcript:
    """A system prompt, a task stating a port, then rounds of one bash call and its output."""
    rng = random.Random(seed)
    messages = [
        Message("system", "You are a careful coding agent."),
        Message("user", "Fix the flaky test. The dev server listens on port 47213."),
    ]
    for i in range(rounds):
        call_id = f"call_{i}"
        messages.append(
            Message(
                "assistant", f"Step {i}: run the tests.", tool_calls=(ToolCall(call_id, "bash", '{"cmd": "pytest"}'),)
            )
        )
        body = "\n".join(
            f"tests/test_mod_{i}.py::test_{j} PASSED value={rng.random():.6f}" for j in range(lines_per_output)
        )
        messages.append(Message("tool", body, tool_call_id=call_id, name="bash"))
    messages.append(Message("assistant", "Connecting to port 47213 to verify the fix."))
    probe = Probe("port", "Which port does the dev server listen on?", "47213", "recall", 1, len(messages) - 1)
    return Transcript(tid, messages, probes=[probe], source={"format": "test"})
