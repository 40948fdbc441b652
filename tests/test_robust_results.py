"""Tampered results folders and baselines (issue 29), every shape made here from a real run.

What ctxbench wrote is read back by one reader (``ctxbench/results/reader.py``): ``report``,
``check``, ``baseline``, the pytest plugin and ``ctxbench.results.load`` give one line naming the
file and the place (exit 2) for a cell that is incomplete, altered or of another schema, and a
resumed run recomputes such a cell (saying so) and ends equal to a clean run. A copied results
folder reports its own cells only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import ctxbench.results
from ctxbench.errors import InputError
from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.test_gate_paired import _transcript

pytest_plugins = ["pytester"]


def _ctxbench(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def _run_args(base: Path, root: Path) -> list[str]:
    return [
        "run",
        "strategy=sliding_window",
        f"dataset.paths=[{base / 'data'}]",
        f"output.root={root}",
        "output.name=r",
        "model=gpt-4-32k",
        "model.context_window=16000",
        "model.reserved_output_tokens=1000",
        "progress=false",
    ]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of two transcripts (its cells hold calls, events and retention) and a baseline of it."""
    base = tmp_path_factory.mktemp("clean")
    write_transcripts(base / "data" / "d.jsonl", [_transcript(seed) for seed in range(2)])
    done = _ctxbench(*_run_args(base, base / "results"))
    assert done.returncode == 0, done.stderr
    done = _ctxbench("baseline", str(base / "results" / "r"), "--out", str(base / "baseline.json"))
    assert done.returncode == 0, done.stderr
    return base


@pytest.fixture
def copy(clean: Path, tmp_path: Path) -> Path:
    shutil.copytree(clean, tmp_path / "copy", symlinks=True)
    return tmp_path / "copy"


def _cells(base: Path) -> list[Path]:
    return sorted(p.parent for p in (base / "results" / "r" / "cells").rglob("summary.json"))


def _set_summary(change: Callable[[dict], object]) -> Callable[[Path], str]:
    def tamper(cell: Path) -> str:
        data = json.loads((cell / "summary.json").read_text())
        result = change(data)
        text = json.dumps(data if result is None else result)
        (cell / "summary.json").write_text(text.replace('"__NaN__"', "NaN"))
        return "summary.json"

    return tamper


def _delete(name: str) -> Callable[[Path], str]:
    def tamper(cell: Path) -> str:
        (cell / name).unlink()
        return name

    return tamper


def _append(name: str, text: str) -> Callable[[Path], str]:
    def tamper(cell: Path) -> str:
        with (cell / name).open("a") as handle:
            handle.write(text)
        return name

    return tamper


