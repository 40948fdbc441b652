"""DeepSeek V3.2 as DeepSeek's API renders a request (``ctxbench.tokens.deepseek_dsml``), and the
mini-swe-agent DeepSeek runs replayed against what DeepSeek billed."""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.calibration.provider_fidelity import measure
from ctxbench.tokens.counting import TokenCounter, tools_tokens
from ctxbench.tokens.reasoning import reasoning_tokens
from ctxbench.tokens.tokenizers import get_tokenizer, resolve_tokenizer_name
from ctxbench.transcripts.formats.openai import MINI_SWE_AGENT_BASH_TOOL
from ctxbench.transcripts.importer import import_file
from ctxbench.transcripts.model import Message, ToolCall, Transcript

D = "｜DSML｜"


def test_api_model_names_count_with_the_v32_rendering() -> None:
    assert resolve_tokenizer_name("deepseek/deepseek-chat") == "deepseek-v3.2"
    assert resolve_tokenizer_name("deepseek-reasoner") == "deepseek-v3.2"
    assert resolve_tokenizer_name("deepseek-v3") == "deepseek-v3"  # self-hosted V3 keeps V3's template


def test_a_tool_loop_counts_as_the_whole_rendered_prompt() -> None:
    """The per-message counts add up to the count of the prompt written out as V3.2 renders it
    (string parameters unescaped, results in <function_results>, punctuation joined across seams)."""
    tok = get_tokenizer("deepseek-v3.2")
    command = 'grep -n "def f" a.py\nls'
    messages = [
        Message("system", "You are a helpful assistant."),
        Message("user", "Fix <b>it</b>."),
        Message(
            "assistant",
            "THOUGHT: look first.",
            tool_calls=(ToolCall("c1", "bash", json.dumps({"command": command, "n": 2})),),
            metadata={"reasoning": "The file is small."},
        ),
        Message("tool", "<returncode>0</returncode>\n<output>\nx\n</output>", tool_call_id="c1"),
    ]
    transcript = Transcript("t", messages, metadata={"tools": [MINI_SWE_AGENT_BASH_TOOL]})
    assert tok.tools_text is not None
    tools = tok.tools_text([MINI_SWE_AGENT_BASH_TOOL])
    rendered = (
        "<｜begin▁of▁sentence｜>You are a helpful assistant."
        + tools
        + "<｜User｜>Fix <b>it</b>.<｜Assistant｜></think>"
        + "The file is small.</think>"
        + f'THOUGHT: look first.\n\n<{D}function_calls>\n<{D}invoke name="bash">\n'
        + f'<{D}parameter name="command" string="true">{command}</{D}parameter>\n'
        + f'<{D}parameter name="n" string="false">2</{D}parameter>\n'
        + f"</{D}invoke>\n</{D}function_calls><｜end▁of▁sentence｜>"
        + "\n\n<function_results>\n<result><returncode>0</returncode>\n<output>\nx\n</output></result>"
        + "\n</function_results>\n\n</think>"
    )
    assert tools.startswith("\n\n## Tools") and '"name": "bash"' in tools
    counter = TokenCounter(tok)
    counted = (
        tok.per_request
        + tools_tokens(tok, transcript)
        + sum(counter.message(m) for m in messages)
        + reasoning_tokens(messages[2], tok)
    )
    exact = tok.count_template(rendered)
    # One seam is left: the system text's last character and the tools block's "\n\n" (the fitted
    # overhead takes it: -1 token on the dev set).
    assert exact <= counted <= exact + 1
    # Counted in pieces instead, the seams would be off by one token each.
    joined = tok.count_template("<result><returncode>")
    assert tok.count_template("<result>") + tok.count_template("<returncode>") > joined


