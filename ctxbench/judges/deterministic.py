"""The deterministic judge: is the gold value (normalised) in the working context, or
recoverable through a snapshot pointer that the context still holds? Snapshots are read
through the ``SnapshotSource`` the strategy provides (``Strategy.snapshots(cell)``).

Messages are immutable and a replay passes the same message objects from call to call, so
what the judge needs of a message (which golds its text holds, which snapshot pointers it
carries) is found once per message object (``ctxbench.judges.gold_index``), and a checkpoint's
verdicts are a lookup over its context: ``judge_many`` judges all of a checkpoint's probes in
one walk of it (what ``ctxbench.probes.checkpoints.ProbeObserver`` calls); ``judge`` is the
same for one probe."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import chain, compress
from typing import cast

from ctxbench.core import SnapshotSource
from ctxbench.judges.base import Verdict
from ctxbench.judges.context_view import ContextView
from ctxbench.judges.gold_index import EMPTY, LINES_KEPT, GoldIndex, normalise
from ctxbench.transcripts.model import Message, Probe, json_strings

__all__ = ["DeterministicJudge", "normalise"]

LAST_LINE_CHARS = 4096  # a grown message whose base's last line is longer: its pointers read in its whole text
LINE_CHARS_KEPT = 4 << 20  # characters of lines _LineFacts remembers before it starts again
SERIES_KEPT = 64  # series of grown texts _LineFacts follows before it starts again


class _Facts:
    """What the judge found in one message object (kept beside it, so its id stays unique)."""

    __slots__ = ("message", "anchors", "golds", "pointers")

    def __init__(self, message: Message, anchors: frozenset[int], golds: frozenset[int]) -> None:
        self.message = message
        self.anchors = anchors
        self.golds = golds
        # the snapshot pointers in its content (with a snapshot source; None: not read yet)
        self.pointers: tuple[str, ...] | None = None


class DeterministicJudge:
    name = "deterministic"

    def __init__(self, snapshots: SnapshotSource | None = None) -> None:
        # The strategy's snapshots (None: it keeps none, so nothing is "recoverable").
        self.snapshots = snapshots
        self._index = GoldIndex()
        self._version = 0  # the index's version the cached facts were found with
        self._facts: dict[int, _Facts] = {}  # by id of the message (held in the facts)
        # The last context judged: each position's facts when it holds a gold or a snapshot pointer.
        self._view: ContextView[_Facts] = ContextView(self._mark)
        self._probe_golds: dict[int, tuple[Probe, tuple[int, ...]]] = {}
        self._snapshot_golds: dict[str, frozenset[int]] = {}
        self._lines: _LineFacts | None = None  # what the lines of appended texts hold, remembered
        # The anchors of message contents searched, by the string's id (held in the value): a
        # snapshot records a tool result's content, the same string, read again otherwise.
        self._content_anchors: dict[int, tuple[str, frozenset[int]]] = {}
        # Verdicts are immutable: one of each (a checkpoint gives about ten, at nearly every call).
        self._kept: dict[int, Verdict] = {}  # by the evidence message's place
        self._recovered: dict[str, Verdict] = {}  # by the pointer
        self._lost = Verdict("lost", self.name)

    # --- what the judge knows of probes and messages ---------------------------------------
    def expect(self, probes: Sequence[Probe]) -> None:
        """Learn the golds of every probe it will judge up front: a gold first seen later makes
        it search the messages it has seen again."""
        for probe in probes:
            self._golds(probe)
        self._sync()

    def _golds(self, probe: Probe) -> tuple[int, ...]:
        hit = self._probe_golds.get(id(probe))
        if hit is None or hit[0] is not probe:
            golds = [normalise(g) for g in (probe.answer, *probe.aliases) if g.strip()]
            hit = self._probe_golds[id(probe)] = (probe, self._index.ids(golds))
        return hit[1]

    def _sync(self) -> None:
        if self._version != self._index.version:  # new golds: what was found may miss them
            self._facts.clear()
            self._view.clear()
            self._snapshot_golds.clear()
            self._content_anchors.clear()
            self._lines = None
            self._version = self._index.version

    def _facts_of(self, message: Message) -> _Facts:
        # The cache holds the message itself, so an id in it is never reused by another object.
        facts = self._facts.get(id(message))
        if facts is None:
            facts = self._facts[id(message)] = self._find(message)
            if facts.pointers is None:
                facts.pointers = tuple(self.snapshots.pointers(message.content)) if self.snapshots is not None else ()
        return facts

    def _mark(self, message: Message) -> _Facts | None:
        """The message's facts when they matter to a verdict (a gold or a snapshot pointer)."""
        facts = self._facts_of(message)
        return facts if facts.golds or facts.pointers else None

    def _line_facts(self) -> _LineFacts:
        lines = self._lines
        if lines is None or lines.snapshots is not self.snapshots:
            lines = self._lines = _LineFacts(self._index, self.snapshots)
        return lines

    def _find(self, message: Message) -> _Facts:
        index = self._index
        base = message.appended_to
        if base is not None and not message.tool_calls and not base.tool_calls:
            # content = base's content + suffix: an anchor is in the base, or within the base's
            # last (longest anchor - 1) characters and the suffix (case folding is per character
            # and never makes a character vanish).
            found = self._facts_of(base)
            suffix = message.content[len(base.content) :]
            cut = suffix.find("\n")  # its first line continues the base's last line
            first, rest = (suffix, None) if cut < 0 else (suffix[:cut], suffix[cut + 1 :])
            keep = max(index.longest_anchor - 1, 0)
            seam = base.content[-keep:] if keep else ""  # all of a base shorter than that
            anchors = index.anchors_in((seam + first).casefold()) if first else EMPTY  # else the base's
            # The lines after it recur (DB-GPT rebuilds its progress block every call, one line
            # longer; the same pointer notices): read line by line, the lines seen remembered. An
            # anchor holds no whitespace and a pointer never spans a line break (SnapshotSource).
            pointers: tuple[str, ...] = ()
            if rest is not None and "\n" not in rest:
                # One line (DB-GPT's pointer notice after an observation: a new path each time, its
                # base new too): its facts as _LineFacts reads a single new line, not remembered.
                anchors = anchors | index.anchors_in(rest.casefold())
                if self.snapshots is not None:
                    pointers = tuple(self.snapshots.pointers(rest))
            elif rest is not None:
                rest_anchors, pointers = self._line_facts().of_grown(rest, base)
                anchors = anchors | rest_anchors
            facts = _Facts(message, found.anchors | anchors, EMPTY)
            # The base's pointers stand, but those of its last line when the suffix continues it.
            start = base.content.rfind("\n") + 1
            if self.snapshots is None or found.pointers is None:
                pass
            elif not first:  # the suffix starts a line (pointer notices, progress blocks)
                facts.pointers = found.pointers + pointers
            elif len(base.content) - start <= LAST_LINE_CHARS:
                last = base.content[start:]
                before = len(found.pointers) - len(self.snapshots.pointers(last))
                facts.pointers = found.pointers[:before] + tuple(self.snapshots.pointers(last + first)) + pointers
            # It holds its base's golds; another is in the base's last words and the suffix. That
            # text recurs (a progress block's lines): normalised line by line, remembered.
            facts.golds = index.golds_in(
                facts.anchors, lambda: index.normalised_by_lines(index.seam_words(base.content) + suffix), found.golds
            )
            return facts
        text = _raw_text(message)
        folded = text.casefold()
        anchors = index.anchors_in(folded)
        # normalise(text), from the text folded already
        facts = _Facts(message, anchors, index.golds_in(anchors, lambda: " ".join(folded.split())))
        if text is message.content:
            self._content_anchors[id(text)] = (text, anchors)
            # The pointer search takes the folded text when the source can (no second lowering).
            folded_pointers = getattr(self.snapshots, "pointers_folded", None)
            if folded_pointers is not None:
                facts.pointers = tuple(folded_pointers(text, folded))
        return facts

    def forget_except(self, working: Sequence[Message]) -> None:
        """Drop what was found in messages no longer in the working context."""
        alive = {id(m) for m in working}
        self._facts = {k: v for k, v in self._facts.items() if k in alive}
        self._content_anchors.clear()  # a cache only: what it misses is searched again

    def _snapshot_holds(self, path: str) -> frozenset[int] | None:
        """The golds the snapshot holds; None while it is not written (looked up again next time:
        it may still be written later in the replay)."""
        held = self._snapshot_golds.get(path)
        if held is None:
            record = self.snapshots.read(path) if self.snapshots is not None else None
            if record is None:
                return None
            # As a message's text: its anchors first, normalised only to confirm a gold of several
            # words (most snapshots hold none: a tool result normalised costs more than searched).
            # An anchor holds no whitespace, so the joined text's are its parts': those of a part
            # searched as a message's content (the tool result it records) are known.
            parts = json_strings(record)
            index, known = self._index, self._content_anchors
            anchors, unknown = EMPTY, []
            for part in parts:
                hit = known.get(id(part))
                if hit is not None and hit[0] is part:
                    anchors = anchors | hit[1]
                else:
                    unknown.append(part)
            if unknown:
                anchors = anchors | index.anchors_in(" ".join(unknown).casefold())
            held = self._snapshot_golds[path] = index.golds_in(anchors, lambda: normalise(" ".join(parts)))
        return held

    # --- verdicts ----------------------------------------------------------------------------
    def judge(self, probe: Probe, working: Sequence[Message]) -> Verdict:
        return self.judge_many([probe], working)[0]

    def judge_many(
        self,
        probes: Sequence[Probe],
        working: Sequence[Message],
        origins: Sequence[int] | None = None,
        before: Sequence[int | None] | None = None,
        origin_of: Mapping[int, int] | None = None,
    ) -> list[Verdict]:
        """The verdict of each probe on one context. With ``origins`` (a number per message of
        ``working``) and ``before`` (a limit per probe, or None), probe k is judged on the
        messages whose origin is below ``before[k]``: the verdict ``judge(probe, [m for m, o in
        zip(working, origins) if o < before[k]])`` gives, evidence index included. ``origin_of``
        instead of ``origins``: a message's origin by its id (-1 when absent), the same mapping
        from checkpoint to checkpoint (the origins are then kept per position, as the facts)."""
        wanted = [self._golds(p) for p in probes]
        self._sync()
        if len(self._facts) > 2 * len(working) + 1024:  # keep memory to about the context's
            self.forget_except(working)
        view = self._view
        view.update(working, origin_of)  # finds what new messages hold
        # Only messages holding a gold or a snapshot pointer matter from here on.
        marks = view.marks
        # (position, facts): the positions found in C first (a pair for every position costs 3x more)
        positions = list(compress(range(len(marks)), marks))
        interesting = cast("list[tuple[int, _Facts]]", list(zip(positions, map(marks.__getitem__, positions))))
        where: dict[int, list[int]] = {}  # gold -> positions of the messages that hold it
        for position, found in interesting:
            for gold in found.golds:
                where.setdefault(gold, []).append(position)
        seen_from: Sequence[int] = origins if origins is not None else view.origins if origin_of is not None else ()
        # The highest origin up to each position (the view keeps it, from checkpoint to checkpoint).
        reach: Sequence[int] | None = view.reach if origins is None and origin_of is not None else None
        hides = before is not None and any(limit is not None for limit in before)
        if not hides:
            highest = -1
        elif reach is not None:
            highest = reach[-1] if reach else -1
        else:
            highest = max(seen_from, default=-1)
        recoverable: list[tuple[int, str, frozenset[int]]] | None = None
        kept = self._kept
        verdicts = []
        for k, golds in enumerate(wanted):
            limit = before[k] if before is not None else None
            cut = limit if limit is not None and highest >= limit else None  # None: nothing hidden
            verdict = None
            for gold in golds:
                for position in where.get(gold, ()):
                    if cut is not None and seen_from[position] >= cut:
                        continue
                    # its place among the messages the probe is judged on (those hidden are mostly
                    # after it: later in the transcript)
                    shown = position
                    if (
                        cut is not None
                        and position
                        and (reach[position - 1] if reach is not None else max(seen_from[:position])) >= cut
                    ):
                        shown -= sum(map(cut.__le__, seen_from[:position]))
                    verdict = kept.get(shown) or kept.setdefault(
                        shown, Verdict("kept", self.name, evidence=f"message {shown}")
                    )
                    break
                if verdict is not None:
                    break
            if verdict is None and self.snapshots is not None and golds:
                if recoverable is None:
                    recoverable = self._recoverable(interesting, marks)
                wanted_set = set(golds)
                for position, path, held in recoverable:
                    if cut is not None and seen_from[position] >= cut:
                        continue
                    if not wanted_set.isdisjoint(held):
                        verdict = self._recovered.get(path) or self._recovered.setdefault(
                            path, Verdict("recoverable", self.name, evidence=path)
                        )
                        break
            verdicts.append(verdict or self._lost)
        return verdicts

    def _recoverable(
        self, interesting: Sequence[tuple[int, _Facts]], marks: list[_Facts | None]
    ) -> list[tuple[int, str, frozenset[int]]]:
        """(position, pointer, golds) of every pointer in the context whose snapshot holds a gold,
        in the order of the context and of the pointers in each message. A message that holds no
        gold and whose snapshots are all written without one is of no more interest."""
        out = []
        for position, found in interesting:
            keep = False
            for path in found.pointers or ():
                held = self._snapshot_holds(path)
                if held is None:  # not written yet
                    keep = True
                elif held:
                    out.append((position, path, held))
                    keep = True
            if not keep and not found.golds:
                marks[position] = None  # of no more interest while it stays there
        return out


