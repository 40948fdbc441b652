"""Hostile datasets for ``ctxbench import`` (issue 29): every shape is generated here with pyarrow or
``datasets`` and imported through the real CLI in a subprocess.

Split names from a dataset's own metadata never become paths outside ``--out``; shards and splits
the metadata lists but the folder lacks are errors; a corrupt parquet, ``.arrow`` or
``dataset_dict.json`` is one ``FAILED`` line naming the file while the other sources are imported;
rows whose message column is not a message list are skipped with a warning.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from ctxbench.transcripts.canonical import read_transcripts
from tests.test_hf_import import openai_row, run_import, swegym_row


def _good_parquet(path: Path, n: int = 2) -> Path:
    rows = [swegym_row(i) for i in range(n)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _no_traceback(result) -> None:  # type: ignore[no-untyped-def]
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr


def _files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_split_name_with_dot_dot_never_leaves_out(tmp_path: Path) -> None:
    saved = tmp_path / "data" / "runs"
    datasets.DatasetDict({"train": datasets.Dataset.from_list([swegym_row(0)])}).save_to_disk(str(saved))
    # The dataset's metadata names a split whose folder climbs out of --out once joined to it.
    evil = "x/../../pwned"  # its rows sit in data/pwned; joined to --out it names a file beside out/
    split_dir = saved / evil
    split_dir.mkdir(parents=True, exist_ok=True)
    for f in (saved / "train").iterdir():
        (split_dir / f.name).write_bytes(f.read_bytes())
    (saved / "dataset_dict.json").write_text(json.dumps({"splits": ["train", evil]}))
    before = _files_under(tmp_path)
    result = run_import([str(saved), "--out", str(tmp_path / "out")], tmp_path / "hf")
    _no_traceback(result)
    written = _files_under(tmp_path) - before
    outside = [p for p in written if not p.is_relative_to(tmp_path / "out") and not p.is_relative_to(tmp_path / "hf")]
    assert outside == [], (outside, result.stdout + result.stderr)
    assert all(p.parent == tmp_path / "out" for p in written if p.is_relative_to(tmp_path / "out")), written


def test_split_listed_but_absent_is_an_error_and_others_import(tmp_path: Path) -> None:
    saved = tmp_path / "runs"
    datasets.DatasetDict({"train": datasets.Dataset.from_list([swegym_row(0)])}).save_to_disk(str(saved))
    (saved / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    result = run_import([str(saved), "--out", str(tmp_path / "out")], tmp_path / "hf")
    _no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "test" in failed[0] and "missing" in failed[0], result.stdout
    assert len(list(read_transcripts(tmp_path / "out" / "runs.train.jsonl"))) == 1


def test_arrow_folder_missing_a_shard_is_an_error(tmp_path: Path) -> None:
    saved = tmp_path / "runs"
    datasets.Dataset.from_list([swegym_row(i) for i in range(6)]).save_to_disk(str(saved), num_shards=2)
    shards = sorted(saved.glob("*.arrow"))
    assert len(shards) == 2
    shards[1].unlink()
    result = run_import([str(saved), "--out", str(tmp_path / "out")], tmp_path / "hf")
    _no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "FAILED" in result.stdout and shards[1].name in result.stdout, result.stdout
    assert not (tmp_path / "out" / "runs.jsonl").exists()  # not 3 of 6 rows silently


def test_corrupt_sources_fail_one_line_each_and_the_others_import(tmp_path: Path) -> None:
    good = _good_parquet(tmp_path / "good.parquet")
    truncated = tmp_path / "truncated.parquet"
    data = _good_parquet(tmp_path / "whole.parquet").read_bytes()
    (tmp_path / "whole.parquet").unlink()
    truncated.write_bytes(data[: len(data) - 20])  # the footer cut
    arrow_dir = tmp_path / "arrowdir"
    datasets.Dataset.from_list([swegym_row(0)]).save_to_disk(str(arrow_dir))
    shard = next(arrow_dir.glob("*.arrow"))
    shard.write_bytes(b"\x00garbage" * 50)
    dict_dir = tmp_path / "dictdir"
    datasets.DatasetDict({"train": datasets.Dataset.from_list([swegym_row(1)])}).save_to_disk(str(dict_dir))
    (dict_dir / "dataset_dict.json").write_text('{"splits": ["tra')
    bad_sources = [truncated, arrow_dir, dict_dir]
    result = run_import([*map(str, bad_sources), str(good), "--out", str(tmp_path / "out")], tmp_path / "hf")
    _no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 3, result.stdout
    for source, line in zip(bad_sources, failed, strict=True):
        assert str(source) in line, line
    assert (dict_dir / "dataset_dict.json").name in failed[2]
    assert len(list(read_transcripts(tmp_path / "out" / "good.jsonl"))) == 2


def test_rows_without_a_message_list_are_skipped_with_a_warning(tmp_path: Path) -> None:
    rows = [
        {"messages": json.dumps([1, 2, 3])},  # messages that are ints
        {"messages": json.dumps([{"role": 1, "content": "a"}, {"role": 2, "content": "b"}])},  # roles that are ints
        {"messages": openai_row(0)["conversation"]},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "mixed.parquet")
    result = run_import([str(tmp_path / "mixed.parquet"), "--out", str(tmp_path / "out")], tmp_path / "hf")
    _no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "skipped_rows=2" in result.stdout, result.stdout
    assert result.stderr.count("warning: skipped") == 2, result.stderr
    imported = list(read_transcripts(tmp_path / "out" / "mixed.jsonl"))
    assert len(imported) == 1 and imported[0].messages


def test_a_file_with_no_usable_row_is_failed(tmp_path: Path) -> None:
    rows = [{"messages": json.dumps([7, 8])}, {"messages": json.dumps([{"role": 3, "content": "x"}])}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "ints.parquet")
    result = run_import([str(tmp_path / "ints.parquet"), "--out", str(tmp_path / "out")], tmp_path / "hf")
    _no_traceback(result)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "FAILED" in result.stdout and "ints.parquet" in result.stdout
    assert not (tmp_path / "out" / "ints.jsonl").exists()
