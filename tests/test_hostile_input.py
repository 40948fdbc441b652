"""Hostile input for ``ctxbench import`` (issue 17.1): every failure is one line naming the file, the
batch goes on, repairs and dropped records are warned about and counted per file."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.cli import main
from ctxbench.errors import InputError
from ctxbench.transcripts.canonical import read_transcripts, write_transcripts
from ctxbench.transcripts.importer import TranscriptWarning, import_file
from tests.helpers import coding_transcript

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
CHAT = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Fix the bug."},
    {"role": "assistant", "content": "Done."},
]


def imported(path: Path) -> tuple[list, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TranscriptWarning)
        transcripts = import_file(path)
    return transcripts, [str(w.message) for w in caught if issubclass(w.category, TranscriptWarning)]


def hostile_folder(src: Path) -> dict[str, str]:
    """Good fixtures plus one file per kind of hostile input; returns bad name -> expected problem."""
    shutil.copytree(FIXTURES, src / "good")
    bad = src / "bad"
    bad.mkdir()
    (bad / "bomb.json").write_text("[" * 100_000)
    os.symlink("loop_b.json", bad / "loop_a.json")
    os.symlink("loop_a.json", bad / "loop_b.json")
    os.symlink("missing.json", bad / "dangling.json")
    os.mkfifo(bad / "pipe.jsonl")
    (bad / "empty_list.json").write_text("[]")
    (bad / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (bad / "openhands.jsonl").write_text('{"instance_id": "x", "history": [\n{"broken\n')
    os.symlink("..", bad / "up")  # a directory loop: bad/up -> src
    return {
        "bomb.json": "nested deeper than",
        "loop_a.json": "symbolic link loop",
        "loop_b.json": "symbolic link loop",
        "dangling.json": "broken symbolic link",
        "pipe.jsonl": "not a regular file (a named pipe)",
        "empty_list.json": "nothing usable",
        "binary.json": "binary data",
        "openhands.jsonl": "not valid JSON",
        "up": "symbolic link loop",
    }


def test_a_hostile_folder_fails_file_by_file_and_imports_every_good_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = hostile_folder(tmp_path / "src")
    out = tmp_path / "out"
    assert main(["import", str(tmp_path / "src"), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    failed = [line for line in captured.out.splitlines() if line.startswith("FAILED")]
    for name, problem in expected.items():
        mine = [line for line in failed if f"/{name}:" in line]
        assert len(mine) == 1 and problem in mine[0], (name, failed)
    assert len(failed) == len(expected)
    good = sorted(p.name for p in FIXTURES.iterdir())
    written = sorted(p.relative_to(out / "good").as_posix() for p in (out / "good").rglob("*.jsonl"))
    assert written == sorted(str(Path(n).with_suffix(".jsonl")) for n in good)
    assert f"total   files={len(good)} failed={len(expected)}" in captured.out


def test_strict_stops_at_the_first_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a_bad.json").write_text("[]")
    shutil.copy(FIXTURES / "openai_chat.json", src / "b_good.json")
    assert main(["import", str(src), "--out", str(tmp_path / "out"), "--strict"]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("FAILED") and "a_bad.json" in lines[0]
    assert not (tmp_path / "out" / "b_good.jsonl").exists()
    assert main(["import", str(src / "b_good.json"), "--out", str(tmp_path / "out"), "--strict"]) == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory; see the fake below")
def test_an_unreadable_sub_directory_is_a_failure_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src"
    (src / "locked").mkdir(parents=True)
    shutil.copy(FIXTURES / "openai_chat.json", src)
    (src / "locked").chmod(0)
    try:
        assert main(["import", str(src), "--out", str(tmp_path / "out")]) == 2
    finally:
        (src / "locked").chmod(0o755)
    out = capsys.readouterr().out
    assert "locked: cannot list directory: permission denied" in out and "failed=1" in out


def test_an_unreadable_sub_directory_is_a_failure_line_fake_scandir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fake, named as such: as root, chmod cannot make a directory unreadable.
    src = tmp_path / "src"
    (src / "locked").mkdir(parents=True)
    shutil.copy(FIXTURES / "openai_chat.json", src)
    real_scandir = os.scandir

    def fake_scandir(path: str | os.PathLike[str] = ".") -> object:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", fake_scandir)
    assert main(["import", str(src), "--out", str(tmp_path / "out")]) == 2
    out = capsys.readouterr().out
    assert f"FAILED  {src / 'locked'}: cannot list directory: permission denied" in out
    assert "total   files=1 failed=1" in out


def test_a_5000_digit_integer_and_lone_surrogates_are_repaired_and_written(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    chat = [dict(m) for m in CHAT]
    chat[2]["usage"] = "USAGE"
    text = json.dumps(chat).replace('"USAGE"', '{"prompt_tokens": ' + "9" * 5000 + ', "completion_tokens": 3}')
    path.write_text(text.replace("Fix the bug.", "Fix \\ud800 the bug."))
    (t,), caught = imported(path)
    assert t.messages[1].content == "Fix \ufffd the bug."
    assert "usage" not in t.messages[2].metadata  # not an integer any more: no usage, not a wrong one
    assert any("1 integer(s) longer than 19 digits kept as text" in w for w in caught)
    assert any("1 string(s) with lone UTF-16 surrogates" in w for w in caught)
    (back,) = read_transcripts(write_transcripts(tmp_path / "out.jsonl", [t]))
    assert back.messages[1].content == "Fix \ufffd the bug."


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_utf16_file_is_read_as_utf16_not_called_invalid_utf8(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "wide.json"
    path.write_bytes(json.dumps(CHAT, ensure_ascii=False).encode(encoding))
    (t,), caught = imported(path)
    assert [m.content for m in t.messages] == [m["content"] for m in CHAT]
    assert len(caught) == 1 and "not UTF-8: read as UTF-" in caught[0]


def test_a_symlink_loop_named_on_the_command_line_is_not_no_such_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.symlink("self.json", tmp_path / "self.json")
    assert main(["import", str(tmp_path / "self.json"), "--out", str(tmp_path / "out")]) == 2
    out = capsys.readouterr().out
    assert "symbolic link loop" in out and "no such file" not in out
    with pytest.raises(InputError, match="symbolic link loop"):
        import_file(tmp_path / "self.json")


def test_a_special_file_named_explicitly_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^/dev/null: not a regular file \(a character device\)$"):
        import_file("/dev/null")


def test_a_canonical_file_of_an_unknown_schema_version_is_named(tmp_path: Path) -> None:
    good = write_transcripts(tmp_path / "good.jsonl", [coding_transcript(rounds=2)])
    (t,), _ = imported(good)  # re-importing a canonical file keeps it, probes included
    assert t.probes and t.to_dict() == next(iter(read_transcripts(good))).to_dict()
    future = tmp_path / "future.jsonl"
    future.write_text(good.read_text().replace("ctxbench.transcript/1", "ctxbench.transcript/999"))
    with pytest.raises(InputError) as info:
        import_file(future)
    assert str(info.value) == (
        f"{future}:line 1: unsupported schema version 'ctxbench.transcript/999' "
        "(this ctxbench reads ctxbench.transcript/1)"
    )
    with pytest.raises(InputError, match="unsupported schema version"):
        list(read_transcripts(future))


# --- warnings for every record dropped or repaired ---------------------------------------------------


def test_duplicate_tool_call_ids_are_renamed_paired_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call, call]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c1", "content": "two"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "three"},
    ]
    path.write_text(json.dumps(messages))
    (t,), caught = imported(path)
    ids = [c.id for m in t.messages for c in m.tool_calls]
    assert ids == ["c1", "c1~2", "c1~3"]
    assert [m.tool_call_id for m in t.messages if m.role == "tool"] == ids
    assert caught == [
        f"{path}:dup:message 1: 2 tool-call id(s) used by an earlier call renamed <id>~2, ~3... "
        "so results pair (first one here)"
    ]


def test_tool_calls_that_are_not_a_list_are_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "bash.json"
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok", "tool_calls": "bash"}]
    path.write_text(json.dumps(messages))
    (t,), caught = imported(path)
    assert t.messages[1].tool_calls == ()
    assert caught == [f"{path}:$[1]: tool_calls is not a list (str 'bash'); ignored"]


def test_dropped_claude_code_records_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "cc.jsonl"
    rows = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": "not an object"},
        {"type": "mystery", "uuid": "m1"},
        [1, 2],
        {"type": "assistant", "uuid": "a2", "parentUuid": "u1", "message": {"id": "r", "content": "hello"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (t,), caught = imported(path)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert caught == [
        f"{path}:line 2: 3 record(s) dropped (first one here): assistant record without a message object x1, "
        "not a JSON object x1, unknown type 'mystery' x1"
    ]


def test_traj_steps_with_missing_keys_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "steps.traj"
    steps = [{"response": "ls", "observation": "a b"}, {"observation": "x"}, {"thought": "t"}, {"action": "pwd"}]
    path.write_text(json.dumps({"trajectory": steps, "info": {}}))
    (t,), caught = imported(path)
    assert len(t.messages) == 8
    assert sorted(caught) == [
        f"{path}:$.trajectory[1]: 1 step(s) without response, thought or action (first one here); "
        "read as empty response",
        f"{path}:$.trajectory[2]: 2 step(s) without observation (first one here); read as empty observation",
    ]


def test_the_cli_counts_warnings_per_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bash.json"
    path.write_text(json.dumps([{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": "bash"}]))
    assert main(["import", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "warnings=1" in out.splitlines()[0] and "total   files=1 failed=0" in out and "warnings=1 " in out


# --- fuzzing the importers: any mutation of a real-shaped file is imported or is one InputError ----------

KEYS = [
    "role",
    "content",
    "tool_calls",
    "id",
    "function",
    "name",
    "arguments",
    "type",
    "messages",
    "history",
    "trajectory",
    "traj",
    "usage",
    "prompt_tokens",
    "text",
    "tool_use_id",
    "message",
    "uuid",
    "action",
]
JSON_FIXTURES = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl"))
ODD_STRINGS = ["", "\ud800", "\x00", "a" * 5000, "🙂", "\u202e", "${oops}", "[", "null"]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(ODD_STRINGS)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(KEYS), children, max_size=4),
    max_leaves=12,
)


def _places(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _places(v, (*path, i))
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _mutated(fixture: Path, data: st.DataObject) -> bytes:
    text = fixture.read_text("utf-8")
    if fixture.suffix == ".jsonl":
        lines = [line for line in text.splitlines() if line.strip()]
        good = [i for i, line in enumerate(lines) if _parses(line)]  # a fixture may hold a bad line on purpose
        i = data.draw(st.sampled_from(good))
        row = json.loads(lines[i])
        lines[i] = json.dumps(_replace(row, data.draw(st.sampled_from(_places(row))), data.draw(json_values)))
        out = "".join(line + "\n" for line in lines)
    else:
        doc = json.loads(text)
        doc = _replace(doc, data.draw(st.sampled_from(_places(doc))), data.draw(json_values))
        out = json.dumps(doc, indent=data.draw(st.sampled_from([None, 1])))
    raw = out.encode("utf-8")
    cut = data.draw(st.sampled_from([None, None, None, len(raw) // 3, len(raw) - 1]))
    return raw[:cut] if cut is not None else raw


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_mutation_of_a_fixture_imports_or_is_one_input_error(tmp_path_factory, data) -> None:
    fixture = data.draw(st.sampled_from(JSON_FIXTURES))
    path = tmp_path_factory.mktemp("mut") / fixture.name
    path.write_bytes(_mutated(fixture, data))
    try:
        transcripts, _ = imported(path)
    except InputError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        return
    out = write_transcripts(path.with_suffix(".out.jsonl"), transcripts)  # writable: no surrogate left
    assert [t.to_dict() for t in read_transcripts(out)] == [t.to_dict() for t in transcripts]


def test_a_file_name_that_is_not_utf8_is_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = os.fsdecode(b"bad\xffname.json")
    (tmp_path / name).write_text(json.dumps(CHAT))
    assert main(["import", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    (written,) = (tmp_path / "out").iterdir()
    (t,) = read_transcripts(written)
    assert t.id == "bad\ufffdname" and "Traceback" not in capsys.readouterr().err


# --- structure that does not fit the detected parser --------------------------------------------------

SWE_HISTORY = [{"role": "user", "content": "Fix it."}, {"role": "assistant", "content": "Fixed."}]
MISFITS: dict[str, Any] = {
    # a SWE-agent-looking history whose items are lists of garbage, or strings
    "garbage_lists.json": {"history": [[1, 2], ["x"], [None]]},
    "strings.json": {"history": ["hello", "world"]},
    # OpenHands events whose fields are the wrong type
    "oh_wrong_types.json": {
        "instance_id": "a",
        "metadata": [1],
        "history": [
            {"action": "message", "source": "user", "args": "zzz", "message": "Fix it."},
            {"action": "run", "source": "agent", "tool_call_metadata": {"model_response": "text"}},
            {"action": "run", "source": "agent", "tool_call_metadata": {"model_response": {"choices": {"0": 1}}}},
            {
                "action": "run",
                "source": "agent",
                "tool_call_metadata": {"model_response": {"choices": [{"message": 5}]}},
            },
        ],
    },
}


@pytest.mark.parametrize("name", sorted(MISFITS))
def test_a_misfit_structure_imports_with_warnings_or_is_one_line_naming_the_place(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(MISFITS[name]))
    try:
        transcripts, caught = imported(path)
    except InputError as exc:  # anything else (AttributeError, TypeError) is the defect this guards against
        message = str(exc)
        assert message.startswith(f"{path}:") and "\n" not in message
        assert "Error:" not in message, message  # a reason, not a Python exception's repr
        return
    assert transcripts and transcripts[0].messages
    assert all(w.startswith(f"{path}:$") for w in caught), caught


def test_swe_agent_rows_in_a_json_list_or_jsonl_are_read_row_by_row(tmp_path: Path) -> None:
    rows = [{"history": SWE_HISTORY}, "not a row", {"history": SWE_HISTORY}]
    (tmp_path / "runs.json").write_text(json.dumps(rows))
    (tmp_path / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    for path, places in ((tmp_path / "runs.json", "$[1]"), (tmp_path / "runs.jsonl", "line 2")):
        transcripts, caught = imported(path)
        assert [t.id for t in transcripts] == ["runs#0", "runs#2"]
        assert [m.content for m in transcripts[1].messages] == ["Fix it.", "Fixed."]
        assert len(caught) == 1 and caught[0].startswith(f"{path}:{places}"), caught


def test_a_row_that_breaks_the_parser_skips_that_row_with_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxbench.transcripts.formats import openhands

    real = openhands._instance

    def flaky(events: list[Any], tid: str, ctx: Any, prefix: str, meta: dict[str, Any]) -> Any:
        if meta.get("instance_id") == "bad":
            raise TypeError("an importer defect")
        return real(events, tid, ctx, prefix, meta)

    monkeypatch.setattr(openhands, "_instance", flaky)
    event = {"action": "message", "source": "user", "args": {"content": "Fix it."}}
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(json.dumps({"instance_id": i, "history": [event]}) for i in ("ok", "bad", "ok2")))
    transcripts, caught = imported(path)
    assert [t.id for t in transcripts] == ["output#ok", "output#ok2"]
    assert [w for w in caught if "line 2" in w and "skipped" in w], caught
    path.write_text(json.dumps({"instance_id": "bad", "history": [event]}))
    with pytest.raises(InputError) as info:
        imported(path)
    assert str(info.value).startswith(f"{path}:$: ") and "\n" not in str(info.value)


def test_a_folder_with_misfit_files_fails_each_on_one_line_and_imports_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name, value in MISFITS.items():
        (src / name).write_text(json.dumps(value))
    (src / "rows.json").write_text(json.dumps([{"history": SWE_HISTORY}, [1, 2]]))
    (src / "ints.json").write_text(json.dumps({"instance_id": "z", "history": [[{"action": 1}, {"observation": 2}]]}))
    shutil.copy(FIXTURES / "openai_chat.json", src / "good.json")
    main(["import", str(src), "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    lines = [line for line in captured.out.splitlines() if line.startswith(("ok", "FAILED"))]
    assert len(lines) == len(MISFITS) + 3, captured.out
    assert all("Error:" not in line for line in lines), lines
    assert any(line.startswith("ok") and "good.json" in line for line in lines)
    assert any(line.startswith("ok") and "rows.json" in line for line in lines)