def _events_without_type(cell: Path) -> str:
    lines = (cell / "events.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record.pop("type")
    (cell / "events.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    return "events.jsonl"


TAMPERINGS = {
    "summary without metrics": _set_summary(lambda d: d.pop("metrics")),
    "summary a list": _set_summary(lambda d: [d]),
    "summary with NaN": _set_summary(lambda d: d["metrics"].__setitem__("savings", "__NaN__")),
    "summary with a string": _set_summary(lambda d: d["metrics"].__setitem__("tokens_sent_total", "many")),
    "summary of an old schema": _set_summary(lambda d: d.__setitem__("schema_version", "ctxbench.results/0")),
    "summary with a non-string strategy": _set_summary(lambda d: d["cell"].__setitem__("strategy", 5)),
    "summary deleted": _delete("summary.json"),
    "calls with a garbage line": _append("calls.jsonl", "{garbage\n"),
    "calls deleted": _delete("calls.jsonl"),
    "retention deleted": _delete("retention.jsonl"),
    "events record without type": _events_without_type,
    "manifest deleted": _delete("manifest.json"),
}


def _one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    text = done.stdout + done.stderr
    assert done.returncode == 2, text
    assert "Traceback" not in text, text
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, text
    for word in words:
        assert word in errors[0], errors[0]


@pytest.mark.parametrize("shape", list(TAMPERINGS))
def test_a_tampered_cell_is_named_by_every_reader_and_recomputed_on_resume(clean: Path, copy: Path, shape: str) -> None:
    cell = _cells(copy)[0]
    name = TAMPERINGS[shape](cell)
    results = copy / "results" / "r"
    shown = cell.name  # the cell's folder is in every message, with the file when it is one
    _one_line_error(_ctxbench("report", str(results), "--out", str(copy / "rep"), "--no-progress"), shown)
    _one_line_error(_ctxbench("check", "--baseline", str(copy / "baseline.json"), str(results)), shown)
    _one_line_error(_ctxbench("baseline", str(results), "--out", str(copy / "b2.json")), shown)
    with pytest.raises(InputError, match=cell.name):
        ctxbench.results.load(results)
    resumed = _ctxbench(*_run_args(copy, copy / "results"))
    assert resumed.returncode == 0, resumed.stderr
    assert "(1 recomputed: incomplete or altered)" in resumed.stderr, resumed.stderr
    logs = "".join(p.read_text() for p in (results / "jobs").rglob("*.log"))
    assert f"recompute {cell.name}: not a complete cell" in logs
    assert name  # the file tampered with is back, equal to the clean run's
    for path in (_cells(clean)[0]).iterdir():
        if path.name not in ("summary.json", "manifest.json"):
            assert (cell / path.name).read_bytes() == path.read_bytes(), path.name
    assert len(ctxbench.results.load(results)) == len(ctxbench.results.load(clean / "results" / "r"))


def test_a_copied_results_folder_reports_its_own_cells(clean: Path, copy: Path) -> None:
    for cells_file in copy.rglob("cells.json"):
        assert not any(Path(c).is_absolute() for c in json.loads(cells_file.read_text())), cells_file
    job = next((copy / "results" / "r" / "jobs").rglob("cells.json")).parent
    done = _ctxbench("report", str(copy / "results" / "r"), str(job), "--out", str(copy / "rep"), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert f"{len(_cells(clean))} cells" in done.stdout, done.stdout
    moved = copy.parent / "moved"
    shutil.move(copy, moved)
    from ctxbench.report.load import gather

    found = gather([next((moved / "results" / "r" / "jobs").rglob("cells.json")).parent])
    assert [p.resolve().is_relative_to(moved.resolve()) for p in found.paths] == [True] * len(_cells(clean))


ODD_STRATEGIES = ["../../evil", "<b>html</b>", "a/b", ".."]


def test_odd_strategy_names_report_inside_out_and_escaped(clean: Path, tmp_path: Path) -> None:
    """Names a sealed cell may carry (a plugin strategy's name): paths, HTML; the report stays in --out."""
    from ctxbench.results.store import seal

    cell = _cells(clean)[0]
    for i, name in enumerate(ODD_STRATEGIES):
        target = tmp_path / "res" / "cells" / "x" / f"c{i}"
        shutil.copytree(cell, target)
        data = json.loads((target / "summary.json").read_text())
        data["cell"].update(strategy=name, transcript=f"t{i}")
        (target / "summary.json").write_text(json.dumps(data))
        seal(target)
    before = {p for p in tmp_path.rglob("*")}
    done = _ctxbench("report", str(tmp_path / "res"), "--out", str(tmp_path / "rep"), "--no-progress")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    written = {p for p in tmp_path.rglob("*")} - before
    assert written and all(p.is_relative_to(tmp_path / "rep") for p in written), sorted(written)
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "<b>html</b>" not in html and "&lt;b&gt;html&lt;/b&gt;" in html


def _baseline_with(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        data = json.loads(path.read_text())
        result = change(data)
        text = json.dumps(data if result is None else result)
        path.write_text(text.replace('"__NaN__"', "NaN").replace('"__Inf__"', "Infinity"))

    return make


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"m": value}
    return value


def _set_metric(name: str, value: object) -> Callable[[dict], None]:
    return lambda d: d["entries"][0]["metrics"].__setitem__(name, value)


BAD_BASELINES = {
    "metrics a list": _baseline_with(lambda d: d["entries"][0].__setitem__("metrics", [1, 2])),
    "a string value": _baseline_with(_set_metric("retention", "high")),
    "NaN": _baseline_with(_set_metric("savings", "__NaN__")),
    "infinity": _baseline_with(_set_metric("overflow_errors", "__Inf__")),
    "retention above 1": _baseline_with(_set_metric("retention", 1.5)),
    "negative retries": _baseline_with(_set_metric("retries", -3)),
    "nested too deep": _baseline_with(_set_metric("savings", _nested(200))),
    "UTF-16": lambda p: p.write_bytes(p.read_text().encode("utf-16")),
    "empty": lambda p: p.write_bytes(b""),
    "entries not a list": _baseline_with(lambda d: d.__setitem__("entries", {"a": 1})),
}


@pytest.mark.parametrize("shape", list(BAD_BASELINES))
def test_a_baseline_that_cannot_be_right_is_one_line(clean: Path, tmp_path: Path, shape: str) -> None:
    baseline = tmp_path / "baseline.json"
    shutil.copy(clean / "baseline.json", baseline)
    BAD_BASELINES[shape](baseline)
    _one_line_error(_ctxbench("check", "--baseline", str(baseline), str(clean / "results" / "r")), "baseline.json")


def test_the_pytest_plugin_names_a_bad_baseline_in_one_line(clean: Path, pytester: pytest.Pytester) -> None:
    baseline = pytester.path / "baseline.json"
    shutil.copy(clean / "baseline.json", baseline)
    BAD_BASELINES["metrics a list"](baseline)
    pytester.makepyfile("def test_gate(ctxbench_check):\n    ctxbench_check()\n")
    args = ["--ctxbench-results", str(clean / "results" / "r")]
    result = pytester.runpytest(*args, "--ctxbench-baseline", str(baseline))
    result.assert_outcomes(errors=0, failed=1)
    text = result.stdout.str()
    assert "baseline.json:$.entries[0].metrics" in text and "Traceback" not in text, text


def test_json_nested_up_to_the_limit_is_read_and_deeper_is_one_error(tmp_path: Path) -> None:
    from ctxbench.results.reader import MAX_DEPTH, parse_json

    def nested(containers: int) -> bytes:
        return ("[" * containers + "1" + "]" * containers).encode()

    assert parse_json(nested(MAX_DEPTH - 1), tmp_path / "f") is not None  # the 1 is at depth MAX_DEPTH
    with pytest.raises(InputError, match="nested deeper"):
        parse_json(nested(MAX_DEPTH), tmp_path / "f")
    # Brackets inside strings count for nothing (the quick count only decides what is walked).
    assert parse_json(json.dumps({"evidence": "[" * 500, "span": [1, 2]}).encode(), tmp_path / "f")["span"] == [1, 2]
    with pytest.raises(InputError, match="nested deeper"):
        parse_json(json.dumps({"a": "[" * 5, "b": _nested(MAX_DEPTH)}).encode(), tmp_path / "f")
    with pytest.raises(InputError, match="Unexpected UTF-8 BOM"):
        parse_json("\ufeff{}".encode(), tmp_path / "f")
