"""The persistent token-count cache (issue 24): a sweep's cells and workers share counts of long
texts; results are the same with and without it; the file survives concurrent writers and kill -9
and stays bounded; it can be moved and turned off."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ctxbench.tokens import count_cache
from ctxbench.tokens.count_cache import CountCache

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def use(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv(count_cache.CACHE_ENV, raising=False)
        else:
            monkeypatch.setenv(count_cache.CACHE_ENV, value)
        count_cache.reset()

    yield use
    count_cache.reset()


def _replay(strategy: str, work: Path) -> tuple[str, str]:
    """One bundled transcript replayed as `ctxbench run` computes a cell: its calls and probe rows."""
    from hydra import compose, initialize_config_dir

    from ctxbench.build import build_estimator, build_model, build_probe_observer, build_strategy
    from ctxbench.data import BUNDLED
    from ctxbench.replay.engine import replay
    from ctxbench.run_app import CONFIG_DIR
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer
    from ctxbench.transcripts.canonical import read_transcripts

    transcript = next(iter(read_transcripts(BUNDLED / "coding_090k.jsonl")))  # fresh messages: no count on them
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"strategy={strategy}", "llm=offline"])
    built, model = build_strategy(cfg), build_model(cfg)
    work.mkdir(parents=True)
    observer = build_probe_observer(cfg, transcript, work, built.snapshots(work))
    counter = TokenCounter(get_tokenizer(model.tokenizer)).for_transcript(transcript)
    result = replay(transcript, built, build_estimator(cfg), model, counter, workdir=work, observers=[observer])
    return json.dumps(result.calls), json.dumps(observer.rows if observer else [])


@pytest.mark.parametrize("strategy", ["none", "dbgpt"])
def test_results_are_the_same_with_and_without_the_cache(strategy, tmp_path, cache_at):
    cache_at("off")
    assert count_cache.shared() is None
    without = _replay(strategy, tmp_path / "off")
    cache_at(str(tmp_path / "cache"))
    cold = _replay(strategy, tmp_path / "cold")
    first = count_cache.shared()
    assert first is not None and first.misses > 0
    count_cache.reset()  # a new process: only the file is left
    warm = _replay(strategy, tmp_path / "warm")
    again = count_cache.shared()
    assert again is not None and again.hits >= first.misses and again.misses == 0
    assert without == cold == warm


def test_counts_reach_other_processes_and_the_file_stays_bounded(tmp_path):
    path = tmp_path / "counts.sqlite3"
    writer = CountCache(path, max_entries=100)
    texts = [f"text number {i} " * 40 for i in range(260)]
    for text in texts:
        writer.count("tok", text, len)
    writer.flush()
    rows = sqlite3.connect(path).execute("SELECT count(*) FROM counts").fetchone()[0]
    assert 0 < rows <= 100  # the oldest half went each time the file passed its bound
    reader = CountCache(path)
    calls = []
    assert reader.count("tok", texts[-1], lambda t: calls.append(t) or 0) == len(texts[-1]) and not calls
    assert reader.count("other", texts[-1], lambda t: 7) == 7  # counts are the tokenizer's own


WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from ctxbench.tokens.count_cache import CountCache
    cache = CountCache(Path(sys.argv[1]))
    tag = sys.argv[2]
    for i in range(400):
        cache.count("tok", f"{tag} {i} " * 100, len)
        if i % 50 == 49:
            cache.flush()
    print("flushed", flush=True)
    for i in range(400, 10**9):  # until killed: counts made and never flushed
        cache.count("tok", f"{tag} {i} " * 100, len)
    """
)


def test_concurrent_writers_and_kill_9_leave_a_whole_file(tmp_path):
    path = tmp_path / "counts.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
        for tag in ("a", "b", "c")
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "flushed"
        time.sleep(0.2)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = db.execute("SELECT count(*) FROM counts").fetchone()[0]
    assert rows >= 3 * 400  # every count flushed before the kill, and those flushed after
    distinct = db.execute("SELECT count(DISTINCT digest) FROM counts").fetchone()[0]
    assert distinct == rows  # each text once, though three processes wrote at the same time
    fresh = CountCache(path)
    assert fresh.count("tok", "b 7 " * 100, lambda t: -1) == len("b 7 " * 100)


def test_the_cache_moves_and_turns_off(tmp_path, cache_at, monkeypatch):
    cache_at(str(tmp_path / "here"))
    assert count_cache.location() == tmp_path / "here" / count_cache.FILE
    cache_at("off")
    assert count_cache.location() is None and count_cache.shared() is None
    cache_at(None)
    monkeypatch.setenv("CTXBENCH_CACHE_DIR", str(tmp_path / "all"))
    assert count_cache.location() == tmp_path / "all" / count_cache.FILE
    monkeypatch.setenv("CTXBENCH_CACHE_DIR", "off")
    assert count_cache.location() is None


def test_an_unusable_file_leaves_the_counts_to_the_tokenizer(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    cache = CountCache(blocked / "counts.sqlite3")
    assert cache.count("tok", "x" * 600, len) == 600 and cache.count("tok", "x" * 600, lambda t: -1) == 600
    cache.flush()  # nothing raised: the cache is memory-only for this process
