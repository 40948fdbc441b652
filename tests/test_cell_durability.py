"""A cell computed in a workspace is published durable: every file of it (those the replay wrote
there too) and its folders are fsynced before the one rename that publishes it, and its manifest
(hashed from the bytes in memory) matches the files as a reader checks them."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ctxbench.atomic import WriteError, fsync_together
from ctxbench.results.reader import verify_cell
from ctxbench.results.store import Cell


def test_every_file_and_folder_is_fsynced_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cell = Cell(tmp_path, "t", "none", "m", "h")
    work = cell.workspace()
    (work / "snapshots").mkdir()
    (work / "snapshots" / "op.jsonl").write_text('{"a": 1}\n', "utf-8")  # what the replay wrote
    synced: list[str] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def rename(src: str | Path, dst: str | Path) -> None:
        if Path(src) == work:  # the publishing rename: everything is durable by then
            names = {Path(p).relative_to(work).as_posix() for p in synced if p.startswith(str(work))}
            assert {".", "snapshots", "snapshots/op.jsonl", "calls.jsonl", "events.jsonl"} <= names
            assert {"retention.jsonl", "contexts.jsonl.gz", "summary.json", "manifest.json"} <= names
        real_rename(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    calls = [{"call": 0, "tokens_sent": 5, "tokens_uncompacted": 9, "accepted": True}]
    extra = {"retention.jsonl": "", "contexts.jsonl.gz": '{"levels": []}\n{"call": 0}\n'}
    folder = cell.write(calls=calls, events=[], metrics={"ok": 0.5}, info={}, extra_files=extra, workspace=work)
    assert not work.exists()
    assert verify_cell(folder)["metrics"] == {"ok": 0.5}  # the manifest covers every file as written
    assert (folder / "snapshots" / "op.jsonl").read_text("utf-8") == '{"a": 1}\n'


def test_a_failed_fsync_is_a_write_error_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [tmp_path / f"f{i}" for i in range(4)]
    for path in files:
        path.write_bytes(b"x")
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("f2"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(WriteError, match="cannot write .*f2: no space left"):
        fsync_together(files)
