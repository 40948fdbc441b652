"""scripts/sweep_sharing.py on a real Hydra sweep of dbgpt over one bundled transcript: settings
whose thresholds make the same decisions are counted as copies, the others as distinct."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CTXBENCH

ROOT = Path(__file__).resolve().parent.parent


def test_equal_settings_are_counted_as_copies(tmp_path: Path) -> None:
    # synth-sql_060k peaks at a ratio of 0.51 of its budget: warning 0.5 compacts, 0.6 and 0.7 never do.
    env = {**os.environ, "CTXBENCH_COUNT_CACHE": "off"}
    args = [
        "run",
        "-m",
        "strategy=dbgpt",
        "strategy.params.max_context_tokens=null",
        "strategy.params.warning_threshold=0.5,0.6,0.7",
        "dataset.include=[synth-sql_060k]",
        "hydra/launcher=basic",
        "progress=false",
        f"output.root={tmp_path}",
    ]
    subprocess.run([*CTXBENCH, *args], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sweep_sharing.py"), str(tmp_path / "default")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "synth-sql_060k: 3 settings, 2 distinct cells (group sizes [2, 1]); 1 copies" in done.stdout
    assert "all: 3 cells, 2 distinct (1 could be copies" in done.stdout
