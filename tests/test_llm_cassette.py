"""Cassette files: readable JSONL, whole-line appends from several processes, torn last lines."""

import json
import multiprocessing

import pytest

from ctxbench.errors import InputError
from ctxbench.llm import Cassette, request_key


def entry(key: str, text: str = "answer") -> dict:
    return {"key": key, "request": {"model": "m"}, "response": text, "usage": {"prompt_tokens": 1}, "model": "m"}


def test_key_is_canonical_and_sensitive():
    one = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    reordered = {"temperature": 0, "messages": [{"content": "hi", "role": "user"}], "model": "m"}
    assert request_key(one) == request_key(reordered)
    assert request_key(one) != request_key({**one, "temperature": 0.5})
    assert len(request_key(one)) == 64


def test_torn_last_line_is_ignored_and_next_append_starts_fresh(tmp_path):
    path = tmp_path / "summariser.jsonl"
    Cassette(path, "record").append(entry("a"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"key": "b", "response": "half wri')  # a writer killed mid-line
    assert set(Cassette(path, "replay").entries()) == {"a"}
    Cassette(path, "replay-or-live").append(entry("c"))
    assert set(Cassette(path, "replay").entries()) == {"a", "c"}
    assert path.read_text("utf-8").endswith("\n")


def test_broken_middle_line_names_file_and_line(tmp_path):
    path = tmp_path / "judge.jsonl"
    path.write_text(json.dumps(entry("a")) + "\nnot json\n" + json.dumps(entry("b")) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        Cassette(path, "replay").entries()
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)


def test_unknown_mode_is_a_config_error(tmp_path):
    from ctxbench.errors import ConfigError

    with pytest.raises(ConfigError, match="cassette mode 'replay-only'"):
        Cassette(tmp_path / "x.jsonl", "replay-only")


def _append_many(path: str, worker: int) -> None:
    cassette = Cassette(path, "record")
    for i in range(150):
        cassette.append(entry(f"{worker}-{i}", "x" * (50 + 97 * i)))  # lines up to ~15 kB


def test_concurrent_appends_never_interleave(tmp_path):
    path = tmp_path / "shared.jsonl"
    workers = [multiprocessing.get_context("spawn").Process(target=_append_many, args=(str(path), w)) for w in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    lines = [line for line in path.read_text("utf-8").splitlines() if line]  # blank lines are allowed
    assert len(lines) == 300
    assert len({json.loads(line)["key"] for line in lines}) == 300
