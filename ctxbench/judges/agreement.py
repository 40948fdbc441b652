"""How far to trust a judge: agreement with another judge and with itself, as accuracy
and Cohen's kappa over binary kept / not-kept verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.judges.base import Judge, Verdict
from ctxbench.transcripts.model import Message, Probe


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa for two binary raters; None without data, 1.0 when both are constant and equal."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return round((observed - expected) / (1 - expected), 4)


def agreement(a: Sequence[bool], b: Sequence[bool]) -> dict[str, Any]:
    n = len(a)
    return {
        "n": n,
        "accuracy": round(sum(x == y for x, y in zip(a, b)) / n, 4) if n else None,
        "kappa": cohen_kappa(a, b),
    }


@dataclass
class JudgePanel:
    """Runs a primary judge and others beside it on the same probe and the same view of the
    context (what the primary's answerer saw); the primary's verdict counts, the others' statuses
    are kept for agreement. A ``repeat`` judge re-grades the primary's answer with its own grader
    (another seed and temperature, or another model), so it measures the grader's consistency."""

    primary: Judge
    beside: dict[str, Judge]

    @property
    def name(self) -> str:
        return self.primary.name

    def _all(self) -> tuple[Any, ...]:
        return (self.primary, *self.beside.values())

    def forget_except(self, working: Sequence[Message]) -> None:
        for judge in self._all():
            if hasattr(judge, "forget_except"):
                judge.forget_except(working)

    def attach(self, emit: Any) -> None:
        for judge in self._all():
            if hasattr(judge, "attach"):
                judge.attach(emit)

    def check_controls(self, probes: Sequence[Probe], checkpoint: dict[str, Any], pool: Sequence[Probe]) -> None:
        if hasattr(self.primary, "check_controls"):
            self.primary.check_controls(probes, checkpoint, pool)

    @property
    def controls(self) -> list[dict[str, Any]]:
        return list(getattr(self.primary, "controls", []))

    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict:
        view = self.primary.visible(working) if hasattr(self.primary, "visible") else working
        verdict = self.primary.judge(probe, view)
        others = {}
        for name, judge in self.beside.items():
            if name == "repeat" and hasattr(judge, "verdict"):
                # nothing to re-grade without the primary's answer (its answerer failed)
                others[name] = judge.verdict(probe, verdict.answer).status if verdict.answer is not None else "unjudged"
            else:
                others[name] = judge.judge(probe, view).status
        return Verdict(verdict.status, verdict.judge, verdict.score, verdict.answer, verdict.evidence, others)


def agreement_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Agreement of the primary judge with each judge run beside it, over the rows both judged."""
    names = sorted({k for r in rows for k in (r.get("others") or {})})
    out = {}
    for name in names:
        pairs = [
            (r["status"] == "kept", r["others"][name] == "kept")
            for r in rows
            if name in (r.get("others") or {}) and "unjudged" not in (r["status"], r["others"][name])
        ]
        out[name] = agreement([p for p, _ in pairs], [o for _, o in pairs])
    return out
