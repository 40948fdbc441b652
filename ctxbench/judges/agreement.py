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
    """Runs a primary judge and others beside it on the same probe and context; the
    primary's verdict counts, the others' statuses are kept for agreement."""

    primary: Judge
    beside: dict[str, Judge]

    @property
    def name(self) -> str:
        return self.primary.name

    def forget_except(self, working: Sequence[Message]) -> None:
        for judge in (self.primary, *self.beside.values()):
            if hasattr(judge, "forget_except"):
                judge.forget_except(working)

    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict:
        verdict = self.primary.judge(probe, working)
        others = {name: judge.judge(probe, working).status for name, judge in self.beside.items()}
        return Verdict(verdict.status, verdict.judge, verdict.score, verdict.answer, verdict.evidence, others)


def agreement_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Agreement of the primary judge with each judge run beside it, over all judged rows."""
    names = sorted({k for r in rows for k in (r.get("others") or {})})
    out = {}
    for name in names:
        pairs = [(r["status"] == "kept", r["others"][name] == "kept") for r in rows if name in (r.get("others") or {})]
        out[name] = agreement([p for p, _ in pairs], [o for _, o in pairs])
    return out
