"""strategy=inspect_compaction: inspect_ai 0.3.285's own compaction (edit, trim, summary, auto) driven by
the replay, offline, with ctxbench's summariser behind CompactionSummary."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from ctxbench.build import build_estimator, build_model, build_strategy, build_summariser
from ctxbench.replay.engine import replay
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts import load_transcripts
from ctxbench.transcripts.model import Transcript
from ctxbench.upstream import missing
from tests.conftest import ROOT
from tests.upstream_required import fail_if_missing

REASON = missing("inspect_compaction")


@pytest.fixture(autouse=True)
def _installed() -> None:
    fail_if_missing("inspect_compaction", REASON)


CONFIG_DIR = ROOT / "ctxbench" / "configs"


def _replay(transcript: Transcript, kind: str, *overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["strategy=inspect_compaction", f"strategy.params.kind={kind}", *overrides])
    model = build_model(cfg)
    return replay(
        transcript,
        build_strategy(cfg),
        build_estimator(cfg),
        model,
        TokenCounter(get_tokenizer(model.tokenizer)),
        summariser=build_summariser(cfg, None),
    )


@pytest.mark.parametrize("kind", ["edit", "trim", "summary", "auto"])
def test_each_kind_compacts_the_bundled_transcript_offline(kind: str) -> None:
    (transcript,) = load_transcripts([ROOT / "ctxbench" / "data" / "bundled" / "coding_090k.jsonl"])
    result = _replay(transcript, kind, "model=gpt-4-32k")
    summary = result.summary
    assert summary["calls"] == len(transcript.call_indices)
    assert summary["failed_calls"] == 0 and summary["invalid_requests"] == 0
    assert summary["layers"].get(f"inspect_{kind}", 0) > 0 and summary["savings"] > 0.3
    # inspect keeps its prefix (system prompt and task) in every compacted input
    task = transcript.messages[1].content
    assert any(m.content == task for m in result.working)
    if kind in ("summary", "auto"):
        assert any(e["type"] == "compaction.summary" for e in result.events)


def test_dev_set_transcript_runs(shared_transcripts: Path) -> None:
    from ctxbench.transcripts.importer import import_file

    path = next(shared_transcripts.rglob("*.traj"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (transcript,) = import_file(path)
    result = _replay(transcript, "edit", "model=gpt-4o", "model.context_window=12000")
    assert result.summary["calls"] == len(transcript.call_indices) and result.summary["invalid_requests"] == 0
    # Where inspect cannot get under its threshold it raises (an agent run would stop): the replay
    # records it and sends the history, which the provider may reject.
    failures = [e for e in result.events if e["type"] == "compaction.failure"]
    assert all("Compaction insufficient" in e["error"] for e in failures)


def test_unknown_kind_is_a_config_error() -> None:
    from ctxbench.errors import ConfigError

    with pytest.raises(ConfigError, match="kind must be one of"):
        _replay(Transcript("t", []), "magic")


def test_a_package_inspect_imports_missing_is_named_without_asking_to_install_inspect_again() -> None:
    """The import fails in a fresh interpreter where starlette cannot be imported (the state setup left
    before it pinned starlette): the reason names starlette and does not ask for inspect-ai itself."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "from ctxbench.upstream import missing; print(missing('inspect_compaction'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert "starlette" in out and "inspect-ai 0.3.285 is installed" in out
    assert "pip install --no-deps inspect-ai" not in out


def test_the_command_line_run_works_for_every_kind(tmp_path: Path) -> None:
    """`ctxbench run strategy=inspect_compaction strategy.params.kind=edit,trim,summary,auto` after setup."""
    import subprocess

    from tests.conftest import CTXBENCH

    result = subprocess.run(
        [
            *CTXBENCH,
            "run",
            "-m",
            "-q",
            "strategy=inspect_compaction",
            "strategy.params.kind=edit,trim,summary,auto",
            "dataset.include=[synth-sql_060k]",
            "model=gpt-4-32k",
            f"output.root={tmp_path}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(list(tmp_path.glob("**/summary.json"))) == 4
