"""The LLM judge: an answerer model reads the compacted context and answers the probe; a
judge model grades the answer against the gold (correct or not, and a 0-5 score on
Factory's dimensions). Prompts are versioned files in ctxbench/prompts/."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from ctxbench.judges.base import Verdict
from ctxbench.transcripts.model import Message, Probe

ANSWERER_PROMPT = "probe_answerer_v1.txt"
JUDGE_PROMPT = "probe_judge_v1.txt"
DIMENSIONS = ("accuracy", "context_awareness", "artifact_trail", "completeness", "continuity", "instruction_following")
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def load_prompt(name: str) -> str:
    return resources.files("ctxbench.prompts").joinpath(name).read_text("utf-8")


def render_context(working: Sequence[Message], max_chars: int | None = None) -> str:
    """The context as the answerer sees it: one block per message, tool calls included."""
    blocks = []
    for m in working:
        calls = "".join(f"\n-> {c.name}({c.arguments})" for c in m.tool_calls)
        label = f"{m.role}:{m.name}" if m.role == "tool" and m.name else m.role
        blocks.append(f"[{label}] {m.content}{calls}")
    text = "\n\n".join(blocks)
    return text if max_chars is None or len(text) <= max_chars else text[-max_chars:]


def parse_grade(text: str) -> dict[str, Any] | None:
    """The judge's JSON object, or None when it did not give one."""
    match = _JSON_OBJECT.search(text)
    if not match:
        return None
    try:
        grade = json.loads(match.group(0))
    except ValueError:
        return None
    return grade if isinstance(grade, dict) and "correct" in grade else None


class LLMJudge:
    """Verdict ``kept`` when the judge grades the answer correct, else ``lost``."""

    name = "llm"

    def __init__(self, answerer: Any, grader: Any, repeat: int = 0, max_context_chars: int | None = None) -> None:
        self.answerer = answerer
        self.grader = grader
        self.repeat = repeat  # > 0 asks again with a different seed: self-agreement
        self.max_context_chars = max_context_chars
        self.answer_prompt = load_prompt(ANSWERER_PROMPT)
        self.judge_prompt = load_prompt(JUDGE_PROMPT)

    def _ask(self, client: Any, prompt: str, purpose: str) -> str:
        messages = [{"role": "user", "content": prompt}]
        if self.repeat:
            messages.insert(0, {"role": "system", "content": f"Independent attempt #{self.repeat + 1}."})
        return client.complete(messages, purpose=purpose)

    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict:
        context = render_context(working, self.max_context_chars)
        answer = self._ask(
            self.answerer, self.answer_prompt.format(context=context, question=probe.question), "probe_answer"
        ).strip()
        grade_text = self._ask(
            self.grader,
            self.judge_prompt.format(kind=probe.kind, question=probe.question, gold=probe.answer, answer=answer),
            "probe_judge",
        )
        grade = parse_grade(grade_text)
        if grade is None:
            return Verdict("lost", self.name, answer=answer, evidence="judge reply was not a JSON grade")
        score = grade.get("score")
        dims = {d: grade[d] for d in DIMENSIONS if isinstance(grade.get(d), int | float)}
        return Verdict(
            "kept" if grade.get("correct") is True else "lost",
            self.name,
            score=float(score) if isinstance(score, int | float) else None,
            answer=answer,
            evidence=json.dumps(dims) if dims else None,
        )
