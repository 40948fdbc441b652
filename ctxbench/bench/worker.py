"""One measurement in a fresh process: the tokenizer floor, one strategy's replay, one
strategy's whole cells (what a user waits for: the replay, the probes, the judge at every
checkpoint, the cell's files published, as ``ctxbench run`` computes each cell with
``ctxbench.cells.run_cell``), or the naive recount design, with wall time and peak memory (RSS).
A task's path is one transcript file, or a folder of them (the bundled data: the main job's cells).

Run as ``python -m ctxbench.bench.worker '<json task>'``; it prints one JSON line. A fresh
process per measurement means nothing is cached from an earlier run.

Memory: the issue's target is a peak under the transcript's text x 4 on top of the code and
the tokenizer. So before loading, the worker does the same kind of work once on a small
generated transcript (its own strategy, estimator and counter, a small window so every layer
fires): what happens once per process (lazy imports, regex and tokenizer caches, first
allocations) happens there. Then it collects garbage, returns free heap to the system
(``malloc_trim``, glibc), reads the RSS (``rss_ready_kib``, the baseline) and resets the peak
RSS (VmHWM) to it through ``/proc/self/clear_refs`` (Linux >= 4.0), loads the transcript, reads
the peak (``peak_load_kib``), resets it again and replays (``peak_replay_kib``: the replay with
the loaded transcript). ``peak_rss_kib`` is the larger, and ``growth_kib`` = peak - baseline.
Where the reset is not available (``peak_reset`` false) the peak may date from start-up
(Hydra, the tokenizer load) and the growth overstates the replay's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# The tokenizer imports numpy, whose OpenBLAS starts a thread per core that spins for a while once
# started. ctxbench never calls BLAS, but that spinning was counted as CPU time of the measurement
# that ran next: 0.02 s of the 1M-token floor's 0.17 s, so every CPU ratio looked 13-15% better.
# Set before anything imports numpy (a value set by the caller is kept).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Every measurement tokenizes afresh (the floor is one tokenizer pass): no counts from other runs.
os.environ.setdefault("CTXBENCH_COUNT_CACHE", "off")

from ctxbench.memory import release_free_memory
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Message

KINDS = ("floor", "replay", "cell", "naive")
NAIVE_STRATEGY = "sliding_window"  # the recount reference: the same windowing, recounted every call
WARM_UP_TOKENS = 20_000  # the warm-up transcript: generated, replayed once before the baseline
WARM_UP_WINDOW = 12_000  # its model window (8k prompt budget after the 4k output reserve): every layer fires


# Since Linux 6.2 the RSS counters are per-CPU and /proc reads their approximate sum: up to
# 32 pages per CPU and counter (anon, file, shmem) may not be folded in yet, so two reads of one
# state can differ by about a megabyte on a small machine. Comparisons of RSS figures allow this.
RSS_COUNTER_SLACK_KIB = 1024


def status_kib(*fields: str) -> tuple[int, ...]:
    """Fields of /proc/self/status (VmRSS, VmHWM...) in KiB, read together in one read."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        lines = []
    values = {line.split(":", 1)[0]: int(line.split()[1]) for line in lines if line.startswith("Vm")}
    if all(f in values for f in fields):
        return tuple(values[f] for f in fields)
    import resource  # no /proc (not Linux): ru_maxrss is the peak, in KiB on Linux, bytes on macOS

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return tuple(peak // 1024 if sys.platform == "darwin" else peak for _ in fields)


def rss_kib(field: str = "VmRSS") -> int:
    """This process's resident memory (VmRSS) or its peak so far (VmHWM), in KiB."""
    return status_kib(field)[0]


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (``/proc/self/clear_refs``, Linux >= 4.0); True if it took.

    It took when the peak afterwards is no higher than the RSS around the reset. The RSS may
    shrink meanwhile (pages reclaimed, memory freed by another thread), so the larger of the RSS
    before and after counts, with the counters' slack."""
    for _ in range(5):  # the RSS may rise and fall again between the reads: retry
        rss_before = rss_kib()
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            return False
        peak, rss_after = status_kib("VmHWM", "VmRSS")
        if peak <= max(rss_before, rss_after) + RSS_COUNTER_SLACK_KIB:
            return True
    return False


class RecountingCounter(TokenCounter):
    """The naive design: every prompt is re-tokenized in full, nothing is cached."""

    def message(self, message: Message) -> int:
        self.tokenized_chars += message.char_count
        message.token_cache.clear()  # the tokenizer caches content counts on the message
        return self.tokenizer.count_message(message)

    def running_prompt(self) -> Callable[[Sequence[Message]], int]:
        return self.prompt  # the naive design keeps no running total either

    def precount(self, messages: Iterable[Message]) -> None:
        """Nothing: the naive design caches no count a first pass could fill."""


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


def _run(kind: str, transcripts: Sequence[Any], parts: dict[str, Any], model: Any, workdir: Path) -> dict[str, Any]:
    """The measured work: count (floor), replay or compute the cells of ``transcripts`` with ``parts``."""
    from ctxbench.replay.engine import replay

    if kind == "floor":
        floor = TokenCounter(parts["tokenizer"])
        return {"tokens": sum(floor.message(m) for t in transcripts for m in t.messages)}
    if kind == "cell":
        return _cells(transcripts, parts, workdir)
    out = {"tokens_sent_total": 0, "calls": 0, "failed_calls": 0, "tokenized_chars": 0}
    for transcript, built in zip(transcripts, parts["built"]):
        counter = built["counter"]
        result = replay(
            transcript,
            built["strategy"],
            built["estimator"],
            model,
            counter,
            workdir=workdir,
            summariser=built["summariser"],
        )
        for key in ("tokens_sent_total", "calls", "failed_calls"):
            out[key] += result.summary[key]
        out["tokenized_chars"] += counter.tokenized_chars
    return out


def _cells(transcripts: Sequence[Any], parts: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Each transcript's cell as ``ctxbench run`` computes it (``run_cell``: strategy and probes
    built, replayed with the judge, published under ``workdir``), one after the other."""
    from ctxbench.cells import run_cell
    from ctxbench.results.store import Cell

    job = parts["job"]
    out = {"tokens_sent_total": 0, "calls": 0, "failed_calls": 0}
    for transcript in transcripts:
        cell = Cell(workdir / "out", transcript.id, parts["name"], job.model.name, "bench")
        work = cell.workspace()
        metrics = run_cell(job, cell, work, transcript, "bench")["metrics"]
        for key in ("tokens_sent_total", "calls", "failed_calls"):
            out[key] += metrics[key]
    return out


def _parts(kind: str, cfg: Any, tokenizer: Any, transcripts: Sequence[Any], workdir: Path) -> dict[str, Any]:
    """Fresh strategies, estimators, counters and summarisers for one run of ``kind`` (one set per
    transcript; a cell builds its own, as ``ctxbench run`` does, inside the measured work)."""
    from ctxbench.build import build_estimator, build_model, build_strategy, build_summariser, strategy_name

    parts: dict[str, Any] = {"tokenizer": tokenizer, "built": []}
    if kind == "replay":
        for _ in transcripts:
            built = {"strategy": build_strategy(cfg), "estimator": build_estimator(cfg)}
            built.update(counter=TokenCounter(tokenizer), summariser=build_summariser(cfg, workdir))
            parts["built"].append(built)
    elif kind == "naive":
        for _ in transcripts:
            counter = RecountingCounter(tokenizer)
            built = {"strategy": build_strategy(cfg), "estimator": RecountingEstimator(counter), "counter": counter}
            parts["built"].append({**built, "summariser": None})
    elif kind == "cell":
        from ctxbench.cells import CellJob
        from ctxbench.probes.boilerplate import find_boilerplate
        from ctxbench.run_app import resolved_config

        # What a job computes once for all its cells: the model, its counter, the dataset's boilerplate.
        boilerplate = find_boilerplate(t for t in transcripts if not t.probes)
        job = CellJob(cfg, build_model(cfg), TokenCounter(tokenizer), boilerplate, [], resolved_config(cfg))
        parts.update(job=job, name=strategy_name(cfg))
    return parts


def warm_up(kind: str, cfg: Any, model: Any, tokenizer: Any, workdir: Path) -> None:
    """The same kind of run once, on a small generated transcript with a small window, with its
    own strategy and counters (nothing carries over to the measured run but process-wide state)."""
    from ctxbench.datagen import make_transcript

    workdir.mkdir()
    small = make_transcript("coding", WARM_UP_TOKENS, seed=1)
    small_model = dataclasses.replace(model, context_window=min(model.context_window, WARM_UP_WINDOW))
    parts = _parts(kind, cfg, tokenizer, [small], workdir)
    if kind == "cell":
        parts["job"].model = small_model
    _run(kind, [small], parts, small_model, workdir)


def read_all(path: str | Path) -> list[Any]:
    """The transcripts of one canonical file, or of every canonical file in a folder (with calls)."""
    from ctxbench.transcripts.canonical import find_canonical_files, read_transcripts

    files = find_canonical_files([Path(path)]) if Path(path).is_dir() else [Path(path)]
    return [t for f in files for t in read_transcripts(f) if t.call_indices]


def measure(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task: {kind, path, model, strategy?, overrides?}; return times, sizes and RSS."""
    from ctxbench.bench.data import text_bytes
    from ctxbench.build import build_model
    from ctxbench.tokens.tokenizers import get_tokenizer

    kind = task["kind"]
    if kind not in KINDS:
        raise ValueError(f"unknown measurement kind {kind!r}")
    rss_imports = rss_kib()
    strategy_name = task["strategy"] if kind in ("replay", "cell") else NAIVE_STRATEGY
    cfg = compose_config(strategy_name, task.get("model", "gpt-4o"), task.get("overrides") or ())
    model = build_model(cfg)
    tokenizer = get_tokenizer(model.tokenizer)
    tokenizer.count("warm up the encoder once")
    rss_tokenizer = rss_kib()
    out: dict[str, Any] = {"kind": kind, "strategy": strategy_name if kind != "floor" else None}
    with tempfile.TemporaryDirectory(prefix="ctxbench-bench-") as tmp:
        warm_up(kind, cfg, model, tokenizer, Path(tmp) / "warm-up")
        # The strategies are built for the transcripts' count before loading (a cell builds its own).
        count = len(read_all(task["path"])) if kind in ("replay", "naive") else 0
        parts = _parts(kind, cfg, tokenizer, [None] * count, Path(tmp))
        release_free_memory()
        rss_ready = rss_kib()  # the baseline: code, tokenizer, the built strategy, after the warm-up
        peak_reset = reset_peak_rss()
        transcripts = read_all(task["path"])  # fresh objects: nothing counted yet
        if kind == "cell":  # what the job finds in its dataset before its first cell
            parts = _parts(kind, cfg, tokenizer, transcripts, Path(tmp))
        rss_loaded, peak_load = status_kib("VmRSS", "VmHWM")
        if peak_reset:
            reset_peak_rss()  # from here VmHWM is the replay's peak (with the loaded transcript)
        start, cpu_start = time.perf_counter(), time.process_time()
        out.update(_run(kind, transcripts, parts, model, Path(tmp)))
        out["seconds"] = time.perf_counter() - start
        out["cpu_seconds"] = time.process_time() - cpu_start  # robust when other jobs share the cores
        peak_replay = rss_kib("VmHWM")
        # What the strategy writes into the cell when it is published (DB-GPT's snapshot store), as
        # `ctxbench run` does after the replay: timed apart, like the cell's other files (a cell
        # kind's time has it: run_cell publishes).
        files_cpu = 0.0
        for built in parts["built"]:
            write_files = getattr(built["strategy"], "write_files", None)
            if write_files is not None:
                files_start = time.process_time()
                write_files(Path(tmp))
                files_cpu += time.process_time() - files_start
        out["files_cpu_seconds"] = files_cpu
    peak = max(peak_load, peak_replay)
    size = sum(text_bytes(t) for t in transcripts)
    out.update(
        rss_imports_kib=rss_imports,
        rss_tokenizer_kib=rss_tokenizer,
        rss_ready_kib=rss_ready,
        rss_loaded_kib=rss_loaded,
        peak_rss_kib=peak,
        peak_load_kib=peak_load,
        peak_replay_kib=peak_replay,
        peak_reset=peak_reset,
        growth_kib=peak - rss_ready,
        transcript_chars=sum(t.char_count for t in transcripts),
        text_bytes=size,
        growth_x_text=(peak - rss_ready) * 1024 / size if size else 0.0,
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
