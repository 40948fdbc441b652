"""Probe extraction's cost against a transcript's size (issue 29: it must stay linear): synthetic coding
runs of N rounds (a shell action that fails with a traceback, an agent sentence stating a cause, an edit
every third round), CPU seconds and peak traced memory per size.

    python scripts/bench_probe_extraction.py [ROUNDS ...]      # default 5000 20000 40000
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
    main([int(a) for a in sys.argv[1:]] or [5000, 20000, 40000])
