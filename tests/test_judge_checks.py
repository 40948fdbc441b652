"""The LLM judge checked: strict JSON grades (schema, one re-ask, then unjudged), failures on the
answerer or judge side that leave a probe unjudged instead of ending the run, control answers
that catch a judge which says "correct" to everything, a repeat judge that really samples
again, and a deterministic judge beside it that sees exactly what the answerer saw."""

import json
import re

import pytest

from ctxbench.judges.agreement import JudgePanel, agreement_metrics
from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.judges.llm import LLMJudge, control_rates, plausible_wrong, validate_grade, visible_messages
from ctxbench.llm import build_client
from ctxbench.probes.metrics import retention_metrics
from ctxbench.transcripts import Message, Probe
from tests.llm_server import LLMServer

PORT = Probe("port", "Which port?", "47213", "recall", 0)
OWNER = Probe("owner", "Who owns the service?", "Ruairi Kowalczyk", "recall", 0)


def fields(request: dict) -> dict:
    text = "\n".join(str(m["content"]) for m in request["messages"])
    found = {k: re.search(rf"{k}: (.*)", text) for k in ("Gold answer", "Answer given")}
    return {k: m.group(1).strip() for k, m in found.items() if m}


def answer_from_context(request: dict) -> str | None:
    text = request["messages"][0]["content"]
    if "=== CONTEXT ===" not in text:
        return None
    context = text.split("=== CONTEXT ===", 1)[1].split("=== END CONTEXT ===", 1)[0]
    found = re.search(r"\b\d{5}\b", context)
    return found.group(0) if found else "UNKNOWN"


def strict_model(request: dict) -> str:
    """Answers with the 5-digit number in the context; grades exactly."""
    answer = answer_from_context(request)
    if answer is not None:
        return answer
    f = fields(request)
    correct = f["Gold answer"].lower() == f["Answer given"].lower()
    return json.dumps({"correct": correct, "score": 5 if correct else 0})


def yes_man(request: dict) -> str:
    """The 0.5B model's habit: any answer is "correct, 5" (reference.md 5)."""
    answer = answer_from_context(request)
    return answer if answer is not None else '{"correct": "true", "score": "5"}'


def judge_with(server: LLMServer, tmp_path, **role_extra) -> LLMJudge:
    role = {"model": "openai/judge", "api_base": server.api_base, "num_retries": 0, "timeout": 5, **role_extra}
    return LLMJudge(build_client(role, tmp_path, "answerer"), build_client(role, tmp_path, "judge"))


def test_grades_are_validated_and_read_for_what_they_say():
    assert validate_grade('```json\n{"correct": "true", "score": "4"}\n```') == {"correct": True, "score": 4.0}
    assert validate_grade('Here: {"correct": false, "score": 0} done {"x": 1}')["correct"] is False
    for bad, why in [
        ("The answer is correct.", "no JSON object"),
        ('{"correct": "maybe", "score": 3}', "'correct' must be true or false"),
        ('{"correct": true, "score": 9}', "'score' must be a number from 0 to 5"),
        ('{"score": 3}', "'correct' must be true or false"),
    ]:
        with pytest.raises(ValueError, match=why):
            validate_grade(bad)


def test_prose_grade_is_asked_again_once_then_the_probe_is_unjudged(tmp_path):
    working = [Message("user", "the server listens on 47213")]
    script = ["ok", "malformed", "ok"]  # answer, prose grade, then a valid grade after the re-ask
    with LLMServer(script=script, reply=strict_model) as server:
        judge = judge_with(server, tmp_path)
        verdict = judge.judge(PORT, working)
        reask = server.requests[2]["messages"]
    assert verdict.status == "kept"
    assert reask[1]["role"] == "assistant" and "not a valid grade" in reask[2]["content"]
    assert [r["fault"] for r in judge.grader.usage] == ["malformed", None]
    with LLMServer(script=["ok", "malformed", "malformed"], reply=strict_model) as server:
        judge = judge_with(server, tmp_path / "again")
        verdict = judge.judge(PORT, working)
        assert len(server.requests) == 3  # one answer, two grades: no more
    assert verdict.status == "unjudged" and verdict.evidence == "judge failed: malformed"


@pytest.mark.parametrize(("script", "cause"), [(["error"], "answerer failed: error"), (["ok", "rate_limit"], None)])
def test_a_failed_answerer_or_judge_call_leaves_the_probe_unjudged(script, cause, tmp_path):
    with LLMServer(script=script, reply=strict_model) as server:
        verdict = judge_with(server, tmp_path).judge(PORT, [Message("user", "port 47213")])
    assert verdict.status == "unjudged"
    assert verdict.evidence == (cause or "judge failed: rate_limit")


