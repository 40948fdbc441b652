"""The LLM judge: an answerer model reads the compacted context and answers the probe; a
judge model grades the answer against the gold (correct or not, and a 0-5 score on
Factory's dimensions). Prompts are versioned files in ctxbench/prompts/.

Nothing an LLM does wrong ends the run: a failed answerer or grader call, or a grade that is
still not valid JSON after one re-ask, makes the probe ``unjudged`` (counted apart, left out of
retention). Control answers with known grades (the gold, a plausible wrong value, "UNKNOWN")
are graded at every checkpoint, so a judge that calls everything correct is caught."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from ctxbench.judges.base import Verdict
from ctxbench.llm.base import SummariserError
from ctxbench.transcripts.model import Message, Probe

ANSWERER_PROMPT = "probe_answerer_v1.txt"
JUDGE_PROMPT = "probe_judge_v2.txt"
REASK = (
    "Your reply was not a valid grade ({error}). Reply again with only one JSON object with the keys "
    '"correct" (true or false) and "score" (0 to 5), and nothing else.'
)
DIMENSIONS = ("accuracy", "context_awareness", "artifact_trail", "completeness", "continuity", "instruction_following")
_RATING = {"type": "number", "minimum": 0, "maximum": 5}
# The grade a judge must reply with (sent as the provider's response_format where it supports one).
GRADE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"correct": {"type": "boolean"}, "score": _RATING, **{d: _RATING for d in DIMENSIONS}},
    "required": ["correct", "score"],
}
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_TRUTH = {"true": True, "yes": True, "correct": True, "false": False, "no": False, "incorrect": False}


def load_prompt(name: str) -> str:
    return resources.files("ctxbench.prompts").joinpath(name).read_text("utf-8")


def _block(message: Message) -> str:
    calls = "".join(f"\n-> {c.name}({c.arguments})" for c in message.tool_calls)
    label = f"{message.role}:{message.name}" if message.role == "tool" and message.name else message.role
    return f"[{label}] {message.content}{calls}"


def visible_messages(working: Sequence[Message], max_chars: int | None = None) -> list[Message]:
    """The part of the context the answerer is shown: the newest messages whose rendering fits in
    ``max_chars``, the oldest of them cut from the left. Judges run beside the LLM judge get the
    same list, so they grade exactly what the answerer saw."""
    if max_chars is None:
        return list(working)
    shown: list[Message] = []
    used = 0
    for message in reversed(working):
        block = _block(message)
        cost = len(block) + (2 if shown else 0)
        if used + cost <= max_chars:
            shown.append(message)
            used += cost
            continue
        room = max_chars - used - (2 if shown else 0) - len(f"[{message.role}] ...")
        if room > 0:
            body = block.split("] ", 1)[1] if "] " in block else block
            shown.append(dataclasses.replace(message, content="..." + body[-room:], tool_calls=()))
        break
    return shown[::-1]


def render_context(working: Sequence[Message], max_chars: int | None = None) -> str:
    """The context as the answerer sees it: one block per message, tool calls included."""
    return "\n\n".join(_block(m) for m in visible_messages(working, max_chars))


MAX_PROSE_CHARS = 200  # text around the grade ("Sure:"); more is an answer of another kind (instructions)
_FREE_KEYS = {"reason", "reasoning", "explanation", "rationale"}  # said beside a grade by real models
_PROBE_KEYS = ("probe", "probe_id", "question")  # a grade naming what it grades must name this probe


def _objects(text: str) -> tuple[list[dict[str, Any]], int]:
    """The top-level JSON objects in ``text`` (code fences stripped) and how many characters are outside them."""
    text = _FENCE.sub("", text.strip())
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    inside, position = 0, 0
    for match in re.finditer(r"\{", text):
        if match.start() < position:
            continue  # inside an object already read
        try:
            value, end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
            inside += end - match.start()
            position = end
    return found, len(text) - inside


def _first_object(text: str) -> Any:
    """The one JSON object in ``text`` (code fences and a little prose around it allowed)."""
    found, outside = _objects(text)
    if not found:
        raise ValueError("no JSON object")
    if sum(1 for o in found if "correct" in o) > 1:
        raise ValueError("two grades in one reply")
    if outside > MAX_PROSE_CHARS:
        raise ValueError(f"{outside} characters of text around the grade (instructions, not a grade)")
    return found[0]


def _rating(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"{key!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 5:
        raise ValueError(f"{key!r} must be a number from 0 to 5")
    return float(value)


def validate_grade(text: str, probe: Probe | None = None) -> dict[str, Any]:
    """The grade in a judge's reply, checked against GRADE_SCHEMA; raises ValueError saying what is wrong.
    ``"correct": "true"`` and numbers as strings are read for what they say. A reply with two grades,
    keys the schema does not have (instructions), or a grade naming another probe is not a grade."""
    grade = _first_object(text)
    unknown = sorted(set(grade) - set(GRADE_SCHEMA["properties"]) - _FREE_KEYS - set(_PROBE_KEYS))
    if unknown:
        raise ValueError(f"unexpected key {unknown[0]!r} in the grade")
    if probe is not None:
        for key in _PROBE_KEYS:
            named = grade.get(key)
            if named is not None and str(named).strip() not in (probe.id, probe.question.strip()):
                raise ValueError(f"a grade for another probe ({key}={str(named)[:60]!r})")
    correct = grade.get("correct")
    if isinstance(correct, str):
        correct = _TRUTH.get(correct.strip().lower(), correct)
    if not isinstance(correct, bool):
        raise ValueError(f"'correct' must be true or false, got {grade.get('correct')!r}")
    out: dict[str, Any] = {"correct": correct, "score": _rating(grade.get("score"), "score")}
    for dim in DIMENSIONS:
        if grade.get(dim) is not None:
            out[dim] = _rating(grade[dim], dim)
    return out


def parse_grade(text: str) -> dict[str, Any] | None:
    """The judge's validated grade, or None when it did not give one."""
    try:
        return validate_grade(text)
    except ValueError:
        return None


