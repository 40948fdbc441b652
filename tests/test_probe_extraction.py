"""Probes extracted from real transcripts: each gold value is stated by its message, each probe
is scored kept against the full history, and every Factory probe type shows up."""

from collections import Counter

from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes.extract import extract_probes
from ctxbench.transcripts.importer import import_file
from ctxbench.transcripts.model import Message, ToolCall, Transcript


def test_real_transcripts_yield_sound_probes_of_every_type(shared_transcripts):
    kinds: Counter[str] = Counter()
    for path in sorted(shared_transcripts.rglob("*")):
        if path.suffix not in (".traj", ".jsonl", ".json"):
            continue
        for transcript in import_file(path)[:20]:  # tau-bench holds 200 similar ones
            judge = DeterministicJudge()
            for probe in extract_probes(transcript):
                kinds[probe.kind] += 1
                stated = transcript.messages[probe.message_index]
                text = stated.content + " ".join(c.arguments for c in stated.tool_calls)
                assert probe.answer in text or judge.judge(probe, [stated]).status == "kept", probe
                assert judge.judge(probe, transcript.messages).status == "kept", probe
                assert probe.needed_at is None or probe.needed_at > probe.message_index
    assert set(kinds) == {"recall", "artifact", "continuation", "decision"}, kinds


def test_hand_built_transcript_probes():
    messages = [
        Message("system", "You are an agent."),
        Message("user", "Fix the parser crash in the build. You must never edit vendor/ files at all."),
        Message("assistant", "", tool_calls=(ToolCall("a", "str_replace_editor", '{"path": "/src/parse.c"}'),)),
        Message("tool", "Traceback: ValueError: bad token at line 12", tool_call_id="a", name="str_replace_editor"),
        Message("assistant", "I decided to patch the lexer because the parser is generated."),
        Message("user", "Still failing: ValueError: bad token at line 12"),
        Message("assistant", "Done."),
    ]
    probes = {p.answer: p for p in extract_probes(Transcript("t", messages))}
    assert probes["/src/parse.c"].kind == "artifact"
    error = probes["ValueError: bad token at line 12"]
    assert (error.message_index, error.needed_at) == (3, 5)
    assert any(p.kind == "decision" and "because the parser is generated" in a for a, p in probes.items())