def test_unjudged_probes_are_counted_and_left_out_of_retention():
    rows = [
        {"checkpoint": "end", "probe": "a", "status": "kept", "kind": "recall", "age_calls": 1, "compactions": 0},
        {"checkpoint": "end", "probe": "b", "status": "unjudged", "kind": "recall", "age_calls": 1, "compactions": 0},
        {"checkpoint": "end", "probe": "c", "status": "lost", "kind": "recall", "age_calls": 1, "compactions": 0},
    ]
    for row in rows:
        row.update(call=9, layers=[])
    metrics = retention_metrics(rows, {"a": "1", "b": "2", "c": "3"})
    assert metrics["retention"] == 0.5 and metrics["probes"] == 3
    assert metrics["unjudged"] == 1 and metrics["unjudged_share"] == round(1 / 3, 4)
    assert [d["probe"] for d in metrics["dropped"]] == ["c"]  # unjudged is never "lost"


def test_structured_output_sends_the_grade_schema(tmp_path):
    with LLMServer(reply=strict_model) as server:
        judge = judge_with(server, tmp_path, structured_output="json_object")
        judge.judge(PORT, [Message("user", "port 47213")])
        answer_request, grade_request = server.requests
    assert "response_format" not in answer_request
    assert grade_request["response_format"]["type"] == "json_object"
    assert grade_request["response_format"]["schema"]["required"] == ["correct", "score"]


def test_control_answers_flag_a_judge_that_says_correct_to_everything(tmp_path):
    probes = [PORT, OWNER]
    rates = {}
    for name, model in (("strict", strict_model), ("yes_man", yes_man)):
        with LLMServer(reply=model) as server:
            judge = judge_with(server, tmp_path / name)
            judge.check_controls(probes, {"call": 3, "why": "needed"}, probes)
            judge.check_controls(probes, {"call": 9, "why": "end"}, probes)
        assert [(r["probe"], r["control"]) for r in judge.controls[:3]] == [
            ("port", "gold"),
            ("port", "wrong"),
            ("port", "unknown"),
        ]
        assert judge.controls[3]["probe"] == "owner"  # controls take the probes in turn
        rates[name] = control_rates(judge.controls, 0.10)
    assert rates["strict"]["false_positive_rate"] == 0.0 and rates["strict"]["trusted"] is True
    assert rates["yes_man"]["false_positive_rate"] == 1.0 and rates["yes_man"]["trusted"] is False
    assert rates["yes_man"]["false_negative_rate"] == 0.0


def test_plausible_wrong_answers():
    assert plausible_wrong(PORT, [OWNER, Probe("p2", "Other port?", "8080", "recall", 0)]) == "8080"
    assert plausible_wrong(PORT, []) == "58324"
    assert plausible_wrong(OWNER, [PORT]) == "47213"


def test_repeat_judge_samples_again_and_deterministic_judge_sees_what_the_answerer_saw(tmp_path):
    working = [Message("user", "the task: port 47213"), Message("tool", "x" * 400, name="bash")]
    with LLMServer(reply=strict_model) as server:
        base = {"model": "openai/judge", "api_base": server.api_base, "num_retries": 0}
        answerer = build_client(base, tmp_path, "answerer")
        primary = LLMJudge(answerer, build_client(base, tmp_path, "judge"), max_context_chars=200, controls=False)
        again = build_client({**base, "temperature": 0.7, "params": {"seed": 7}}, tmp_path, "judge", "judge_repeat")
        panel = JudgePanel(
            primary,
            {"deterministic": DeterministicJudge(), "repeat": LLMJudge(answerer, again, max_context_chars=200)},
        )
        verdict = panel.judge(PORT, working)
        requests = list(server.requests)
    # The port is cut off from what the answerer saw, so both say lost: they judged the same input.
    assert verdict.status == "lost" and verdict.others == {"deterministic": "lost", "repeat": "lost"}
    assert DeterministicJudge().judge(PORT, working).status == "kept"  # on the whole context it is there
    assert len(requests) == 3  # one answer, graded twice: the repeat re-grades the same answer
    assert (requests[2]["temperature"], requests[2]["seed"]) == (0.7, 7)
    assert len("\n\n".join(f"[{m.role}] {m.content}" for m in visible_messages(working, 200))) <= 200
    rows = [{"status": "kept", "others": {"repeat": "unjudged", "deterministic": "kept"}}]
    assert agreement_metrics(rows)["repeat"]["n"] == 0  # an unjudged verdict is not an agreement
