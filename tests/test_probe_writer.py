"""LLM-written probes through a real HTTP model server on 127.0.0.1: golds not verbatim in the
message they cite are dropped, the kept ones are ordinary probes the deterministic judge can check,
and a recorded run replays from the cassette with the server stopped."""

import json
import re
from pathlib import Path

from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.llm import build_client
from ctxbench.probes.written import write_probes
from tests.helpers import coding_transcript
from tests.llm_server import LLMServer


def scripted_writer(request: dict) -> str:
    """A model that cites a line of its chunk's last message: one good probe, one invented gold,
    one citing a message outside the chunk."""
    run = request["messages"][-1]["content"].split("=== RUN ===", 1)[1].split("=== END RUN ===", 1)[0]
    blocks = re.findall(r"\[(\d+)\] \w+:\n(.*?)(?=\n\n\[\d+\] \w+:\n|\Z)", run, re.DOTALL)
    at, line = next(
        (int(i), ln.strip()[:60]) for i, body in reversed(blocks) for ln in body.split("\n") if len(ln.strip()) > 8
    )
    probes = [
        {"type": "recall", "question": f"What does message {at} say?", "gold": line, "message": at},
        {"type": "decision", "question": "Why?", "gold": "a gold nobody wrote", "message": at},
        {"type": "recall", "question": "Out of range?", "gold": line, "message": at + 10**6},
    ]
    return json.dumps({"probes": probes})


def test_written_probes_keep_only_verbatim_golds_and_replay_offline(tmp_path: Path):
    transcript = coding_transcript(rounds=12, tid="w")
    cassettes = {"mode": "record", "dir": str(tmp_path / "cassettes")}
    with LLMServer(reply=scripted_writer) as server:
        role = {"model": "openai/scripted", "api_base": server.api_base, "num_retries": 0, "cassette": cassettes}
        probes, stats = write_probes(transcript, build_client(role, tmp_path, "prober"), max_probes=6, chunk_chars=4000)
    assert probes and stats["calls"] >= 2 and stats["malformed"] == 2 * stats["calls"]
    judge = DeterministicJudge()
    for probe in probes:
        assert probe.source == "llm-written" and probe.kind == "recall"
        assert judge.judge(probe, transcript.messages).status == "kept"
    replay_role = {**role, "cassette": {**cassettes, "mode": "replay"}}  # the server is stopped
    again, _ = write_probes(transcript, build_client(replay_role, tmp_path, "prober"), max_probes=6, chunk_chars=4000)
    assert again == probes


def test_a_run_config_with_write_probes_uses_the_prober_role(tmp_path: Path):
    from omegaconf import OmegaConf

    from ctxbench.build import build_probe_observer

    transcript = coding_transcript(rounds=8, tid="w2")
    with LLMServer(reply=scripted_writer) as server:
        role = {"model": "openai/scripted", "api_base": server.api_base, "num_retries": 0}
        cfg = OmegaConf.create({"judge": {"kind": "deterministic", "write_probes": True}, "llm": {"prober": role}})
        observer = build_probe_observer(cfg, transcript.__class__(transcript.id, transcript.messages), tmp_path)
    assert observer is not None and observer.probes
    assert {p.source for p in observer.probes} == {"llm-written"}
