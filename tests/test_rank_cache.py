"""The rank-table cache: tiktoken's parsed rank files kept with marshal, keyed by content hash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxbench.tokens import rank_cache
from ctxbench.tokens.rank_cache import cached_ranks

O200K_SHA = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # tiktoken's expected_hash
RANKS = {b"a": 0, b"b": 1, b"ab": 2, bytes(range(200, 256)): 3}


class Parser:
    """Counts how often the rank file is parsed (what the cache saves)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[bytes, int]:
        self.calls += 1
        return dict(RANKS)


def entries(folder: Path) -> list[Path]:
    return sorted((folder / "ranks").glob("*.marshal"))


def test_second_load_reads_the_cache_and_a_corrupt_entry_is_rebuilt(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(rank_cache.CACHE_ENV, str(tmp_path))
    parse = Parser()
    assert cached_ranks("k1", parse) == RANKS and parse.calls == 1
    assert cached_ranks("k1", parse) == RANKS and parse.calls == 1  # from the entry
    (entry,) = entries(tmp_path)
    assert entry.name.startswith("k1-py3")
    entry.write_bytes(entry.read_bytes()[:-7])  # truncated: marshal cannot read it
    assert cached_ranks("k1", parse) == RANKS and parse.calls == 2
    assert cached_ranks("k1", parse) == RANKS and parse.calls == 2  # rewritten whole
    assert cached_ranks("k2", parse) == RANKS and parse.calls == 3  # another key, another entry


def test_off_or_an_unwritable_folder_still_gives_the_ranks(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(rank_cache.CACHE_ENV, "off")
    parse = Parser()
    assert cached_ranks("k", parse) == RANKS and cached_ranks("k", parse) == RANKS and parse.calls == 2
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(rank_cache.CACHE_ENV, str(blocker))
    assert cached_ranks("k", parse) == RANKS and parse.calls == 3


def test_default_folder_follows_xdg(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(rank_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert rank_cache.cache_dir() == tmp_path / "ctxbench"


LOAD = """
import json, sys
from ctxbench.tokens.tokenizers import get_tokenizer
t = get_tokenizer("o200k_base")
print(json.dumps([t.encode(x) for x in sys.argv[1:]]))
"""


@pytest.mark.parametrize("cache", ["fresh", "filled", "off"])
def test_a_cached_o200k_encodes_as_tiktoken_does(tmp_path, cache: str) -> None:
    """End to end, in fresh processes: the encoding built from the cache entry is tiktoken's."""
    import tiktoken
    from tiktoken_ext import openai_public

    from ctxbench.tokens.tokenizers import litellm_tokenizer_dir

    texts = ["hello world", "def f(x):\n    return x ** 2  # ✅ 中文", "<|endoftext|> tail", " \n\n  spaces"]
    env = {"CTXBENCH_CACHE_DIR": "off" if cache == "off" else str(tmp_path), "PATH": "/usr/bin:/bin"}
    runs = 2 if cache == "filled" else 1
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", LOAD, *texts], env=env, capture_output=True, text=True, check=True)
    expected_entries = [] if cache == "off" else [f"{O200K_SHA}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"]
    assert [p.name for p in entries(tmp_path)] == expected_entries
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(litellm_tokenizer_dir()))
    reference = tiktoken.Encoding(**openai_public.o200k_base())  # parsed by tiktoken, no cache
    assert json.loads(out.stdout) == [reference.encode_ordinary(x) for x in texts]
