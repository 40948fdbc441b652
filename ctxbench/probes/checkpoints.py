"""Probing during a replay: judge every stated probe at checkpoints (every N calls, after
each compaction, just before the agent needs the fact, and at the end)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Annotated, Any

from ctxbench.core import Param, StrategyContext
from ctxbench.json_text import compact
from ctxbench.judges.base import Judge, Verdict
from ctxbench.probes.metrics import REQUIRED, DictRows, RowTable
from ctxbench.transcripts.model import Message, Probe, Transcript

REJECTED = Verdict("lost", "rejected-call", evidence="call rejected: the agent never had this context")


@dataclass(frozen=True)
class CheckpointPolicy:
    every_n_calls: Annotated[int, Param("judge every N calls (0: no periodic checkpoints)", ge=0)] = 10
    after_compaction: Annotated[bool, Param("judge after every call where a layer fired")] = True
    when_needed: Annotated[bool, Param("judge a fact at the call whose output needs it again")] = True


def _needed_at(probe: Probe) -> int:
    assert probe.needed_at is not None, "only probes with needed_at are pending"
    return probe.needed_at


class ProbeObserver:
    """A replay observer that records one judgment row per probe per checkpoint."""

    def __init__(self, probes: Sequence[Probe], judge: Judge, policy: CheckpointPolicy | None = None) -> None:
        self.probes = list(probes)
        self.judge = judge
        self.policy = policy or CheckpointPolicy()
        # One record per judgment row, its parts as judged (the checkpoint's, the probe's, the
        # verdict): a row's dict is built only when ``rows`` is read (the metrics read ``table``).
        self._records: list[_Record] = []
        self._rows: list[dict[str, Any]] = []  # the rows built, and any added to ``rows`` from outside
        self._built = 0  # records built into _rows
        # The rows as retention.jsonl's lines (``rows_text``), put together from pieces encoded once:
        # a probe's fields, a verdict's (the judge hands the same verdict objects out again).
        self._lines: list[str] = []
        self._verdict_text: dict[int, tuple[Verdict, str, str]] = {}
        self._probe_text: dict[int, tuple[Probe, str, int, bool, str, tuple[int, int] | None]] = {}
        self._others = False  # a verdict with other judges' verdicts was recorded
        self.compactions = 0
        # Probes by the message that needs them, in order; judged at the first call at or after it
        # (a fact can be needed by a tool or user message, and calls happen at assistant messages).
        self._pending_needed = sorted((p for p in self.probes if p.needed_at is not None), key=_needed_at)
        self._index_of: dict[int, int] = {}
        self._calls: list[int] = []
        self._first_user = -1
        self._last_accepted = True
        self._attached = False
        if hasattr(judge, "expect"):  # every gold known before the first checkpoint
            judge.expect(self.probes)

    def bind(self, transcript: Transcript) -> None:
        """Remember the transcript's original messages by identity (see _without_echoes), and the
        first user message: facts stated up to it sit where every strategy keeps them."""
        self._index_of = {id(m): i for i, m in enumerate(transcript.messages)}
        self._calls = transcript.call_indices  # a property that walks every message
        self._first_user = next((i for i, m in enumerate(transcript.messages) if m.role == "user"), -1)

    def _without_echoes(self, probe: Probe, working: Sequence[Message]) -> Sequence[Message]:
        """The context minus verbatim messages from where the agent needed the fact on:
        those restate the fact, and retention is about the original statement surviving.
        (A judge with ``judge_many`` gets the same rule as data: each message's index in the
        transcript, -1 for a message a strategy made, and each probe's ``needed_at``.)"""
        if probe.needed_at is None:
            return working
        index_of = self._index_of
        return [m for m in working if index_of.get(id(m), -1) < probe.needed_at]

    def _attach(self, ctx: StrategyContext) -> None:
        """The judge's LLM failures become events of the replay, at the call they happen."""
        if not self._attached and hasattr(self.judge, "attach"):
            self.judge.attach(ctx.emit)
        self._attached = True

    def on_call(self, record: dict[str, Any], working: Sequence[Message], ctx: StrategyContext) -> None:
        if not self._index_of:
            self.bind(ctx.transcript)
        self._attach(ctx)
        if record["layers"]:
            self.compactions += 1
        self._last_accepted = bool(record.get("accepted", True))
        at = record["message_index"]
        reasons = []
        if self.policy.every_n_calls and (record["call"] + 1) % self.policy.every_n_calls == 0:
            reasons.append("periodic")
        if self.policy.after_compaction and record["layers"]:
            reasons.append("compaction")
        if reasons:
            stated = [p for p in self.probes if p.message_index < at]
            self._judge_all(stated, working, record, "+".join(reasons), self._calls)
        due = 0
        while due < len(self._pending_needed) and self._pending_needed[due].needed_at <= at:
            due += 1
        if due:
            needed, self._pending_needed = self._pending_needed[:due], self._pending_needed[due:]
            if self.policy.when_needed:
                self._judge_all(needed, working, record, "needed", self._calls)

    def on_end(self, working: Sequence[Message], ctx: StrategyContext) -> None:
        self._attach(ctx)
        calls = self._calls if self._index_of else ctx.transcript.call_indices  # the property walks every message
        # The replay stops at the last recorded call: facts stated after it never reach a context.
        replayed = calls[-1] + 1 if calls else 0
        # The end context is what the agent had at its last call: nothing, if that call was rejected.
        end = {"call": ctx.call_index, "message_index": replayed, "layers": [], "accepted": self._last_accepted}
        self._judge_all([p for p in self.probes if p.message_index < replayed], working, end, "end", calls)

    def _verdicts(self, probes: Sequence[Probe], working: Sequence[Message], accepted: bool) -> list[Verdict]:
        """Each probe's verdict on ``working`` without its echoes (``_without_echoes``)."""
        if not accepted:  # a rejected call's context never reached the model: its facts are lost there
            return [REJECTED] * len(probes)
        judge_many = getattr(self.judge, "judge_many", None)
        if judge_many is not None:  # all probes in one walk of the context (the deterministic judge)
            # origins by the messages' ids: the judge keeps them per position from call to call
            return list(judge_many(probes, working, None, [p.needed_at for p in probes], self._index_of))
        if hasattr(self.judge, "forget_except"):
            self.judge.forget_except(working)
        return [self.judge.judge(probe, self._without_echoes(probe, working)) for probe in probes]

    def _judge_all(
        self, probes: Sequence[Probe], working: Sequence[Message], record: dict[str, Any], why: str, calls: list[int]
    ) -> None:
        at, call = record["message_index"], record["call"]
        accepted = bool(record.get("accepted", True))
        layers = list(record["layers"])
        # The line's pieces fixed for this checkpoint (a row's keys in the order of its dict below).
        head = "{" + compact({"checkpoint": why, "call": call, "message_index": at})[1:-1] + ", "
        middle = ', "accepted": ' + ("true" if accepted else "false") + ', "trivial": '
        after_age = ', "compactions": ' + compact(self.compactions) + ", "
        after_score = ', "layers": ' + compact(layers) + ", "
        lines, records, compactions = self._lines, self._records, self.compactions
        checkpoint = (why, call, at, accepted, compactions, layers)
        calls_before = bisect_left(calls, at)  # the probe's age: calls from its statement to here
        known_calls = calls is self._calls  # a probe's own numbers are kept for the bound transcript
        verdict_text = self._verdict_text
        for probe, verdict in zip(probes, self._verdicts(probes, working, accepted)):
            piece, stated_calls, early, label, span = self._probe_facts(probe, calls, known_calls)
            age = calls_before - stated_calls
            # kept by any strategy: in the system prompt or first user message, or within the
            # last two rounds here (a probe is trivial when every one of its rows is)
            trivial = early or age <= 1
            records.append((checkpoint, probe, label, span, verdict, age, trivial))
            known = verdict_text.get(id(verdict))
            if known is None or known[0] is not verdict:
                known = verdict_text[id(verdict)] = (verdict, *_verdict_pieces(verdict))
                if verdict.others:
                    self._others = True
            flag = "true" if trivial else "false"
            lines.append(
                f'{head}{piece}{middle}{flag}, "age_calls": {age:d}{after_age}{known[1]}{after_score}{known[2]}}}\n'
            )
        if probes and hasattr(self.judge, "check_controls"):  # known answers graded alongside (LLM judge)
            self.judge.check_controls(probes, {"call": record["call"], "why": why}, self.probes)

    def _probe_facts(
        self, probe: Probe, calls: list[int], known_calls: bool
    ) -> tuple[str, int, bool, str, tuple[int, int] | None]:
        """What a row takes from ``probe``: its fields from ``probe`` to ``used_again`` as its line
        holds them, the calls up to its statement, whether it sits where every strategy keeps it
        (the system prompt or first user message), its label and span; found once per probe."""
        known = self._probe_text.get(id(probe))
        if known is None or known[0] is not probe:
            fields = {
                "probe": probe.id,
                "kind": probe.kind,
                "label": probe.label or probe.kind,
                "question": probe.question,
                "gold": probe.answer,
                "stated_at": probe.message_index,
                "span": list(probe.span) if probe.span else None,
                "needed_at": probe.needed_at,
                "used_again": probe.needed_at is not None,
            }
            stated = bisect_right(calls, probe.message_index)
            early = probe.message_index <= self._first_user
            known = (probe, compact(fields)[1:-1], stated, early, probe.label or probe.kind, probe.span)
            if not known_calls:  # not bound to the transcript yet: nothing kept
                return known[1:]
            self._probe_text[id(probe)] = known
        elif not known_calls:  # calls other than the bound transcript's
            stated, early = bisect_right(calls, probe.message_index), probe.message_index <= self._first_user
            return known[1], stated, early, known[4], known[5]
        return known[1:]

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The judgment rows (retention.jsonl's), a dict each, built when first read: the list
        itself, so rows appended to it count as rows (``has_others``, ``rows_text``)."""
        records, built = self._records, self._built
        if built < len(records):
            self._rows.extend(map(_row, islice(records, built, None)))
            self._built = len(records)
        return self._rows

    def _added(self) -> bool:
        """Whether rows were added to ``rows`` from outside."""
        return len(self._rows) != self._built

    def table(self) -> RowTable:
        """``rows`` as columns (``retention_metrics`` reads them), without a dict per row."""
        return DictRows(self.rows) if self._added() else _RecordTable(self._records)

    def has_others(self) -> bool:
        """Whether a row holds other judges' verdicts (``others``): known as the rows were judged."""
        if self._added():
            return any(r.get("others") for r in self.rows)
        return self._others

    def rows_text(self) -> str:
        """``rows`` as retention.jsonl's lines: ``json.dumps(row, ensure_ascii=False)`` each, the
        text ``results.store.jsonl_text(self.rows)`` gives for the rows as recorded (when rows
        were added to ``rows`` from outside, they are encoded as they are)."""
        if self._added():
            return "".join([compact(row) + "\n" for row in self.rows])
        return "".join(self._lines)


# A row's parts: (checkpoint, call, message index, accepted, compactions, layers), the probe, its
# label and span, the verdict, the probe's age in calls, whether the row is trivial.
_Record = tuple[tuple[str, int, int, bool, int, list[str]], Probe, str, "tuple[int, int] | None", Verdict, int, bool]


def _row(record: _Record) -> dict[str, Any]:
    """A record's row: its keys in retention.jsonl's order (that of the row's line)."""
    (why, call, at, accepted, compactions, layers), probe, label, span, verdict, age, trivial = record
    return {
        "checkpoint": why,
        "call": call,
        "message_index": at,
        "probe": probe.id,
        "kind": probe.kind,
        "label": label,
        "question": probe.question,
        "gold": probe.answer,
        "stated_at": probe.message_index,
        "span": list(span) if span else None,
        "needed_at": probe.needed_at,
        "used_again": probe.needed_at is not None,  # why it matters: the agent uses it later
        "accepted": accepted,
        "trivial": trivial,
        "age_calls": age,
        "compactions": compactions,
        "status": verdict.status,
        "judge": verdict.judge,
        "score": verdict.score,
        "layers": layers.copy(),
        "evidence": verdict.evidence,
        "answer": verdict.answer,
        "others": verdict.others,
    }


class _RecordTable(RowTable):
    """The records as the columns the metrics read; any other field from the rows themselves."""

    _FIELDS: dict[str, Callable[[_Record], Any]] = {
        "status": lambda r: r[4].status,
        "checkpoint": lambda r: r[0][0],
        "probe": lambda r: r[1].id,
        "trivial": lambda r: r[6],
        "accepted": lambda r: r[0][3],
        "age_calls": lambda r: r[5],
        "compactions": lambda r: r[0][4],
        "kind": lambda r: r[1].kind,
        "label": lambda r: r[2],
    }

    def __init__(self, records: list[_Record]) -> None:
        self.records = records

    def __len__(self) -> int:
        return len(self.records)

    def column(self, key: str, default: Any = REQUIRED) -> Sequence[Any]:
        field = self._FIELDS.get(key)
        if field is None:  # every row has every key: ``default`` is never used
            return [row[key] for row in map(_row, self.records)]
        return list(map(field, self.records))

    def row(self, index: int) -> dict[str, Any]:
        return _row(self.records[index])


def _verdict_pieces(verdict: Verdict) -> tuple[str, str]:
    """A row's fields from ``status`` to ``score``, and from ``evidence`` to ``others``."""
    status = compact({"status": verdict.status, "judge": verdict.judge, "score": verdict.score})[1:-1]
    rest = compact({"evidence": verdict.evidence, "answer": verdict.answer, "others": verdict.others})[1:-1]
    return status, rest
