import json

import datasets
import pytest

from ctxbench.errors import InputError
from ctxbench.transcripts import Message, ToolCall, dbgpt_rounds, group_rounds, read_transcripts, write_transcripts
from tests.helpers import coding_transcript


def test_round_trip_through_canonical_jsonl(tmp_path):
    original = coding_transcript(rounds=3)
    path = write_transcripts(tmp_path / "t.jsonl", [original])
    (loaded,) = list(read_transcripts(path))
    assert loaded.to_dict() == original.to_dict()
    assert loaded.messages[2].tool_calls == (ToolCall("call_0", "bash", '{"cmd": "pytest"}'),)


def test_canonical_file_loads_with_datasets(tmp_path):
    path = write_transcripts(tmp_path / "t.jsonl", [coding_transcript(rounds=2), coding_transcript(rounds=3, tid="b")])
    ds = datasets.load_dataset("json", data_files=str(path), split="train")
    assert ds.num_rows == 2
    assert ds[1]["id"] == "b"
    assert len(ds[1]["messages"]) == 2 + 3 * 2 + 1


def test_replace_drops_the_token_cache():
    message = Message("user", "hello")
    message.token_cache["exact:x"] = 99
    assert message.replace(content="hello there").token_cache == {}


def test_function_calling_rounds_keep_calls_with_results():
    t = coding_transcript(rounds=3)
    rounds = group_rounds(t.messages)
    assert rounds == [[1, 2, 3], [4, 5], [6, 7], [8]]


def test_dbgpt_rounds_end_at_observation():
    msgs = [
        Message("system", "s"),
        Message("user", "task"),
        Message("assistant", "Thought: look\nAction: sql_query"),
        Message("user", "Observation: 3 rows"),
        Message("assistant", "Thought: again"),
        Message("user", "Observation: done"),
        Message("assistant", "Final answer"),
    ]
    assert dbgpt_rounds(msgs) == [[1, 2, 3], [4, 5], [6]]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"id": "x", "messages": [}\n', "line 1: not valid JSON"),
        ('{"id": "x", "messages": [{"role": "robot", "content": "hi"}]}\n', "unknown role 'robot'"),
        ('{"id": "x", "messages": [{"role": "user", "content": null}]}\n', "content must be text"),
    ],
)
def test_bad_canonical_input_names_file_and_line(tmp_path, content, fragment):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "ok", "messages": []}) + "\n" + content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        list(read_transcripts(path))
    assert str(path) in str(info.value) and "line 2" in str(info.value)
    assert fragment.replace("line 1: ", "") in str(info.value)


def test_invalid_utf8_is_a_one_line_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "a", "messages": []}\n{"id": "\xff\xfe"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:line 2: invalid UTF-8"):
        list(read_transcripts(path))


def test_replace_copies_every_field_but_the_counts_and_checks_its_arguments():
    original = Message("tool", "out", tool_call_id="c1", name="bash", pinned=True, metadata={"snapshot": "p"})
    original.token_cache["exact:o200k_base"] = 3
    copy = original.replace(content="cut")
    assert copy == Message("tool", "cut", tool_call_id="c1", name="bash", pinned=True)
    assert copy.metadata == {"snapshot": "p"} and copy.token_cache == {} and copy.appended_to is None
    grown = original.with_appended(" more", pinned=False)
    assert (grown.content, grown.pinned, grown.appended_to) == ("out more", False, original)
    with pytest.raises(TypeError, match="token_cache"):
        original.replace(token_cache={})
    with pytest.raises(TypeError, match="colour"):
        original.replace(colour="red")