class _LineFacts:
    """The anchors and snapshot pointers of texts made of lines seen before (the appended parts of
    messages), from those of their lines, remembered: only the new lines are read."""

    def __init__(self, index: GoldIndex, snapshots: SnapshotSource | None) -> None:
        self.index, self.snapshots = index, snapshots
        self._anchors: dict[str, frozenset[int]] = {}
        self._pointers: dict[str, tuple[str, ...]] = {}
        self._with_pointers: set[str] = set()  # the lines that hold one
        self._chars = 0
        # By the id of what a series of texts grows from (held in the value): the last text, and
        # how the series grows (_Growth), once two texts of it show lines inserted at one place.
        self._series: dict[int, tuple[object, str, _Growth | None]] = {}

    def of_grown(self, text: str, key: object) -> tuple[frozenset[int], tuple[str, ...]]:
        """``of(text)``, for a series of texts (those grown from ``key``) where each is the one
        before with lines inserted at one place: DB-GPT's progress block gains a step line before
        its footer every call. Then only the inserted lines are looked at (two searches of the
        text in C: its start and its end), not every line of it."""
        series = self._series.get(id(key))
        if series is not None and series[0] is key:
            _, last, growth = series
            if growth is not None:
                grown = growth.of(text, self)
                if grown is not None:
                    self._series[id(key)] = (key, text, growth)
                    return grown
        else:
            last = None
        found = self.of(text)
        if len(self._series) > SERIES_KEPT:
            self._series.clear()
        self._series[id(key)] = (key, text, _Growth.between(last, text, self) if last is not None else None)
        return found

    def of(self, text: str) -> tuple[frozenset[int], tuple[str, ...]]:
        lines = text.split("\n")
        unique = set(lines)
        known = self._anchors
        new = unique.difference(known)
        if new:
            self._read(new)
        anchors = EMPTY.union(*map(known.__getitem__, unique))
        if self._with_pointers.isdisjoint(unique):
            return anchors, ()
        return anchors, tuple(chain.from_iterable(map(self._pointers.__getitem__, lines)))

    def _read(self, new: set[str]) -> None:
        if len(self._anchors) > LINES_KEPT or self._chars > LINE_CHARS_KEPT:  # memory stays bounded
            self._anchors.clear()
            self._pointers.clear()
            self._with_pointers.clear()
            self._chars = 0
        self._chars += sum(map(len, new))
        joined = "\n".join(new)  # one search of all the new lines, then line by line on a hit
        hits = self.index.anchors_in(joined.casefold())
        if len(new) == 1:  # the one line's facts are the joined text's (a pointer notice, a step line)
            found = tuple(self.snapshots.pointers(joined)) if self.snapshots is not None else ()
            self._anchors[joined], self._pointers[joined] = hits, found
            if found:
                self._with_pointers.add(joined)
            return
        anchors = self.index.anchors
        any_pointer = self.snapshots is not None and bool(self.snapshots.pointers(joined))
        for line in new:
            if hits:
                folded = line.casefold()
                held = [a for a in hits if anchors[a] in folded]
                self._anchors[line] = frozenset(held) if held else EMPTY
            else:
                self._anchors[line] = EMPTY
            found = tuple(self.snapshots.pointers(line)) if any_pointer and self.snapshots is not None else ()
            self._pointers[line] = found
            if found:
                self._with_pointers.add(line)


