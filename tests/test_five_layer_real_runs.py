"""five_layer on real agents' runs (../shared/transcripts) at a 12k window: the calls its summary
(strategies 4-5) runs in are rescued, as OpenClaw's compaction rescues them (issue 26). The figures
of docs/strategies.md come from scripts/five_layer_real_runs.py over the whole dev set; this test
replays the runs that need the summary at 12k: OpenHands' (a long system prompt, tool schemas and
task) and an older SWE-agent run (observations sent as user messages)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ctxbench.transcripts.model import Transcript

RUNS = (
    "openhands-multi-swe-bench-example/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
    "swe-agent-official/trajectories/demonstrations/ctf/forensics/flash.traj",
)


def replay_five_layer(transcript: Transcript, overrides: Sequence[str] = ()) -> Any:
    """One replay as `ctxbench run strategy=five_layer model=gpt-4o model.context_window=12000` makes it."""
    from hydra import compose, initialize_config_dir

    from ctxbench.build import build_estimator, build_model, build_strategy
    from ctxbench.replay.engine import replay
    from ctxbench.run_app import CONFIG_DIR
    from ctxbench.tokens.counting import TokenCounter
    from ctxbench.tokens.tokenizers import get_tokenizer

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=["strategy=five_layer", "llm=offline", "model=gpt-4o", "model.context_window=12000", *overrides],
        )
    built, model = build_strategy(cfg), build_model(cfg)
    counter = TokenCounter(get_tokenizer(model.tokenizer)).for_transcript(transcript)
    from ctxbench.llm import ExtractiveSummariser

    return replay(transcript, built, build_estimator(cfg), model, counter, summariser=ExtractiveSummariser())


@pytest.fixture
def runs(shared_transcripts: Path) -> list[Transcript]:
    from ctxbench.transcripts.importer import import_file

    transcripts = [t for name in RUNS for t in import_file(shared_transcripts / name) if t.call_indices]
    assert len(transcripts) == 4
    return transcripts


def summary_rescues(transcripts: Sequence[Transcript], overrides: Sequence[str] = ()) -> tuple[int, int]:
    """(calls in which the summary ran, how many of them the provider then accepted)."""
    summarised = accepted = 0
    for transcript in transcripts:
        result = replay_five_layer(transcript, overrides)
        calls = {e["call"] for e in result.events if e.get("type") == "five_layer.summary"}
        summarised += len(calls)
        accepted += sum(1 for c in result.calls if c["call"] in calls and c["accepted"])
    return summarised, accepted


def test_after_its_summary_at_least_half_the_calls_are_accepted(runs: list[Transcript]) -> None:
    summarised, accepted = summary_rescues(runs)
    assert summarised >= 3  # the summary has work to do on these runs at 12k
    assert accepted * 2 >= summarised, f"{accepted} of {summarised} calls accepted after the summary"
