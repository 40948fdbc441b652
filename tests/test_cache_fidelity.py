"""The prompt-cache simulator against the cache usage real providers reported."""

from ctxbench.calibration.cache_fidelity import fidelity_rows, simulate_transcript, write_cache_fidelity
from ctxbench.tokens.calibrate import load_any
from ctxbench.transcripts.formats._common import normalize_usage
from ctxbench.transcripts.model import Message, Transcript


def claude_code(shared):
    return {t.id: t for t in load_any([shared / "claude-code-fasthooks-pypi"])}


def test_claude_code_sessions_simulated_reads_within_5_percent_of_reported(shared_transcripts, tmp_path):
    transcripts = list(claude_code(shared_transcripts).values())
    rows = write_cache_fidelity(transcripts, tmp_path)
    assert (tmp_path / "cache_fidelity.csv").read_text().startswith("source,model,sessions,calls,reported_hit_share")
    _, sessions = fidelity_rows(transcripts)
    checked = [s for s in sessions if s["reported_reads"]]
    assert len(checked) == 2  # the two main sessions; the sidechain has one call
    for session in checked:
        assert abs(session["reads_error"]) < 0.05, session
    assert all(0 < r["simulated_hit_share"] <= 1 for r in rows if r["reported_hit_share"])


def test_recorded_timestamps_expire_the_cache_after_a_long_pause(shared_transcripts):
    session = claude_code(shared_transcripts)["sample_main_transcript"]
    assert all("timestamp" in m.metadata for m in session.messages)  # the importer keeps them
    steady = simulate_transcript(session)
    assert all(c.simulated_cached for c in steady[1:])
    # The same session with a 10-minute pause before the fourth call: the 5-minute TTL has lapsed.
    calls = [i for i, m in enumerate(session.messages) if m.role == "assistant"]
    pause = calls[3] - 1
    shifted = [
        m.replace(metadata={**m.metadata, "timestamp": "2027-01-01T00:00:00Z"}) if i >= pause else m
        for i, m in enumerate(session.messages)
    ]
    paused = simulate_transcript(Transcript(session.id, shifted, source=session.source))
    assert paused[3].simulated_cached == 0 and paused[3].simulated_written > 0
    assert paused[4].simulated_cached > 0  # written again, read again on the next call


def test_deepseek_cache_usage_is_kept_and_simulated_with_the_reply():
    raw = {
        "prompt_tokens": 900,
        "completion_tokens": 50,
        "prompt_cache_hit_tokens": 832,
        "prompt_cache_miss_tokens": 68,
    }
    usage = normalize_usage(raw)
    assert usage["prompt_cache_hit_tokens"] == 832 and usage["prompt_cache_miss_tokens"] == 68
    messages = [Message("system", "s"), Message("user", "task")]
    prompt = 700
    for i in range(3):
        reported = {"prompt_tokens": prompt, "completion_tokens": 100, "prompt_cache_hit_tokens": 0}
        messages += [Message("assistant", f"r{i}", metadata={"usage": reported}), Message("user", f"o{i}")]
        prompt += 300
    calls = simulate_transcript(Transcript("ds", messages, source={"model": "deepseek-chat"}))
    # Call 2 repeats call 1's 700-token prompt and its 100-token reply: 800 tokens, 12 whole 64-token units.
    assert calls[1].simulated_cached == 768
    assert calls[2].simulated_cached == (1000 + 100) // 64 * 64
