"""`ctxbench run` on a dataset with bad files (issue 17.2, 17.5): each bad file is one line, counted,
and skipped; the good files are replayed; `--strict` (or dataset.strict=true) stops at the first."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript

BAD_FILES = {
    "b_truncated.jsonl": ('{"id": "z", "messages": [\n', "b_truncated.jsonl:line 1: not valid JSON"),
    "c_role.jsonl": (
        '{"id": "r", "messages": [{"role": "robot", "content": "x"}]}\n',
        "c_role.jsonl:line 1: not a ctxbench transcript (unknown role 'robot')",
    ),
    "d_bomb.jsonl": ("[" * 50_000 + "\n", "d_bomb.jsonl:line 1: not valid here: JSON nested too deeply"),
    "e_utf8.jsonl": (b'{"id": "\xff"}\n', "e_utf8.jsonl:line 1: invalid UTF-8"),
}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=4, tid="a")])
    good = write_transcripts(data / "z_good.jsonl", [coding_transcript(rounds=3, seed=1, tid="z")])
    future = good.read_text("utf-8").replace("ctxbench.transcript/1", "ctxbench.transcript/999")
    (data / "f_future.jsonl").write_text(future, encoding="utf-8")
    for name, (content, _) in BAD_FILES.items():
        (data / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return data


def cells(root: Path) -> list[str]:
    return sorted(json.loads(p.read_text())["cell"]["transcript"] for p in root.rglob("summary.json"))


def test_bad_dataset_files_are_skipped_named_and_counted(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "r"
    result = run("run", f"dataset.paths=[{dataset}]", f"output.root={out}", "progress=false")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert cells(out) == ["a", "z"]  # the good files before and after the bad ones are replayed
    for _, expected in BAD_FILES.values():
        assert expected in result.stderr
    assert (
        "f_future.jsonl:line 1: unsupported schema version 'ctxbench.transcript/999' "
        "(this ctxbench reads ctxbench.transcript/1)" in result.stderr
    )
    assert f"{len(BAD_FILES) + 1} dataset file(s) skipped" in result.stdout
    (skipped_file,) = out.rglob("skipped_dataset_files.json")
    assert len(json.loads(skipped_file.read_text())) == len(BAD_FILES) + 1


def test_strict_stops_at_the_first_bad_file(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "r"
    for flag in ("--strict", "dataset.strict=true"):
        result = run("run", f"dataset.paths=[{dataset}]", f"output.root={out}", "progress=false", flag)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "b_truncated.jsonl:line 1: not valid JSON" in result.stderr
        assert cells(out) == []


def test_unreadable_dataset_folders_and_special_files_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxbench.transcripts.canonical import read_dataset

    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=2, tid="a")])
    (data / "locked").mkdir()
    os.mkfifo(data / "pipe.jsonl")
    os.symlink("loop.jsonl", data / "loop.jsonl")
    real_scandir = os.scandir

    def fake_scandir(path: object = ".") -> object:  # a fake, named as such: root reads any folder
        if Path(str(path)).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", fake_scandir)
    found = read_dataset([data])
    assert [f.path.name for f in found.files] == ["a.jsonl"]  # the rest is still read
    assert found.problems[:1] == [f"{data / 'locked'}: cannot list directory: permission denied"]
    monkeypatch.setattr(os, "scandir", real_scandir)
    found = read_dataset([data])
    assert [f.path.name for f in found.files] == ["a.jsonl"]
    assert sorted(p.split(": ", 1)[1] for p in found.problems) == [
        "cannot read: symbolic link loop (too many levels of symbolic links)",
        "not a regular file (a named pipe)",
    ]


def test_a_dataset_read_again_in_one_process_gives_equal_independent_copies(tmp_path: Path) -> None:
    from ctxbench.transcripts import canonical
    from ctxbench.transcripts.canonical import read_dataset
    from ctxbench.transcripts.formats._common import dedupe_ids
    from ctxbench.transcripts.model import Message

    data = tmp_path / "data"
    first = coding_transcript(rounds=3, tid="a")
    first.messages[1] = Message(role="user", content=first.messages[1].content, metadata={"usage": {"n": [1]}})
    write_transcripts(data / "a.jsonl", [first])
    one = read_dataset([data]).files[0]
    assert (data / "a.jsonl").resolve() not in canonical._READ  # read once (one job): no second copy held
    two, three = read_dataset([data]).files[0], read_dataset([data]).files[0]  # parsed, kept; then from it
    assert one.hash == two.hash == three.hash
    assert [t.to_dict() for t in one.transcripts] == [t.to_dict() for t in three.transcripts]
    # What a job does to its copy (a renamed id, metadata a layer writes, counts cached) the next read never sees.
    for read in (one, two, three):
        with pytest.warns(UserWarning, match="duplicate transcript id"):
            dedupe_ids(read.transcripts, {"a"})
        read.transcripts[0].messages[1].metadata["usage"]["n"].append(2)
        read.transcripts[0].messages[2].token_cache["o200k"] = 7
    four = read_dataset([data]).files[0].transcripts[0]
    assert four.id == "a" and four.messages[1].metadata == {"usage": {"n": [1]}}
    assert four.to_dict() == first.to_dict() and all(not m.token_cache and m.origin is None for m in four.messages)
    # A changed file is read again, even at the same size.
    size = (data / "a.jsonl").stat().st_size
    changed = coding_transcript(rounds=3, tid="b")
    changed.messages[1] = first.messages[1]
    write_transcripts(data / "a.jsonl", [changed])
    assert (data / "a.jsonl").stat().st_size == size
    again = read_dataset([data]).files[0]
    assert again.hash != one.hash and [t.id for t in again.transcripts] == ["b"]
