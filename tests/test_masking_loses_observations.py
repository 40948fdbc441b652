"""What observation masking costs, seen by the probes (issue 23): on the real runs of the gold
set's dev part, replayed through `observation_masking` on a window where nothing overflows (so only
the masking layer edits the context), every fact lost where it was needed was stated in a tool's
output, the content masking drops; the agent's own statements stay. A probe set that never asks
about tool output would show masking as free; one that lost the agent's statements under masking
would be judging something else."""

from pathlib import Path

from ctxbench.build import build_strategy
from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes import CheckpointPolicy, ProbeObserver
from ctxbench.probes.boilerplate import find_boilerplate
from ctxbench.probes.extract import extract_probes
from ctxbench.probes.gold import import_gold_transcripts, load_gold
from ctxbench.probes.metrics import at_need, trivial_probes
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ModelSpec
from ctxbench.tokens import ExactEstimator, TokenCounter, get_tokenizer
from ctxbench.transcripts.model import is_tool_result
from tests.test_strategy_configs import composed

GOLD = Path(__file__).parent / "data" / "probe_gold"
WIDE = ModelSpec(name="wide", context_window=1_000_000, reserved_output_tokens=4096, tokenizer="o200k_base")


def test_masking_loses_tool_output_and_keeps_the_agents_statements(shared_transcripts):
    gold = load_gold(GOLD)
    transcripts = import_gold_transcripts(gold, shared_transcripts)
    boilerplate = find_boilerplate(transcripts.values())
    counter = TokenCounter(get_tokenizer("o200k_base"))
    lost_from = {"tool": 0, "other": 0}
    kept_statements = statements = 0
    for entry in load_gold(GOLD, "dev"):
        transcript = transcripts[entry["transcript"]]
        probes = extract_probes(transcript, boilerplate=boilerplate)
        observer = ProbeObserver(probes, DeterministicJudge(), CheckpointPolicy())
        strategy = build_strategy(composed("observation_masking", "strategy.params.n=3"))
        result = replay(transcript, strategy, ExactEstimator("o200k_base"), WIDE, counter, observers=[observer])
        assert all(c["accepted"] and c["retries"] == 0 for c in result.calls)  # masking alone edits the context
        trivial = trivial_probes(observer.rows)
        for row in at_need([r for r in observer.rows if r["probe"] not in trivial]):
            stated = transcript.messages[row["stated_at"]]
            from_tool = is_tool_result(stated)
            if row["status"] != "kept":
                lost_from["tool" if from_tool else "other"] += 1
            if stated.role == "assistant":
                statements += 1
                kept_statements += row["status"] == "kept"
    print(lost_from, kept_statements, statements)
    assert lost_from["tool"] >= 10, lost_from  # the probes see what masking drops
    assert lost_from["other"] == 0, lost_from
    assert statements >= 20 and kept_statements == statements, (kept_statements, statements)
