"""Record what each call sent, compactly: the cell's ``contexts.jsonl.gz`` (read by ``ctxbench view``).

Every message is stored once, content-addressed (a hash of its entry: its role, text, tool calls and
where it came from), at the call it first appears; each call is then a list of references, said
against the call before's (``runs``: ``[start, length]`` for a stretch of the call before's list, a
reference for a message that was not in it), so a prompt that grew by two messages costs three
items. A message a layer derived from a transcript message (a cut observation, a masked tool result,
a snapshot pointer appended, DB-GPT's system prompt rebuilt with its progress block) names its
transcript message's index (``origin``) and the characters it starts with alike (``same``). Its text
is said one of two ways, whichever is shorter:

- against the transcript message: ``text`` is what follows those ``same`` characters (a cut
  observation costs its notice, not a copy);
- against the message last stored from the same transcript message (``base``, its reference, stored
  in an earlier row or earlier in the same row): the whole text is the base's first ``keep[0]``
  characters, then ``text``, then the base's last ``keep[1]`` (whole texts, each made whole the same
  way). DB-GPT's system prompt, rebuilt every call with one more progress line before its fixed
  tail, costs that line, not the whole prompt again (version 1 stored it whole every call: its
  text grew with every call).

``decoded`` gives each entry in version 1's form (``text`` after ``same`` characters of the
transcript message, no ``base``): what the viewer reads, from either version's files. Transcript
messages are stored as they arrive, sent or not, so the whole history a prompt is marked against
is in the file.

The first line says what the file is (``format``: FORMAT; READ lists the versions read) and the
token levels the strategy acts at (``thresholds``, from its steps and budget: the levels its events
were computed against). The work per call is a dictionary look-up per message sent; the text of
each message is hashed once, a text said against its base only its change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Container, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from ctxbench.core import ModelSpec, StrategyContext
from ctxbench.json_text import compact, compact_sorted, string_bytes
from ctxbench.tokens.counting import TokenCounter
from ctxbench.transcripts.model import ROLES, Message, ToolCall, Transcript
from ctxbench.transcripts.running import SeenPrefix

if TYPE_CHECKING:
    from _hashlib import HASH

FORMAT = "ctxbench.contexts/2"
READ = ("ctxbench.contexts/1", FORMAT)  # the versions ``decoded`` reads (1: no ``base``)
FILE = "contexts.jsonl.gz"  # gzip, two members (results/store.py: gzip_lines)
METADATA_KEPT = ("compacted_by", "snapshot", "summarised_messages")  # what the viewer shows of metadata
# An entry's values are encoded once each and put together (``ContextRecorder._ref``): the text is
# escaped once, not for its reference and again for the file. Values that hold objects are
# encoded apart with sorted keys for the reference, as ``json.dumps(entry, sort_keys=True)`` does.
_ENCODE = compact
_ENCODE_SORTED = compact_sorted


def _encode(value: Any) -> bytes:
    """``json.dumps(value, ensure_ascii=False)`` in UTF-8."""
    return _ENCODE(value).encode()


def _string(value: Any) -> bytes:
    """``_encode(value)``, through orjson's bytes for a text."""
    return string_bytes(value) if type(value) is str else _encode(value)


_ROLES = {role: _encode(role) for role in ROLES}
# A text is said against a base when that saves more characters than its keys take (``"base": "<16
# hex>", "keep": [n, n], ``: 48 for a text of 99,999 characters).
_BASE_KEYS = 64
_sha256 = hashlib.sha256


def _tool_calls(calls: Sequence[ToolCall]) -> tuple[bytes, bytes]:
    """``_encode(dicts)`` and ``_ENCODE_SORTED(dicts).encode()`` of the calls' ``to_dict()``s, each
    value encoded once: a call's arguments (a file written, a patch) escaped by orjson once, not
    by json's encoder twice (the 250k transcript's 301 calls: 1.50-1.75 -> 0.52-0.68 ms)."""
    plain, ordered = [], []
    for call in calls:
        ident, name, arguments = _string(call.id), _string(call.name), _string(call.arguments)
        plain.append(b'{"id": %s, "name": %s, "arguments": %s}' % (ident, name, arguments))
        ordered.append(b'{"arguments": %s, "id": %s, "name": %s}' % (arguments, ident, name))
    return b"[" + b", ".join(plain) + b"]", b"[" + b", ".join(ordered) + b"]"


