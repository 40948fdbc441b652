"""Probe extraction's cost against a transcript's size (issue 29: it must stay linear): synthetic coding
runs of N rounds (a shell action that fails with a traceback, an agent sentence stating a cause, an edit
every third round), CPU seconds and peak traced memory per size.

    python scripts/bench_probe_extraction.py [ROUNDS ...]      # default 5000 20000 40000
    python scripts/bench_probe_extraction.py --hostile          # shapes that made lazy regexes quadratic

--hostile puts each shape (a run of unclosed tags, of `::`, deep JSON...) at 50k and 100k characters in the
message where it bit (a tool's output, a command and the edit's old text, the task) and prints CPU seconds
and the growth from 50k to 100k (2 is linear, 4 quadratic); it exits 1 when a shape grows faster than 3x
or takes over 2 s at 100k. Before the fix of 2026-12-06, 50,000 `<issue>` tags took 302 s, `ISSUE:` lines 90 s,
50,000 `::` over 15 s, and deep JSON in a tool's output raised RecursionError. Before the fix of 2026-12-07, at
100k: 100,000 newlines in an output took 34 s (`\\s*` of a code-line regex run across lines), `\\"` in a command
20 s, one 100,000-letter word of `Error` 2.3 s, 20,000 "I'll " in one sentence 40 s.
"""

from __future__ import annotations

import json
import sys
import time
import tracemalloc

from ctxbench.probes.extract import extract_probes
from ctxbench.transcripts.model import Message, ToolCall, Transcript


def synthetic_run(rounds: int) -> Transcript:
    messages = [
        Message("system", "s"),
        Message("user", "<pr_description>\nParser fails on empty files\n</pr_description>"),
    ]
    for i in range(rounds):
        command = f"sed -i 's/x{i}/y{i}/' src/mod{i % 50}.py" if i % 3 == 0 else f"python repro_{i % 7}.py"
        call = ToolCall(f"c{i}", "bash", json.dumps({"command": command}))
        messages.append(
            Message("assistant", f"The issue is that `f{i}()` returns None. Let me run it.", tool_calls=(call,))
        )
        frame = f'  File "src/mod{i % 50}.py", line {i}, in f\n    x = y[{i}]'
        output = f"Traceback (most recent call last):\n{frame}\nKeyError: {i}"
        messages.append(
            Message("tool", f"<returncode>1</returncode>\n<output>\n{output}\n</output>", tool_call_id=f"c{i}")
        )
    return Transcript("synthetic", messages)


HOSTILE = [
    ("<issue>", "user"), ("ISSUE:\n", "user"), ("<uploaded_files>", "user"), ("<system-reminder>", "tool"),
    ("<environment_details>", "tool"), ("::", "tool"), ('{"a": ', "tool"), ("[", "tool"), ("\n\n ", "tool"),
    ("Ran 1 test in 0.1s\n", "tool"), ("1 passed", "tool"), ("----", "command"), ("old_str", "command"),
    ("=== ", "command"), ("sed -i 's/a/b/' f.py && ", "command"), ("<write_to_file>", "assistant"),
    ("<a>", "assistant"), ("<<<<<<< SEARCH\n", "assistant"), ("Traceback (most recent call last):\n", "tool"),
    ("\n", "tool"), ("\r\n", "tool"), (" ", "tool"), ("Error", "tool"), ('"\\', "command"), ("'", "command"),
    ("I'll ", "assistant"), ("we should ", "assistant"), ("`", "assistant"),
]  # fmt: skip


def hostile_run(shape: str, where: str, chars: int) -> Transcript:
    text = shape * (chars // len(shape))
    command = text if where == "command" else "python -m pytest tests/x.py"
    edit = {"command": "str_replace", "path": "/a.py", "old_str": text if where == "command" else "x", "new_str": "y"}
    task = text if where == "user" else "<pr_description>Fix the parser</pr_description>"
    return Transcript(
        "hostile",
        [
            Message("system", "s"),
            Message("user", task),
            Message(
                "assistant",
                text if where == "assistant" else "The issue is that x fails.",
                tool_calls=(ToolCall("a", "bash", json.dumps({"command": command})),),
            ),
            Message("tool", text if where == "tool" else "1 passed", tool_call_id="a"),
            Message("assistant", "Fix.", tool_calls=(ToolCall("b", "str_replace_based_edit_tool", json.dumps(edit)),)),
            Message("tool", "The file /a.py has been edited.", tool_call_id="b"),
            Message("assistant", "All done."),
        ],
    )


def hostile() -> int:
    print("| shape | in | CPU s at 50k chars | at 100k | growth |\n|---|---|---|---|---|")
    bad = 0
    for shape, where in HOSTILE:
        seconds = []
        for chars in (50_000, 100_000):
            run = hostile_run(shape, where, chars)
            start = time.process_time()
            extract_probes(run)
            seconds.append(time.process_time() - start)
        growth = seconds[1] / max(seconds[0], 0.01)
        slow = seconds[1] > 2 or (seconds[1] > 0.2 and growth > 3)
        bad += slow
        print(
            f"| `{shape!r}` | {where} | {seconds[0]:.2f} | {seconds[1]:.2f} | {growth:.1f}{' SLOW' if slow else ''} |"
        )
    return 1 if bad else 0


def main(sizes: list[int]) -> None:
    print("| messages | CPU s | s per 10k messages | peak MB |\n|---|---|---|---|")
    for rounds in sizes:
        transcript = synthetic_run(rounds)
        tracemalloc.start()
        start = time.process_time()
        extract_probes(transcript)
        seconds = time.process_time() - start
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        n = len(transcript.messages)
        print(f"| {n:,} | {seconds:.2f} | {seconds / n * 1e4:.2f} | {peak:.1f} |")


if __name__ == "__main__":
    if sys.argv[1:] == ["--hostile"]:
        sys.exit(hostile())
    main([int(a) for a in sys.argv[1:]] or [5000, 20000, 40000])