def test_mini_swe_agent_exit_message_is_not_a_prompt_message_and_its_bash_tool_is_recorded(tmp_path: Path) -> None:
    doc = {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"exit_status": "Submitted", "config": {"model": {"model_name": "deepseek/deepseek-chat"}}},
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
            {"role": "tool", "content": "out", "tool_call_id": "c"},
            {"role": "exit", "content": "Submitted", "extra": {"exit_status": "Submitted"}},
        ],
    }
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(doc))
    [t] = import_file(path)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool"]
    assert t.metadata["tools"] == [MINI_SWE_AGENT_BASH_TOOL] and t.metadata["exit_status"] == "Submitted"


def test_mini_swe_agent_deepseek_runs_replay_to_what_deepseek_billed(shared_transcripts: Path) -> None:
    """Issue 25: 5.4% (chat) and 6.8% (reasoner) after the overhead with V3's template; V3.2's
    rendering counts every call within a token or so of the reported prompt_tokens."""
    files = sorted((shared_transcripts / "mini-swe-agent-deepseek").rglob("*.traj.json"))
    assert len(files) == 20
    fidelity = measure([t for f in files for t in import_file(f)])
    rows = {r["model"]: r for r in fidelity.fidelity_rows()}
    assert set(rows) == {"deepseek/deepseek-chat", "deepseek/deepseek-reasoner"}
    for row in rows.values():
        assert row["tokenizer"] == "deepseek-v3.2" and row["scored_calls"] > 100
        assert row["mape_after_overhead"] <= 0.1, row
        assert abs(row["fitted_overhead_tokens"]) <= 2, row
    assert max(abs(c.reported - c.counted) for c in fidelity.calls) <= 5


def test_estimators_count_the_first_call_and_meet_their_goals_against_deepseek_and_openhands(
    shared_transcripts: Path,
) -> None:
    """Issue 25.2: no blind first call (it was the 4.0 chars/token guess: 9.8% off on DeepSeek, 7.5% on
    OpenHands); anchored <= 0.5% and ema <= 1.0% against the provider's counts."""
    from ctxbench.calibration.provider_fidelity import estimator_errors, estimator_rows
    from ctxbench.tokens.calibrate import load_any

    transcripts = load_any(
        [shared_transcripts / "mini-swe-agent-deepseek", shared_transcripts / "openhands-multi-swe-bench-example"]
    )
    first = {
        key: abs(pairs[0][0] - pairs[0][1]) / pairs[0][1] for key, pairs in estimator_errors(transcripts[:1]).items()
    }
    assert first[("openai", "anchored")] < 0.002 and first[("openai", "ema")] < 0.002
    rows = {(r["source"], r["estimator"]): r["mape"] for r in estimator_rows(transcripts)}
    for source in ("openai", "openhands"):
        assert rows[(source, "anchored")] <= 0.5, rows
        assert rows[(source, "ema")] <= 1.0, rows


def test_first_call_is_counted_exactly_as_the_provider_renders_it_then_calibrated() -> None:
    from ctxbench.tokens.estimators import AnchoredEstimator, EmaEstimator

    tok = get_tokenizer("deepseek-v3.2")
    messages = [Message("system", "Be brief."), Message("user", "List the files. " * 40)]
    transcript = Transcript("t", messages, metadata={"tools": [MINI_SWE_AGENT_BASH_TOOL]})
    exact = TokenCounter(tok).prompt(messages) + tools_tokens(tok, transcript)
    blind = EmaEstimator()
    blind.start(transcript)
    for est in (EmaEstimator(tokenizer="deepseek-v3.2"), AnchoredEstimator(tokenizer="deepseek-v3.2")):
        est.start(transcript)
        assert est.prompt(messages) == exact != blind.prompt(messages)
        est.observe(messages, exact + 7)  # the report: what the transcript could not hold
        grown = [*messages, Message("assistant", "ok")]
        if isinstance(est, AnchoredEstimator):  # the report plus the new message, counted
            assert est.prompt(grown) == exact + 7 + TokenCounter(tok).message(grown[-1])
        else:  # calibrated from the report from now on
            assert est.prompt(grown) == int(est.chars(grown) / est.cpt)
