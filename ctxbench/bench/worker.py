"""One measurement in a fresh process: the tokenizer floor, one strategy's replay, or the
naive recount design, with wall time and peak memory (RSS).

Run as ``python -m ctxbench.bench.worker '<json task>'``; it prints one JSON line. A fresh
process per measurement means nothing is cached from an earlier run and the peak RSS
(VmHWM) belongs to this measurement alone.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Message

KINDS = ("floor", "replay", "naive")
NAIVE_STRATEGY = "sliding_window"  # the recount reference: the same windowing, recounted every call


def rss_kib(field: str = "VmRSS") -> int:
    """This process's resident memory (VmRSS) or its peak so far (VmHWM), in KiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    import resource  # no /proc (not Linux): ru_maxrss is the peak, in KiB on Linux, bytes on macOS

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


class RecountingCounter(TokenCounter):
    """The naive design: every prompt is re-tokenized in full, nothing is cached."""

    def message(self, message: Message) -> int:
        self.tokenized_chars += message.char_count
        message.token_cache.clear()  # the tokenizer caches content counts on the message
        return self.tokenizer.count_message(message)


class RecountingEstimator(Estimator):
    def __init__(self, counter: RecountingCounter) -> None:
        self.counter = counter
        self.name = f"recount:{counter.tokenizer.name}"

    def message(self, message: Message) -> int:
        return self.counter.message(message)

    def prompt(self, messages: Sequence[Message]) -> int:
        return self.counter.prompt(messages)


def compose_config(strategy: str, model: str, overrides: Sequence[str] = ()) -> Any:
    """The run app's own config for ``strategy`` on ``model`` (deterministic summariser)."""
    from hydra import compose, initialize_config_dir

    from ctxbench.run_app import CONFIG_DIR

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=[f"strategy={strategy}", f"model={model}", "llm=offline", *overrides])


def measure(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task: {kind, path, model, strategy?, overrides?}; return times, sizes and RSS."""
    from ctxbench.build import build_estimator, build_model, build_strategy, build_summariser
    from ctxbench.replay.engine import replay
    from ctxbench.tokens.tokenizers import get_tokenizer
    from ctxbench.transcripts.canonical import read_transcripts

    kind = task["kind"]
    if kind not in KINDS:
        raise ValueError(f"unknown measurement kind {kind!r}")
    rss_imports = rss_kib()
    strategy_name = task["strategy"] if kind == "replay" else NAIVE_STRATEGY
    cfg = compose_config(strategy_name, task.get("model", "gpt-4o"), task.get("overrides") or ())
    model = build_model(cfg)
    tokenizer = get_tokenizer(model.tokenizer)
    tokenizer.count("warm up the encoder once")
    rss_tokenizer = rss_kib()
    out: dict[str, Any] = {"kind": kind, "strategy": strategy_name if kind != "floor" else None}
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-") as tmp:
        if kind == "replay":
            strategy, estimator = build_strategy(cfg), build_estimator(cfg)
            summariser = build_summariser(cfg, Path(tmp))
            counter = TokenCounter(tokenizer)
        elif kind == "naive":
            counter = RecountingCounter(tokenizer)
            strategy, estimator, summariser = build_strategy(cfg), RecountingEstimator(counter), None
        rss_ready = rss_kib()
        transcript = next(iter(read_transcripts(task["path"])))  # fresh objects: nothing counted yet
        rss_loaded = rss_kib()
        start, cpu_start = time.perf_counter(), time.process_time()
        if kind == "floor":
            floor = TokenCounter(tokenizer)
            tokens = sum(floor.message(m) for m in transcript.messages)
            out["tokens"] = tokens
        else:
            result = replay(transcript, strategy, estimator, model, counter, workdir=Path(tmp), summariser=summariser)
            out["tokens_sent_total"] = result.summary["tokens_sent_total"]
            out["calls"] = result.summary["calls"]
            out["failed_calls"] = result.summary["failed_calls"]
            out["tokenized_chars"] = counter.tokenized_chars
        out["seconds"] = time.perf_counter() - start
        out["cpu_seconds"] = time.process_time() - cpu_start  # robust when other jobs share the cores
    out.update(
        rss_imports_kib=rss_imports,
        rss_tokenizer_kib=rss_tokenizer,
        rss_ready_kib=rss_ready,
        rss_loaded_kib=rss_loaded,
        peak_rss_kib=rss_kib("VmHWM"),
        transcript_chars=transcript.char_count,
    )
    return out


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m ctxbench.bench.worker '<json task>'", file=sys.stderr)
        return 2
    print(json.dumps(measure(json.loads(argv[0]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
