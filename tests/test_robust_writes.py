"""Writing where ctxbench cannot (issue 29): a full disk, a read-only folder, a folder where a file
should be. Every command gives one line and exit 2, keeps the file it would have replaced, and leaves
no temporary file behind; SIGTERM is handled like Ctrl-C (a message, exit 143, temporaries removed).

The full disk is a real 2 MB tmpfs filled to the last byte when this process may mount one (root);
otherwise a named fault injection: a ``sitecustomize`` on the subprocess' path makes ``os.fsync``
fail with ENOSPC for files under the folder (the error a full disk gives at the latest).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.test_gate_paired import _transcript
from tests.test_hf_import import swegym_row

FSYNC_FAULT = """
import errno, os
_under = os.environ.get("CTXBENCH_TEST_ENOSPC_UNDER")
_fsync = os.fsync
def _full_disk_fsync(fd):  # named fault injection: the disk under _under is full
    if _under and os.readlink(f"/proc/self/fd/{fd}").startswith(_under):
        raise OSError(errno.ENOSPC, "No space left on device")
    return _fsync(fd)
os.fsync = _full_disk_fsync
"""


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _ctxbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env or _env())


def _mount(folder: Path, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    return done.returncode == 0


def _fill(folder: Path) -> None:
    """Write zeros until the file system says it is full."""
    with contextlib.suppress(OSError), (folder / "filler").open("wb") as handle:
        while True:
            handle.write(b"\0" * 65536)
            handle.flush()
            os.fsync(handle.fileno())


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """(folder on a full disk, env for the subprocess); ``prepare`` files are written before it fills."""
    folder = tmp_path / "disk"
    if _mount(folder, "size=2m"):
        yield folder, _env()
        subprocess.run(["umount", "-l", str(folder)], check=False)
        return
    folder.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FSYNC_FAULT)
    yield folder, _env(PYTHONPATH=f"{site}{os.pathsep}{ROOT}", CTXBENCH_TEST_ENOSPC_UNDER=str(folder))


def _make_full(folder: Path, env: dict[str, str]) -> None:
    if "CTXBENCH_TEST_ENOSPC_UNDER" not in env:
        _fill(folder)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ro"
    if _mount(folder, "ro,size=1m"):
        yield folder
        subprocess.run(["umount", "-l", str(folder)], check=False)
        return
    if os.geteuid() == 0:
        pytest.fail("running as root without mount: no way to make a read-only folder")
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("results")
    write_transcripts(base / "data" / "d.jsonl", [_transcript(seed) for seed in range(2)])
    done = _ctxbench(
        "run",
        "strategy=sliding_window",
        f"dataset.paths=[{base / 'data'}]",
        f"output.root={base / 'results'}",
        "output.name=r",
        "model=gpt-4-32k",
        "model.context_window=16000",
        "model.reserved_output_tokens=1000",
        "progress=false",
    )
    assert done.returncode == 0, done.stderr
    return base / "results" / "r"


def _one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    text = done.stdout + done.stderr
    assert done.returncode == 2, text
    assert "Traceback" not in text and "Logging error" not in text, text
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, text
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp-")]


def test_baseline_on_a_full_disk_keeps_the_old_baseline(results: Path, full_disk: tuple[Path, dict[str, str]]) -> None:
    disk, env = full_disk
    target = disk / "base.json"
    assert _ctxbench("baseline", str(results), "--out", str(target), env=env).returncode == 0
    old = target.read_bytes()
    _make_full(disk, env)
    done = _ctxbench("baseline", str(results), "--out", str(target), env=env)
    _one_line_error(done, str(target), "no space left")
    assert target.read_bytes() == old
    assert _temporaries(disk) == []


def test_report_and_run_on_a_full_disk_are_one_line(results: Path, full_disk: tuple[Path, dict[str, str]]) -> None:
    disk, env = full_disk
    (disk / "report").mkdir()
    _make_full(disk, env)
    _one_line_error(_ctxbench("report", str(results), "--out", str(disk / "report"), "--no-progress", env=env))
    data = results.parent.parent / "data"
    run = _ctxbench("run", "strategy=none", f"dataset.paths=[{data}]", f"output.root={disk}", "progress=false", env=env)
    _one_line_error(run)
    assert _temporaries(disk) == []


def test_read_only_and_unwritable_targets_are_one_line(results: Path, read_only: Path, tmp_path: Path) -> None:
    _one_line_error(_ctxbench("baseline", str(results), "--out", str(read_only / "b.json")), "b.json")
    _one_line_error(_ctxbench("report", str(results), "--out", str(read_only / "rep"), "--no-progress"))
    data = results.parent.parent / "data"
    run = _ctxbench("run", "strategy=none", f"dataset.paths=[{data}]", f"output.root={read_only}", "progress=false")
    _one_line_error(run)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    _one_line_error(_ctxbench("baseline", str(results), "--out", str(folder)), "directory")
    afile = tmp_path / "a-file"
    afile.write_text("x")
    _one_line_error(_ctxbench("baseline", str(results), "--out", str(afile / "b.json")), "b.json")


def test_sigterm_during_import_exits_143_and_removes_its_temporary_file(tmp_path: Path) -> None:
    rows = [swegym_row(i) for i in range(20)]
    pq.write_table(pa.Table.from_pylist(rows * 400), tmp_path / "big.parquet")  # long enough to be caught mid-write
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*CTXBENCH, "import", str(tmp_path / "big.parquet"), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf")),
    )
    deadline = time.monotonic() + 120
    while not (out.exists() and _temporaries(out)) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the import ended before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stdout + stderr
    assert "terminated" in stderr and "Traceback" not in stderr, stderr
    assert _temporaries(out) == [] and not (out / "big.jsonl").exists()


def test_write_error_is_an_oserror_with_its_errno(tmp_path: Path) -> None:
    from ctxbench.atomic import WriteError, write_text_atomic

    folder = tmp_path / "x"
    folder.mkdir()
    with pytest.raises(WriteError) as caught:
        write_text_atomic(folder, "data")
    assert caught.value.errno == errno.EISDIR and isinstance(caught.value, OSError)
    assert str(caught.value) == f"cannot write {folder}: it is a directory"
