"""Every command's --help: exit 0, plain text (no RST ``markup``, no literal %%), a description
that is a whole sentence, and report --title with help (issue 18.7)."""

import os
import re
import subprocess

import pytest

from ctxbench.cli import COMMANDS
from tests.conftest import CTXBENCH


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "run"])
def test_help_is_plain_complete_text(command):
    out = subprocess.run([*CTXBENCH, command, "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "``" not in text and "%%" not in text
    description = text.split("\n\n", 2)[1]
    assert description.rstrip().endswith((".", ")")), description  # not cut mid-sentence
    if command == "report":
        assert re.search(r"--title TITLE\s+\S", text)  # it had no help


def test_run_help_and_top_level_usage_name_the_exit_codes():
    top = subprocess.run([*CTXBENCH, "--help"], capture_output=True, text=True).stdout
    assert "Exit codes: 0 done, 1 check failed (regression), 2 bad usage/config/input, 3 internal error" in top
    run = subprocess.run([*CTXBENCH, "run", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "ctxbench run" in run.stdout


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["ls", "strategies"]])
def test_a_reader_that_went_away_is_no_error(args):
    # `ctxbench --help | head -3`: the pipe's reader closes before ctxbench writes. Closed here before the start,
    # so every write meets EPIPE.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = subprocess.run([*CTXBENCH, *args], stdout=write_end, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write_end)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