def plausible_wrong(probe: Probe, others: Sequence[Probe]) -> str:
    """A wrong answer a lenient judge might accept: another probe's value of the same shape (a number
    for a number, a name for a name) and kind, else of the same shape, else any other probe's, else
    the gold with its digits changed (port 51140 -> 62251)."""
    gold = probe.answer.strip().casefold()
    same_shape = [p for p in others if _shape(p.answer) == _shape(probe.answer)]
    for pool in ([p for p in same_shape if p.kind == probe.kind], same_shape, list(others)):
        for other in pool:
            value = other.answer.strip()
            if value and value.casefold() != gold and gold not in value.casefold():
                return value
    changed = re.sub(r"\d", lambda m: str((int(m.group(0)) + 1) % 10), probe.answer)
    return changed if changed != probe.answer else f"not {probe.answer}"


def _shape(value: str) -> tuple[bool, bool]:
    return any(c.isdigit() for c in value), " " in value.strip()


class LLMJudge:
    """Verdict ``kept`` when the judge grades the answer correct, ``lost`` when it grades it wrong,
    ``unjudged`` when no valid grade could be had."""

    name = "llm"

    def __init__(
        self,
        answerer: Any,
        grader: Any,
        max_context_chars: int | None = None,
        reask: bool = True,
        controls: bool = True,
    ) -> None:
        self.answerer = answerer
        self.grader = grader
        self.max_context_chars = max_context_chars
        self.reask = reask  # one re-ask when the grade does not parse, then unjudged
        self.use_controls = controls
        self.answer_prompt = load_prompt(ANSWERER_PROMPT)
        self.judge_prompt = load_prompt(JUDGE_PROMPT)
        self.controls: list[dict[str, Any]] = []  # one row per control answer graded
        self._next_control = 0

    def attach(self, emit: Any) -> None:
        """Failures of the answerer and the grader become events of the replay (``ctx.emit``)."""
        for client in (self.answerer, self.grader):
            if hasattr(client, "on_event"):
                client.on_event = emit

    def visible(self, working: Sequence[Message]) -> list[Message]:
        return visible_messages(working, self.max_context_chars)

    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict:
        context = render_context(working, self.max_context_chars)
        prompt = self.answer_prompt.format(context=context, question=probe.question)
        try:
            answer = self.answerer.complete([{"role": "user", "content": prompt}], purpose="probe_answer").strip()
        except SummariserError as error:
            return Verdict("unjudged", self.name, evidence=f"answerer failed: {error.kind}")
        return self.verdict(probe, answer)

    def verdict(self, probe: Probe, answer: str) -> Verdict:
        """Grade ``answer`` (e.g. the primary judge's, for a repeat grader)."""
        grade, cause = self.grade(probe, answer)
        if grade is None:
            return Verdict("unjudged", self.name, answer=answer, evidence=f"judge failed: {cause}")
        dims = {d: grade[d] for d in DIMENSIONS if d in grade}
        return Verdict(
            "kept" if grade["correct"] else "lost",
            self.name,
            score=grade["score"],
            answer=answer,
            evidence=json.dumps(dims) if dims else None,
        )

    def grade(self, probe: Probe, answer: str, purpose: str = "probe_judge") -> tuple[dict[str, Any] | None, str]:
        """(validated grade, "") or (None, why not): a failed call, or an invalid reply twice."""
        prompt = self.judge_prompt.format(kind=probe.kind, question=probe.question, gold=probe.answer, answer=answer)
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for attempt in (1, 2):
            try:
                text = self.grader.reply(messages, purpose=purpose, schema=GRADE_SCHEMA).text
            except SummariserError as error:
                return None, error.kind
            try:
                return validate_grade(text, probe), ""
            except ValueError as error:
                if hasattr(self.grader, "mark_failed"):
                    self.grader.mark_failed("malformed", f"judge reply is not a valid grade: {error}")
                if attempt == 2 or not self.reask:
                    return None, "malformed"
                messages = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": REASK.format(error=error)},
                ]
        return None, "malformed"

    def check_controls(self, probes: Sequence[Probe], checkpoint: dict[str, Any], pool: Sequence[Probe]) -> None:
        """Grade three control answers with known grades for one of this checkpoint's probes (in turn):
        the gold (must be correct), a plausible wrong value and "UNKNOWN" (both must be wrong)."""
        if not probes or not self.use_controls:
            return
        probe = probes[self._next_control % len(probes)]
        self._next_control += 1
        others = [p for p in pool if p.id != probe.id]
        for control, answer, expected in (
            ("gold", probe.answer, True),
            ("wrong", plausible_wrong(probe, others), False),
            ("unknown", "UNKNOWN", False),
        ):
            grade, cause = self.grade(probe, answer, purpose="control_judge")
            self.controls.append(
                {
                    "call": checkpoint.get("call"),
                    "checkpoint": checkpoint.get("why"),
                    "probe": probe.id,
                    "control": control,
                    "answer": answer,
                    "expected": expected,
                    "graded": None if grade is None else grade["correct"],
                    "cause": cause or None,
                }
            )


