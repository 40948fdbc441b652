"""The run's table fits the terminal: columns that do not fit go to a block below (each starting
with the strategy), the notes under it wrap, `--wide` prints one table; a share said once below
the table is in percent, like its columns (issue 27)."""

import subprocess

import pandas as pd

from ctxbench.report.tables import hoist_constant_columns, in_blocks
from tests.conftest import CTXBENCH


def _run(tmp_path, *args, columns=None):
    """Piped, as a test runs it: no terminal, so the width is said (report.width, as a terminal's)."""
    width = [f"report.width={columns}"] if columns else []
    done = subprocess.run(
        [*CTXBENCH, "run", "-q", "-m", "dataset.limit=1", *width, *args], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_table_fits_the_terminal_and_wide_is_one_table(tmp_path):
    narrow = _run(tmp_path, columns=100)
    assert max(len(line) for line in narrow.splitlines()) <= 100
    headers = [line.split() for line in narrow.splitlines() if line.strip().startswith("strategy ")]
    assert len(headers) >= 2  # the columns that did not fit went to a second block
    names = {word for header in headers for word in header}
    wide = _run(tmp_path, "--wide", columns=100)
    (one,) = [line.split() for line in wide.splitlines() if line.strip().startswith("strategy ")]
    assert names == set(one)  # the same columns, in one table
    assert max(len(line) for line in wide.splitlines()) > 100


def test_blocks_repeat_the_first_column():
    frame = pd.DataFrame({"strategy": ["a", "bb"], **{f"column_{i}": ["1,000,000", "2"] for i in range(8)}})
    text = in_blocks(frame, 60)
    blocks = text.split("\n\n")
    assert len(blocks) > 1 and all(b.splitlines()[0].split()[0] == "strategy" for b in blocks)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert in_blocks(frame, None) == frame.to_string(index=False)


def test_a_share_said_once_is_in_percent():
    frame = pd.DataFrame({"strategy": ["a", "b"], "retention": [0.5395, 0.5395], "calls": [1200, 1200]})
    _, said = hoist_constant_columns(frame)
    assert said == "retention 54.0%, calls 1,200"
