"""Generated agent histories for the strategy tests: a hypothesis strategy and a fixed example.

A valid history: a system prompt, the task (first user message), then rounds of an assistant
message with 0-3 tool calls followed by their results, occasional user messages, pinned user
messages, outputs from one line to thousands of tokens, some CJK text.
"""

from __future__ import annotations

import json
import random

from hypothesis import strategies as st

from ctxbench.transcripts.model import Message, ToolCall, Transcript

WORDS = [
    "error",
    "file",
    "src/app.py",
    "def",
    "return",
    "port",
    "8080",
    "config",
    "value",
    "test",
    "passed",
    "failed",
    "import",
    "module",
    "function",
    "class",
    "self",
    "None",
    "True",
    "data",
    "path",
    "/tmp/out.log",
    "version",
    "1.2.3",
    "request",
    "response",
    "user",
    "id",
]
CJK = "上下文压缩测试数据文件错误修复配置端口版本请求响应用户"
TOOLS = ("bash", "read_file", "search", "edit_file", "memory")
# Lines per tool output; ~10 tokens a line, so "huge" is a few thousand tokens.
SIZES = {"tiny": (1, 1), "small": (3, 12), "big": (40, 120), "huge": (200, 320)}


def _words(rng: random.Random, n: int, cjk: bool = False) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(n))
    if cjk:
        text += " " + "".join(rng.choice(CJK) for _ in range(max(1, n // 2)))
    return text


def _output(rng: random.Random, size: str, cjk: bool) -> str:
    low, high = SIZES[size]
    lines = rng.randint(low, high)
    return "\n".join(f"{i:4d}  {_words(rng, rng.randint(3, 9), cjk and i % 7 == 0)}" for i in range(lines))


def build_history(seed: int, rounds: list[tuple[list[str], str, bool]], cjk: bool) -> Transcript:
    """A transcript from a seed (for the text) and a round plan: (output sizes, extra, speaks)."""
    rng = random.Random(seed)
    messages = [
        Message("system", "You are a careful coding agent. " + _words(rng, 30)),
        Message("user", "Task: fix the failing test in src/app.py. " + _words(rng, 20, cjk)),
    ]
    call_no = 0
    for sizes, extra, speaks in rounds:
        calls = []
        for _ in sizes:
            call_no += 1
            args = json.dumps({"cmd": _words(rng, 4)})
            calls.append(ToolCall(f"call_{call_no}", rng.choice(TOOLS), args))
        text = _words(rng, rng.randint(5, 30), cjk) if speaks or not calls else ""
        messages.append(Message("assistant", text, tool_calls=tuple(calls)))
        for call, size in zip(calls, sizes, strict=True):
            messages.append(Message("tool", _output(rng, size, cjk), tool_call_id=call.id, name=call.name))
        if extra == "user" or not calls:
            messages.append(Message("user", "Please continue. " + _words(rng, rng.randint(3, 15), cjk)))
        elif extra == "pinned":
            messages.append(Message("user", f"PINNED rule {call_no}: never touch prod. " + _words(rng, 8), pinned=True))
    messages.append(Message("assistant", "Done. " + _words(rng, 10)))
    return Transcript(id=f"gen-{seed}", messages=messages)


def histories(
    max_rounds: int = 14, sizes: tuple[str, ...] = ("tiny", "small", "small", "big", "huge")
) -> st.SearchStrategy:
    round_plan = st.tuples(
        st.lists(st.sampled_from(sizes), min_size=0, max_size=3),
        st.sampled_from(("none", "none", "none", "user", "pinned")),
        st.booleans(),
    )
    return st.builds(
        build_history,
        seed=st.integers(0, 2**16),
        rounds=st.lists(round_plan, min_size=1, max_size=max_rounds),
        cjk=st.booleans(),
    )


def fixed_history(rounds: int = 30, seed: int = 7) -> Transcript:
    """A fixed, mid-sized history for golden numbers and end-to-end runs."""
    rng = random.Random(seed)
    plan = []
    for r in range(rounds):
        n = rng.choice((0, 1, 1, 2, 3))
        sizes = [rng.choice(("tiny", "small", "big", "big", "huge" if r % 6 == 0 else "small")) for _ in range(n)]
        plan.append((sizes, rng.choice(("none", "none", "user", "pinned")), rng.random() < 0.5))
    return build_history(seed, plan, cjk=True)