def control_rates(rows: Sequence[dict[str, Any]], max_false_positive_rate: float = 0.10) -> dict[str, Any]:
    """The judge's error rates on control answers: false positives (a wrong answer or UNKNOWN
    graded correct) and false negatives (the gold graded wrong); ungraded controls are left out."""
    graded = [r for r in rows if r["graded"] is not None]
    negatives = [r for r in graded if not r["expected"]]
    positives = [r for r in graded if r["expected"]]
    fp = sum(1 for r in negatives if r["graded"])
    fn = sum(1 for r in positives if not r["graded"])
    fp_rate = round(fp / len(negatives), 4) if negatives else None
    return {
        "controls": len(rows),
        "ungraded": len(rows) - len(graded),
        "false_positives": fp,
        "false_negatives": fn,
        "false_positive_rate": fp_rate,
        "false_negative_rate": round(fn / len(positives), 4) if positives else None,
        "max_false_positive_rate": max_false_positive_rate,
        # None: no control could be graded, so nothing says the judge can be trusted
        "trusted": None if fp_rate is None else fp_rate <= max_false_positive_rate,
    }


def judge_control_metrics(judge: Any, max_false_positive_rate: float) -> dict[str, Any]:
    """The judge's false-positive and false-negative rates on control answers (LLM judge only),
    as ``summary.json`` metrics."""
    rows = list(getattr(judge, "controls", None) or [])
    if not rows:
        return {}
    rates = control_rates(rows, max_false_positive_rate)
    return {
        "judge_control": rates,
        "judge_false_positive_rate": rates["false_positive_rate"],
        "judge_false_negative_rate": rates["false_negative_rate"],
        "judge_trusted": rates["trusted"],
    }