def strategy_thresholds(strategy: Any, model: ModelSpec) -> list[dict[str, Any]]:
    """The token levels a layered strategy's proactive steps start at (``when`` x the budget or
    the window they apply to), in the strategy's own estimate: what its ``context.status``
    events compare against. Empty for a strategy without steps."""
    budget = getattr(strategy, "budget", None)
    out = []
    for step in getattr(strategy, "proactive", None) or ():
        when = getattr(step, "when", None)
        if when is None or budget is None:
            continue
        base = budget.effective(model) if getattr(step, "of", "budget") == "budget" else budget.window(model)
        layer = getattr(step.layer, "name", type(step.layer).__name__)
        out.append({"layer": layer, "ratio": when, "of": step.of, "tokens": round(when * base), "base": base})
    return out


def shared_start(a: str, b: str, hint: int = 0) -> int:
    """How many characters ``a`` and ``b`` start with alike. Slices compared in C, doubling then
    halving (only the stretch not yet known alike is compared): the character loop of
    ``os.path.commonprefix`` took a third of a DB-GPT replay's time, and halving over whole
    prefixes copied a long system prompt a dozen times a call. ``hint``: a guess (a text edited
    where the one before it was): checked in one comparison, then the search starts there."""
    if b.startswith(a):
        return len(a)  # sent whole, something added after it (a snapshot pointer)
    limit = min(len(a), len(b))
    low, step = 0, 64  # a[:low] == b[:low]
    if 0 < hint <= limit:
        if b.startswith(a[:hint]):
            low, step = hint, 1
        else:
            limit = hint - 1
    while low < limit:
        high = min(low + step, limit)
        if a[low:high] != b[low:high]:
            limit = high - 1  # they differ within [low, high)
            break
        low, step = high, step * 2
    while low < limit:  # alike up to low, differ before limit + 1
        mid = (low + limit + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            limit = mid - 1
    return low


def shared_end(a: str, b: str, limit: int, hint: int = 0) -> int:
    """How many characters ``a`` and ``b`` end with alike, at most ``limit`` (each at least that long),
    as ``shared_start`` finds it from the other end (``hint`` likewise)."""
    size_a, size_b = len(a), len(b)
    low, step = 0, 64  # a[size_a - low :] == b[size_b - low :]
    if 0 < hint <= limit:
        if b.endswith(a[size_a - hint :]):
            low, step = hint, 1
        else:
            limit = hint - 1
    while low < limit:
        high = min(low + step, limit)
        if a[size_a - high : size_a - low] != b[size_b - high : size_b - low]:
            limit = high - 1
            break
        low, step = high, step * 2
    while low < limit:
        mid = (low + limit + 1) // 2
        if a[size_a - mid : size_a - low] == b[size_b - mid : size_b - low]:
            low = mid
        else:
            limit = mid - 1
    return low


_SCANS = 4  # look-ups of a call's references in the list before by scanning it, before indexing it


def runs(refs: list[str], before: list[str], absent: Container[str] = (), agreed: int = 0) -> list[str | list[int]]:
    """``refs`` said against the call before's list: ``[start, length]`` for a run of references
    at consecutive places in ``before``, a reference for one that is not there. A prompt that only
    grew, or changed its system message and cut a message in the middle, is a few items.

    Greedy, as read from the left: a reference starts a run at its first place in ``before``, and
    the run goes on as far as both lists agree. How far is found by comparing slices (in C,
    doubling then halving), so a call costs about a C-level pass over its list, not a Python step
    per message (that step was most of the recorder's time).

    ``absent``: references known not to be in ``before`` (the recorder's new ones): said as they are
    without a look-up, so a prompt whose only changes are new messages (a masked observation, the
    history's new turns) costs no index of ``before``'s places. ``agreed``: how many leading
    references are known to be ``before``'s (the recorder's unchanged start): the first run is not
    compared over them again."""
    out: list[str | list[int]] = []
    total, known = len(refs), len(before)
    where: dict[str, int] | None = None
    i = scans = 0
    while i < total:
        ref = refs[i]
        if ref in absent:
            out.append(ref)
            i += 1
            continue
        if i == 0 and known and before[0] == ref:
            start: int | None = 0  # the first place of before[0]
        elif where is None and scans < _SCANS:  # a few look-ups: a scan in C, cheaper than an index
            scans += 1
            found = _find(before, ref, 0)
            start = found if found >= 0 else None
        else:
            if where is None:  # the first place of each reference (reversed: the first one wins)
                where = dict(zip(reversed(before), range(known - 1, -1, -1)))
            start = where.get(ref)
        if start is None:
            out.append(ref)
            i += 1
            continue
        limit = min(total - i, known - start)
        length = _agree(refs, i, before, start, limit, max(1, min(agreed, limit)) if i == start == 0 else 1)
        out.append([start, length])
        i += length
    return out


def _find(items: list[Any], value: Any, start: int) -> int:
    """The first place of ``value`` in ``items`` from ``start`` on, or -1."""
    try:
        return items.index(value, start)
    except ValueError:
        return -1


def _agree(a: list[str], i: int, b: list[str], j: int, limit: int, low: int = 1) -> int:
    """How many places ``a[i:]`` and ``b[j:]`` agree on from the start, given that the first ``low``
    do (at most ``limit``): doubling until they differ, then halving between."""
    step = 1  # a[i : i + low] == b[j : j + low]
    while low < limit:
        high = min(low + step, limit)
        if a[i + low : i + high] != b[j + low : j + high]:
            limit = high - 1  # they differ within (low, high]
            break
        low, step = high, step * 2
    while low < limit:  # agree on low, differ somewhere before limit + 1
        mid = (low + limit + 1) // 2
        if a[i + low : i + mid] == b[j + low : j + mid]:
            low = mid
        else:
            limit = mid - 1
    return low


def noted_runs(
    refs: list[str], before: list[str], replaced: list[int], where: dict[str, int], absent: Container[str] = ()
) -> list[str | list[int]]:
    """``runs(refs, before, absent)`` when ``refs`` is ``before`` with at most the places
    ``replaced`` changed (ascending, each below both lengths) and then cut or grown at its end, and
    ``where`` is the place of each reference of ``before`` (each there once). A run that starts at
    its own place goes on to the next place that changed, with nothing compared: a prompt of a
    few hundred messages with one replaced costs a few steps, not slices of both lists."""
    total, known = len(refs), len(before)
    common = min(total, known)
    changed = [i for i in replaced if refs[i] != before[i]]  # where refs and before differ, below ``common``
    changed.append(common)
    out: list[str | list[int]] = []
    i = step = 0
    while i < total:
        ref = refs[i]
        start = None if ref in absent else where.get(ref)
        if start is None:
            out.append(ref)
            i += 1
            continue
        if start == i:  # its own place: before and refs agree from here to the next change
            while changed[step] < i:
                step += 1
            length = changed[step] - i
        else:
            length = _agree(refs, i, before, start, min(total - i, known - start))
        out.append([start, length])
        i += length
    return out


def _moved(where: dict[str, int], before: list[str], refs: list[str], replaced: list[int]) -> dict[str, int] | None:
    """``where`` (each reference of ``before`` at its place, each there once) made that of ``refs``,
    which is ``before`` with the places ``replaced`` changed and its end cut or grown; None when
    ``refs`` holds a reference twice."""
    common = min(len(refs), len(before))
    changed = [i for i in replaced if refs[i] != before[i]]
    for i in changed:
        del where[before[i]]
    for i in range(common, len(before)):
        del where[before[i]]
    for i in changed:
        if where.setdefault(refs[i], i) != i:
            return None
    for i in range(common, len(refs)):
        if where.setdefault(refs[i], i) != i:
            return None
    return where


def expand(items: list[Any], before: list[str]) -> list[str]:
    """The references ``runs`` said: the inverse of ``runs(refs, before)``."""
    refs: list[str] = []
    for item in items:
        if isinstance(item, list):
            refs.extend(before[item[0] : item[0] + item[1]])
        else:
            refs.append(item)
    return refs


def decoded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A file's rows (its header first, of a version in READ) with each entry in version 1's form: a
    text said against a ``base`` made whole and given as what follows its ``same`` characters of its
    transcript message (``base`` and ``keep`` left out). A version 1 file's rows as they are."""
    if not rows or rows[0].get("format") == READ[0]:
        return rows
    texts = {e["index"]: e["text"] for row in rows[1:] for e in (row.get("new") or {}).values() if "index" in e}
    whole: dict[str, str] = {}  # reference -> whole text, of each entry derived from a transcript message
    out = [rows[0]]
    for row in rows[1:]:
        entries = row.get("new")
        if not entries:
            out.append(row)
            continue
        fixed = {}
        for ref, entry in entries.items():
            if "origin" in entry:
                if "base" in entry:
                    earlier, (head, tail) = whole[entry["base"]], entry["keep"]
                    text = earlier[:head] + entry["text"] + earlier[len(earlier) - tail :]
                    entry = {k: v for k, v in entry.items() if k != "base" and k != "keep"}
                    entry["text"] = text[entry["same"] :]
                else:
                    text = texts.get(entry["origin"], "")[: entry["same"]] + entry["text"]
                whole[ref] = text
            fixed[ref] = entry
        out.append({**row, "new": fixed})
    return out


class ContextRecorder:
    """A replay observer: one row per call into ``rows`` (written as the cell's contexts.jsonl.gz)."""

    def __init__(self, transcript: Transcript, counter: TokenCounter, strategy: Any, model: ModelSpec) -> None:
        self.transcript = transcript
        self.counter = counter
        self._index = {id(m): i for i, m in enumerate(transcript.messages)}
        self._refs: dict[int, str] = {}  # id of a message -> its reference
        self._kept: list[Message] = []  # every message in _refs, kept alive so its id stays its own
        self._stored: set[str] = set()
        self._last: list[str] = []  # the references of the prompt sent last
        # That prompt: the list object and its length then (the replay only appends to a list it
        # passed on, so it is not copied; see ``ctxbench.transcripts.running``).
        self._sent = SeenPrefix()
        self._where: dict[str, int] | None = None  # the first place of each reference in _last, if known
        self._unsent: set[str] = set()  # references stored but not sent in any prompt yet
        self._arrived = 0  # transcript messages stored so far
        # Per transcript message, the reference and text of the message last stored derived from it:
        # the ``base`` the next one derived from it is said against (DB-GPT's previous system prompt),
        # and the characters it kept of its own base's end (0 without one): where the next edit is guessed.
        self._derived: dict[int, tuple[str, str, int]] = {}
        # The file's first line: what the file is, the setting's token levels.
        self.header: dict[str, Any] = {
            "format": FORMAT,
            "transcript": transcript.id,
            "messages": len(transcript.messages),
            "compaction": getattr(strategy, "compaction", "rewrite"),
            "thresholds": strategy_thresholds(strategy, model),
            "window": model.context_window,
        }
        self._lines = [_ENCODE(self.header).encode() + b"\n"]  # the file's lines, UTF-8, in pieces

    def on_call(self, record: dict[str, Any], working: Sequence[Message], ctx: StrategyContext) -> None:
        new: dict[str, bytes] = {}  # the references stored now, with their entries' JSON
        # The messages this prompt starts with, object for object, as the one sent before did have
        # its references; only the rest is looked up. Most prompts share a long start (a strategy
        # that only appended, as `none` always does: all of the one before, the same list grown,
        # known without comparing them).
        start, replaced = self._sent.compare(working)
        grown = start == len(self._last) > 0
        noted = replaced is not None and not grown
        if noted:
            assert replaced is not None  # ``noted`` says so
            # A note says which messages were replaced (DB-GPT's system prompt, every call, and
            # the observation Layer 1 cut): the others keep the references sent, copied in C, and
            # only the replaced and appended ones can be new (in order, as a scan would find them).
            known = min(len(self._last), len(working))
            refs: list[Any] = self._last[:known]
            get = self._refs.get
            for i in replaced:
                ref = get(id(working[i]))
                refs[i] = ref if ref is not None else self._ref(working[i], new)
            for message in working[known:]:
                ref = get(id(message))
                refs.append(ref if ref is not None else self._ref(message, new))
            offset = 0  # refs covers all of working
        else:
            rest = working[start:] if start else working
            refs = list(map(self._refs.get, map(id, rest)))  # in C: most were sent before
            offset = start
            position = _find(refs, None, 0)
            while position >= 0:  # the few new messages, found in C (usually the last ones)
                refs[position] = self._ref(working[offset + position], new)
                position = _find(refs, None, position + 1)
        upto = record["message_index"] + 1  # the history so far and this call's recorded reply
        sent_new = len(new)
        for i in range(self._arrived, min(upto, len(self.transcript.messages))):
            self._ref(self.transcript.messages[i], new)
        self._arrived = max(self._arrived, upto)
        unsent = self._unsent
        said = self._appended(refs) if grown else None
        if said is not None:
            if unsent:
                unsent.difference_update(refs)  # the tail: sent now
            self._last.extend(refs)  # the list sent before, grown: not copied
            refs = self._last
        else:
            if offset:
                refs = self._last[:offset] + refs
            # Stored by this call, or before and never sent (a recorded reply, sent from the next call
            # on): not in the prompt before, so said without a look-up. The first ``start`` are its.
            absent = new.keys() | unsent if unsent else new
            said = self._noted(refs, replaced, absent) if replaced is not None and noted else None
            if said is None:
                said = runs(refs, self._last, absent, start)
                self._where = None
            if unsent:  # those said as they are were sent now (the others are runs of the prompt before's)
                unsent.difference_update([item for item in said if type(item) is str])
        if len(new) > sent_new:  # stored now and not in this prompt (its references were all known by then)
            unsent.update(islice(new, sent_new, None))
        self._row(record["call"], said, new)
        self._last = refs
        self._sent.remember(working)

    def _noted(self, refs: list[str], replaced: list[int], absent: Container[str]) -> list[str | list[int]] | None:
        """``runs(refs, self._last, absent)`` for a prompt noted as the one before with the messages
        at ``replaced`` swapped and more appended, from the first place of each reference sent
        (``_where``, kept from call to call) when no reference is in that prompt twice; else None.
        Leaves ``_where`` as the first places in ``refs`` (None when ``refs`` holds one twice)."""
        before, where = self._last, self._where
        if where is None:
            where = dict(zip(reversed(before), range(len(before) - 1, -1, -1)))
        if len(where) != len(before):  # a reference twice: compared instead
            return None
        said = noted_runs(refs, before, replaced, where, absent)
        self._where = _moved(where, before, refs, replaced)
        return said

    def _appended(self, tail: list[str]) -> list[str | list[int]] | None:
        """``runs(self._last + tail, self._last)`` when no reference of ``tail`` is in ``self._last``
        (one run, then the new references), else None. The first place of each reference in the
        list sent is kept from call to call (``_where``) and grown with the tail, so a growing
        prompt costs its new messages, not a pass over all it holds."""
        known = len(self._last)
        where = self._where
        if where is None:
            where = dict(zip(reversed(self._last), range(known - 1, -1, -1)))
        if any(map(where.__contains__, tail)):
            return None
        for offset, ref in enumerate(tail):
            where.setdefault(ref, known + offset)
        self._where = where
        return [[0, known], *tail]

    def _row(self, call: int | None, said: list[str | list[int]], new: dict[str, bytes]) -> None:
        """The line of a row ``{"call": call, "refs": said, "new": {ref: entry, ...}}`` into the
        file's text, its new entries as encoded: the line's pieces are kept as they are (an entry's
        text is copied once, by ``data``). No row is kept as a dict (``rows`` reads them back)."""
        pieces = self._lines
        pieces += (b'{"call": ', _ENCODE(call).encode(), b', "refs": ', _ENCODE(said).encode(), b', "new": {')
        separator = b'"'
        for ref, plain in new.items():
            pieces += (separator, ref.encode(), b'": ', plain)
            separator = b', "'
        pieces.append(b"}}\n")

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The file's rows as dicts (its header first), read back from its text: a cell writes the
        text and never reads these, so no entry is built as a dict while recording."""
        return [json.loads(line) for line in self.data().splitlines()]

    def data(self) -> bytes:
        """The file's text in UTF-8: each row as ``json.dumps(row, ensure_ascii=False)`` writes it, a
        line each. Kept as bytes from the encoding of each text on: nothing is encoded twice."""
        return b"".join(self._lines)

    def text(self) -> str:
        """``data()`` as text."""
        return self.data().decode("utf-8")

    def _ref(self, message: Message, new: dict[str, bytes]) -> str:
        ref = self._refs.get(id(message))
        if ref is not None:  # the message is kept alive in _kept: its id is not reused
            return ref
        plain, hashed, origin, tail = self._entry(message)
        ref = hashed.hexdigest()[:16]
        self._refs[id(message)] = ref
        if origin is not None:  # the next message derived from the same one is said against this one
            self._derived[origin] = (ref, message.content, tail)
        self._kept.append(message)
        if ref not in self._stored:
            self._stored.add(ref)
            new[ref] = plain
        return ref

    def _entry(self, message: Message) -> tuple[bytes, HASH, int | None, int]:
        """The JSON of the message's entry (``json.dumps(entry)``'s text: what ``data`` writes) and
        the sha256 of its JSON with sorted keys (``json.dumps(entry, sort_keys=True)``'s: its
        reference is that hash), in UTF-8, each value encoded once and the two put together piece by piece
        (a generic walk over the entry's keys, twice, was most of the recorder's time on a growing
        prompt; the text's bytes are orjson's, used as they are for the hash and the file). The
        entry: role, index (a transcript message) or origin and same (a layer's copy of one: the
        characters it shares with it) and, when its text is said against the message stored last
        from the same one, base and keep; text, tool_calls, tool_call_id, name, meta, tokens. The
        origin's index too (None for a transcript message or one without an origin) and the
        characters kept of its base's end (0 without a base)."""
        role, content = message.role, message.content
        index = self._index.get(id(message))
        text: str = content
        derived, kept = None, 0
        if index is not None and self.transcript.messages[index] is message:
            where = b'"index": %d, ' % index  # an int of enumerate's: its text is its repr
            first, before, after = where, b"", b""  # the keys sorting first, before "role", between it and "text"
        else:
            origin = message.origin
            at = self._index.get(id(origin)) if origin is not None else None
            if origin is not None and at is not None and self.transcript.messages[at] is origin:
                derived = at
                same = shared_start(origin.content, content)
                text = content[same:]
                first, before, after = b"", b'"origin": %d, ' % at, b'"same": %d, ' % same
                where = before + after
                base = self._derived.get(at)
                if base is not None:  # said against it when its change is shorter than the text after ``same``
                    # Edited where it was edited itself (as far from the end): DB-GPT's next progress line.
                    ref, earlier, was = base
                    head = shared_start(earlier, content, len(earlier) - was if was else 0)
                    tail = shared_end(earlier, content, min(len(earlier), len(content)) - head, was)
                    # Only when that is shorter by more than the keys it takes, and not for a copy alike.
                    if len(content) - head - tail + _BASE_KEYS < len(text) and earlier != content:
                        text = content[head : len(content) - tail]
                        first = b'"base": "%s", "keep": [%d, %d], ' % (ref.encode(), head, tail)  # sorting first
                        where += first
                        kept = tail
            else:
                where = first = before = after = b""
        code_role = _ROLES.get(role) or _encode(role)
        code_text = string_bytes(text)  # a message's content is a text
        plain = [b'{"role": ', code_role, b", ", where, b'"text": ', code_text]
        hashed_end = b""  # the keys that sort after "tokens"
        if message.tool_calls:
            code_calls, sorted_calls = _tool_calls(message.tool_calls)
            plain += (b', "tool_calls": ', code_calls)
            hashed_end = b', "tool_calls": ' + sorted_calls
        if message.tool_call_id:
            code = _string(message.tool_call_id)
            plain += (b', "tool_call_id": ', code)
            hashed_end = b', "tool_call_id": ' + code + hashed_end
        if message.name:
            code = _string(message.name)
            plain += (b', "name": ', code)
            before = b'"name": ' + code + b", " + before
        meta = {k: message.metadata[k] for k in METADATA_KEPT if k in message.metadata} if message.metadata else None
        if meta:
            plain += (b', "meta": ', _encode(meta))
            before = b'"meta": ' + _ENCODE_SORTED(meta).encode() + b", " + before
        tokens = self.counter.message(message)
        code_tokens = b"%d" % tokens if type(tokens) is int else _encode(tokens)
        plain += (b', "tokens": ', code_tokens, b"}")
        # Hashed in three parts: the text (most of the bytes) is not copied into one string first.
        hashed = _sha256(b"".join((b"{", first, before, b'"role": ', code_role, b", ", after, b'"text": ')))
        hashed.update(code_text)
        hashed.update(b"".join((b', "tokens": ', code_tokens, hashed_end, b"}")))
        return b"".join(plain), hashed, derived, kept

    def on_end(self, working: Sequence[Message], ctx: StrategyContext) -> None:
        new: dict[str, bytes] = {}
        for i in range(self._arrived, len(self.transcript.messages)):  # messages after the last call
            self._ref(self.transcript.messages[i], new)
        self._arrived = len(self.transcript.messages)
        if new:
            self._row(None, [], new)
