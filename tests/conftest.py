import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRANSCRIPTS = Path(os.environ.get("CTXBENCH_SHARED_TRANSCRIPTS", ROOT.parent / "shared" / "transcripts"))
CTXBENCH = [sys.executable, "-m", "ctxbench.cli"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def shared_transcripts() -> Path:
    if not SHARED_TRANSCRIPTS.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_TRANSCRIPTS} (set CTXBENCH_SHARED_TRANSCRIPTS)")
    return SHARED_TRANSCRIPTS
