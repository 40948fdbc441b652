"""Reading canonical JSONL: orjson for non-ASCII lines, the standard library for ASCII lines and for
whatever orjson rejects or reads inexactly. Whatever the path, the transcripts and the error
messages must be the standard library's."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.data import BUNDLED
from ctxbench.errors import InputError
from ctxbench.transcripts import read_transcripts, write_transcripts
from ctxbench.transcripts.model import Transcript
from tests.helpers import coding_transcript


def stdlib_read(path: Path) -> list[Transcript]:
    """The reference: what ``read_transcripts`` did before orjson (decode, json.loads, from_dict)."""
    out = []
    for raw in path.read_bytes().splitlines(keepends=True):
        line = raw.decode("utf-8")
        if line.strip():
            out.append(Transcript.from_dict(json.loads(line)))
    return out


def exact(transcripts: list[Transcript]) -> list[str]:
    """A form where 1 and 1.0, or an integer and its float rounding, differ (== does not see it)."""
    return [json.dumps(t.to_dict(), ensure_ascii=True) for t in transcripts]


def line(metadata_json: str, content: str = "héllo 你好 😀") -> str:
    message = json.dumps({"role": "user", "content": content}, ensure_ascii=False)
    return f'{{"id": "x", "metadata": {metadata_json}, "messages": [{message}]}}\n'


@pytest.mark.parametrize(
    "metadata_json",
    [
        '{"big": 123456789012345678901234567890, "neg": -9223372036854775809}',  # orjson makes these floats
        '{"u64": 18446744073709551615, "i64": -9223372036854775808, "f": 1e19, "g": 0.1, "z": -0.0}',
        '{"nan": NaN, "inf": Infinity, "minf": -Infinity, "huge": 1e400}',  # json accepts, orjson rejects
        '{"lone": "\\ud800", "pair": "\\ud83d\\ude00", "nul": "\\u0000"}',
        '{"dup": 1, "dup": 2}',
    ],
)
def test_non_ascii_lines_load_as_the_standard_library_reads_them(tmp_path: Path, metadata_json: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line(metadata_json) + "\n \u00a0\u3000\n" + line("{}", "ascii only"), encoding="utf-8")
    assert exact(list(read_transcripts(path))) == exact(stdlib_read(path))
    assert len(list(read_transcripts(path))) == 2  # the line of Unicode spaces only is blank, as before


def test_bundled_and_generated_transcripts_load_identically(tmp_path: Path) -> None:
    paths = sorted(BUNDLED.glob("*.jsonl"))[:3]
    assert paths
    written = write_transcripts(tmp_path / "c.jsonl", [coding_transcript(rounds=4)])
    for path in [*paths, written]:
        assert exact(list(read_transcripts(path))) == exact(stdlib_read(path)), path


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(metadata=st.dictionaries(st.text(max_size=5), json_values, max_size=4), content=st.text())
def test_any_metadata_and_text_round_trip_as_with_the_standard_library(
    tmp_path_factory: pytest.TempPathFactory, metadata: dict, content: str
) -> None:
    path = tmp_path_factory.mktemp("prop") / "t.jsonl"
    path.write_text(line(json.dumps(metadata, ensure_ascii=False), content + " 你"), encoding="utf-8")
    assert exact(list(read_transcripts(path))) == exact(stdlib_read(path))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [  # the messages the standard-library reader gave, character columns and byte offsets included
        (b'{"id": "\xe4\xbd\xa0", "messages": [}\n', "not valid JSON (Expecting value, column 26)"),
        (b'{"id": "\xe4\xbd\xa0", "messages": []} x\n', "not valid JSON (Extra data, column 29)"),
        (b'{"id": "\xe4\xbd\xa0", "content": "a\x01"}\n', "not valid JSON (Invalid control character at, column 26)"),
        (b'{"id": "\xe4\xbd\xa0\xff", "messages": []}\n', "invalid UTF-8 at byte 11 (invalid start byte)"),
        (b'{"id": "\xed\xa0\x80", "messages": []}\n', "invalid UTF-8 at byte 8 (invalid continuation byte)"),
        (
            b'\xef\xbb\xbf{"id": "x", "messages": []}\n',
            "not valid JSON (Unexpected UTF-8 BOM (decode using utf-8-sig), column 1)",
        ),
        (
            b'{"id": "\xe4\xbd\xa0", "messages": [{"role": "robot", "content": ""}]}\n',
            "not a ctxbench transcript (unknown role 'robot')",
        ),
        (b'["\xe4\xbd\xa0"]\n', "not a ctxbench transcript (a JSON list, not an object)"),
    ],
)
def test_errors_on_non_ascii_lines_name_the_file_and_line(tmp_path: Path, raw: bytes, expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "ok \xc3\xa9", "messages": []}\n\n' + raw)
    with pytest.raises(InputError) as info:
        list(read_transcripts(path))
    assert str(info.value) == f"{path}:line 3: {expected}"


def test_the_line_and_parsed_dicts_are_not_kept_while_a_transcript_is_used(tmp_path: Path) -> None:
    path = write_transcripts(tmp_path / "t.jsonl", [coding_transcript(rounds=2), coding_transcript(tid="b")])
    reader = read_transcripts(path)
    next(reader)
    held = reader.gi_frame.f_locals  # the generator, paused at its yield
    assert not {"raw", "line", "data"} & set(held)
    reader.close()


def test_an_ascii_line_is_not_held_as_bytes_and_str_and_objects_at_once(tmp_path: Path) -> None:
    """The standard-library path: bytes, then str, then objects; each dropped once the next exists.
    Before, the bytes, the str, a stripped copy of it and the parsed objects were alive together.
    (No such check for the orjson path: orjson reserves a parse buffer of ~12x the line that
    tracemalloc counts although the system maps only the pages it touches.)"""
    path = write_transcripts(tmp_path / "t.jsonl", [coding_transcript(rounds=40, lines_per_output=400)])
    size = path.stat().st_size
    tracemalloc.start()
    try:
        (transcript,) = read_transcripts(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(transcript.messages) == 2 + 40 * 2 + 1
    # About 2.0x here (readline's chunks and their join; then the str and the objects); 3.1x before.
    assert peak < 2.6 * size


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_a_long_line_leaves_only_the_transcript_in_the_rss(tmp_path: Path) -> None:
    """After a line of TRIM_LINE_BYTES or more the heap is trimmed: the parse's freed buffers
    (raw bytes, parser copy, dicts) leave the RSS instead of staying under the replay."""
    from ctxbench.bench.worker import rss_kib
    from ctxbench.memory import _malloc_trim, release_free_memory

    if _malloc_trim() is None:
        pytest.skip("no malloc_trim (not glibc): freed memory stays as the allocator decides")
    # About 6 MiB, large next to the RSS's noise; non-ASCII (the orjson path).
    big = coding_transcript(rounds=60, lines_per_output=2000)
    big.messages[-1] = big.messages[-1].replace(content=big.messages[-1].content + " é ✅")
    path = write_transcripts(tmp_path / "big.jsonl", [big])
    del big
    size_kib = path.stat().st_size / 1024
    release_free_memory()
    before = rss_kib()
    (transcript,) = read_transcripts(path)
    held = rss_kib() - before
    assert transcript.messages
    # The transcript's own strings are about 1x the file; without the trim about 2x stayed.
    assert held < 1.5 * size_kib, f"RSS grew {held / size_kib:.2f}x the file after reading it"