class _Growth:
    """How a series of texts grows: each is ``head + inserted + tail``, where ``head`` is empty or
    ends with a line break and ``inserted`` is empty or ends with one, so the text's lines are
    head's (without its last, empty one), inserted's likewise, and tail's; the next text's head is
    this one's head and inserted lines. With the anchors and pointers of head's and tail's lines."""

    __slots__ = ("head", "tail", "head_facts", "tail_facts")

    def __init__(self, head: str, tail: str, lines: _LineFacts) -> None:
        self.head, self.tail = head, tail
        self.head_facts = lines.of(head[:-1]) if head else (EMPTY, ())
        self.tail_facts = lines.of(tail)

    @classmethod
    def between(cls, last: str, text: str, lines: _LineFacts) -> _Growth | None:
        """The growth from ``last`` to ``text`` when ``text`` is ``last`` with lines inserted at one
        place (and a line of the end kept), else None."""
        before, after = last.split("\n"), text.split("\n")
        if len(after) <= len(before):
            return None
        start = 0  # lines in common at the start
        while start < len(before) and before[start] == after[start]:
            start += 1
        end = 0  # and at the end, not overlapping those
        while end < len(before) - start and before[-1 - end] == after[-1 - end]:
            end += 1
        if start + end != len(before) or end == 0:
            return None
        head = "\n".join(after[:start]) + "\n" if start else ""
        return cls(head, "\n".join(after[len(after) - end :]), lines)

    def of(self, text: str, lines: _LineFacts) -> tuple[frozenset[int], tuple[str, ...]] | None:
        """``lines.of(text)`` when ``text`` grew this way (its head and inserted lines become the
        next head), else None."""
        head, tail = self.head, self.tail
        if len(text) < len(head) + len(tail) or not text.startswith(head) or not text.endswith(tail):
            return None
        inserted = text[len(head) : len(text) - len(tail)]
        (head_anchors, head_pointers), (tail_anchors, tail_pointers) = self.head_facts, self.tail_facts
        if not inserted:
            return head_anchors | tail_anchors, head_pointers + tail_pointers
        if not inserted.endswith("\n"):
            return None
        anchors, pointers = lines.of(inserted[:-1])
        self.head = head + inserted
        self.head_facts = head_anchors | anchors, head_pointers + pointers
        return head_anchors | anchors | tail_anchors, head_pointers + pointers + tail_pointers


def _raw_text(message: Message) -> str:
    """The text a message's golds are looked for in: its content and its tool calls (name, raw
    arguments, and their JSON string values without escapes)."""
    if not message.tool_calls:
        return message.content
    calls = " ".join(f"{c.name} {c.arguments} {_decoded(c.arguments)}" for c in message.tool_calls)
    return f"{message.content} {calls}"


def _decoded(arguments: str) -> str:
    """Tool-call arguments as the agent meant them: JSON string values without escapes."""
    try:
        return " ".join(json_strings(json.loads(arguments)))
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a parser goes
        return ""
