"""Recorded contexts (a cell's contexts.jsonl.gz): every call's prompt can be rebuilt exactly from
the compact file, a layer's cut is stored as its transcript message plus what changed, and the
switch turns the file off."""

import dataclasses
import gzip
import hashlib
import json
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.build import build_estimator, build_model, build_strategy
from ctxbench.errors import InputError
from ctxbench.replay.contexts import (
    FILE,
    READ,
    ContextRecorder,
    _moved,
    decoded,
    expand,
    noted_runs,
    runs,
    shared_end,
    shared_start,
)
from ctxbench.replay.engine import replay
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts import write_transcripts
from ctxbench.transcripts.canonical import load_transcripts
from ctxbench.transcripts.model import ToolCall
from ctxbench.view.data import prompt_of, read_contexts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript
from tests.test_replay_view import Prompts
from tests.test_strategy_dbgpt import composed, react_transcript


def _replayed(transcript, *overrides):
    cfg = composed(*overrides)
    model = build_model(cfg)
    counter = TokenCounter(get_tokenizer(model.tokenizer))
    strategy = build_strategy(cfg)
    recorder = ContextRecorder(transcript, counter, strategy, model)
    prompts = Prompts()
    result = replay(transcript, strategy, build_estimator(cfg), model, counter, observers=[prompts, recorder])
    return result, prompts, recorder


def _as_file(tmp_path, rows):
    (tmp_path / FILE).write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    return read_contexts(tmp_path)


@pytest.mark.parametrize("strategy", ["dbgpt", "sliding_window", "observation_masking", "five_layer"])
def test_every_prompt_is_rebuilt_exactly_from_the_file(tmp_path, strategy):
    transcript = react_transcript(rounds=120, tid="react120")
    overrides = ["model=gpt-4-32k"]
    if strategy == "dbgpt":
        overrides.append("strategy.params.max_context_tokens=null")
    result, prompts, recorder = _replayed(transcript, f"strategy={strategy}", *overrides)
    assert sum(1 for c in result.calls if c["layers"]) > 5  # the strategy did compact
    contexts = _as_file(tmp_path, recorder.rows)
    for call, sent in enumerate(prompts.sent):
        rebuilt = prompt_of(contexts, call)
        assert [(e["role"], e["text"]) for e in rebuilt] == [(m.role, m.content) for m in sent], call
    # Compact: a call says its list against the call before's, in a few items.
    items = sum(len(r["refs"]) for r in recorder.rows[1:])
    assert items <= sum(len(s) for s in prompts.sent) / 2


def test_a_layer1_cut_is_its_transcript_message_and_the_notice(tmp_path):
    transcript = coding_transcript(rounds=40, lines_per_output=60)
    _, prompts, recorder = _replayed(
        transcript, "strategy=dbgpt", "model=gpt-4-32k", "strategy.params.max_context_tokens=12000"
    )
    contexts = _as_file(tmp_path, recorder.rows)
    cut = [
        e
        for call in range(len(prompts.sent))
        for e in prompt_of(contexts, call)
        if "layer1" in (e.get("meta") or {}).get("compacted_by", [])
    ]
    assert cut, "layer1 cut nothing"
    entry = cut[0]
    original = transcript.messages[entry["origin"]].content
    assert entry["text"].startswith(original[: entry["same"]])  # prompt_of made the text whole
    assert 0 < entry["same"] < len(original) and "[truncated" in entry["text"]
    header = recorder.rows[0]
    layers = {t["layer"]: t["tokens"] for t in header["thresholds"]}
    assert layers["layer1"] == round(0.7 * (12000 - 4096)) and layers["layer3"] == round(0.9 * (12000 - 4096))
    # The whole history is in the file: every transcript message up to the last call, once.
    stored = {e["index"] for r in recorder.rows[1:] for e in r["new"].values() if "index" in e}
    assert stored == set(range(len(transcript.messages)))


def test_a_bad_contexts_file_is_one_error_naming_it(tmp_path):
    (tmp_path / FILE).write_bytes(gzip.compress(b'{"format": "ctxbench.contexts/1"}\n{not json\n'))
    with pytest.raises(InputError, match="line 2"):
        read_contexts(tmp_path)
    (tmp_path / FILE).write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=FILE):
        read_contexts(tmp_path)


def test_a_run_records_contexts_and_the_switch_turns_them_off(tmp_path):
    data = tmp_path / "data"
    write_transcripts(data / "a.jsonl", [coding_transcript(rounds=12, tid="a")])

    def run(name, *extra):
        args = ["run", "strategy=sliding_window", f"dataset.paths=[{data}]", f"output.root={tmp_path}"]
        args.append("progress=false")
        done = subprocess.run(
            [*CTXBENCH, *args, f"output.name={name}", *extra], capture_output=True, text=True, cwd=ROOT, timeout=300
        )
        assert done.returncode == 0, done.stderr
        (cell,) = [p.parent for p in (tmp_path / name).rglob("summary.json")]
        return cell

    on = run("on")
    assert read_contexts(on)["header"]["transcript"] == "a"
    off = run("off", "output.contexts=false")
    assert not (off / FILE).exists()
    # The switch changes no number: the same cell hash, the same metrics.
    assert off.name == on.name
    metrics = [json.loads((c / "summary.json").read_text())["metrics"] for c in (on, off)]
    assert metrics[0]["tokens_sent_total"] == metrics[1]["tokens_sent_total"]


# --- the recorder's fast paths against the simple forms they replaced ------------------------
def reference_runs(refs, before):
    """``runs`` as first written: one Python step per reference (the reference, slow)."""
    where = {}
    for i, ref in enumerate(before):
        where.setdefault(ref, i)
    out = []
    for ref in refs:
        last = out[-1] if out else None
        if isinstance(last, list) and last[0] + last[1] < len(before) and before[last[0] + last[1]] == ref:
            last[1] += 1
        elif ref in where:
            out.append([where[ref], 1])
        else:
            out.append(ref)
    return out


class ReferenceRecorder(ContextRecorder):
    """The recorder as first written: a reference per message looked up one at a time, ``runs``
    in Python (its rows are what the file held before the fast paths)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.reference_rows = [self.header]

    def on_call(self, record, working, ctx):
        new = {}
        refs = [self._ref(m, new) for m in working]
        upto = record["message_index"] + 1
        for i in range(self._arrived, min(upto, len(self.transcript.messages))):
            self._ref(self.transcript.messages[i], new)
        self._arrived = max(self._arrived, upto)
        entries = {ref: json.loads(plain) for ref, plain in new.items()}
        self.reference_rows.append({"call": record["call"], "refs": reference_runs(refs, self._last), "new": entries})
        self._last = refs

    def on_end(self, working, ctx):
        new = {}
        for message in self.transcript.messages[self._arrived :]:
            self._ref(message, new)
        if new:
            self.reference_rows.append({"call": None, "refs": [], "new": {r: json.loads(e) for r, e in new.items()}})


REFS = st.lists(st.sampled_from("abcdefgh"), max_size=40)


@settings(max_examples=400, deadline=None)
@given(refs=REFS, before=REFS, edits=st.lists(st.tuples(st.integers(0, 40), st.sampled_from("abcxyz")), max_size=4))
def test_runs_are_the_simple_forms(refs, before, edits):
    assert runs(refs, before) == reference_runs(refs, before)
    grown = list(before)  # the usual case: the list before, edited in a few places and grown
    for at, ref in edits:
        grown.insert(at % (len(grown) + 1), ref)
    grown += refs[:3]
    assert runs(grown, before) == reference_runs(grown, before)
    assert expand(runs(grown, before), before) == grown
    absent = set(grown) - set(before)  # the recorder's new references: said without a look-up
    assert runs(grown, before, absent) == reference_runs(grown, before)
    agreed = next((i for i, (a, b) in enumerate(zip(grown, before)) if a != b), min(len(grown), len(before)))
    for known in {0, agreed // 2, agreed}:  # the recorder's unchanged start, or part of it
        assert runs(grown, before, absent, known) == reference_runs(grown, before)


@settings(max_examples=400, deadline=None)
@given(
    size=st.integers(0, 30),
    swaps=st.lists(st.tuples(st.integers(0, 30), st.sampled_from("abcdxyz")), max_size=5),
    end=st.integers(-5, 5),
    same=st.lists(st.integers(0, 30), max_size=3),
    absent_too=st.booleans(),
)
def test_noted_runs_are_runs(size, swaps, end, same, absent_too):
    """A prompt noted as the one before with a few places replaced (by new references, by ones it
    holds elsewhere, by ones from further back) and cut or grown at its end: said as ``runs`` says
    it, and the places kept for the next call are those of the new list (None when one is there twice)."""
    before = [f"r{i}" for i in range(size)]
    refs = list(before)
    for at, letter in swaps:
        if at < size:
            refs[at] = before[(at + 3) % size] if letter == "d" else letter  # "d": one the list holds elsewhere
    refs = refs[: size + end] if end < 0 else refs + [f"n{i}" for i in range(end)]
    # A place the note names may hold a message of the same reference (``same``: a copy alike).
    replaced = sorted({at for at in [*(at for at, _ in swaps), *same] if at < min(size, len(refs))})
    absent = {r for r in refs if r not in before} if absent_too else set()
    where = {r: i for i, r in enumerate(before)}
    assert noted_runs(refs, before, replaced, dict(where), absent) == runs(refs, before, absent)
    moved = _moved(dict(where), before, refs, replaced)
    assert moved == ({r: i for i, r in enumerate(refs)} if len(set(refs)) == len(refs) else None)


@pytest.mark.parametrize("strategy", ["dbgpt", "observation_masking", "five_layer", "sliding_window", "none"])
def test_rows_are_the_reference_recorders(strategy):
    transcript = react_transcript(rounds=120, tid="react120")
    overrides = [f"strategy={strategy}", "model=gpt-4-32k"]
    if strategy == "dbgpt":
        overrides.append("strategy.params.max_context_tokens=null")
    cfg = composed(*overrides)
    model = build_model(cfg)
    counter = TokenCounter(get_tokenizer(model.tokenizer))
    strategy_built = build_strategy(cfg)
    fast = ContextRecorder(transcript, counter, strategy_built, model)
    slow = ReferenceRecorder(transcript, counter, strategy_built, model)
    result = replay(transcript, strategy_built, build_estimator(cfg), model, counter, observers=[fast, slow])
    if strategy != "none":  # none sends every prompt grown from the one before (the recorder's fast path)
        assert sum(1 for c in result.calls if c["layers"]) > 5
    assert json.dumps(fast.rows) == json.dumps(slow.reference_rows)
    _text_and_refs_are_json_dumps(fast)


def _text_and_refs_are_json_dumps(recorder: ContextRecorder) -> set[str]:
    """The file's text is the rows as json.dumps writes them, and a reference the sha256 of its entry's
    sorted JSON (the recorder puts both together from values it encoded once); the entries' keys."""
    assert recorder.text() == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recorder.rows)
    entries = [e for r in recorder.rows[1:] for e in r["new"].items()]
    for ref, entry in entries:
        assert ref == hashlib.sha256(json.dumps(entry, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    return {k for _, e in entries for k in e}


def test_text_and_refs_of_tool_calls_pointers_and_other_scripts_are_json_dumps():
    transcript = coding_transcript(rounds=40, tid="coding40")
    messages = list(transcript.messages)
    messages[1] = messages[1].replace(content=messages[1].content + " naïve “quoted” \\ \t ✓ 日本語 \U0001f600")
    # Tool calls whose id, name and arguments need escapes (the recorder encodes their values once).
    at = next(i for i, m in enumerate(messages) if m.tool_calls)
    odd = [
        dataclasses.replace(c, arguments=c.arguments + ' "é\\\n\u2028"', name=c.name + "\t✓")
        for c in messages[at].tool_calls
    ]
    messages[at] = messages[at].replace(tool_calls=(*odd, ToolCall(id='c"1', name="ü", arguments="")))
    transcript = dataclasses.replace(transcript, messages=messages)
    small = ("model=gpt-4-32k", "model.context_window=6000", "model.reserved_output_tokens=1000")
    _, _, recorder = _replayed(transcript, "strategy=dbgpt", *small)
    kinds = _text_and_refs_are_json_dumps(recorder)
    assert {"tool_calls", "tool_call_id", "name", "meta", "origin", "same", "index"} <= kinds, kinds


# --- version 2: a message said against the one stored before it from the same transcript message --
class Version1Recorder(ContextRecorder):
    """The recorder as version 1 wrote: every derived text against its transcript message (no
    ``base``), the header's format 1 (the rest of the recorder is version 1's, unchanged)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.header["format"] = READ[0]
        self._lines[0] = (json.dumps(self.header, ensure_ascii=False) + "\n").encode()
        self._derived = _Forgets()


class _Forgets(dict):
    def __setitem__(self, key, value):
        pass  # no base is ever known


def _prompts(rows):
    """Each call's prompt as its entries (no references): what the viewer marks and shows."""
    table, refs, out = {}, [], []
    for row in rows[1:]:
        table.update(row.get("new") or {})
        if row.get("call") is not None:
            refs = expand(row["refs"], refs)
            out.append((row["call"], [table[r] for r in refs]))
    return out, sorted((e["index"], e["text"]) for e in table.values() if "index" in e)


@pytest.mark.parametrize("strategy", ["dbgpt", "five_layer", "observation_masking"])
def test_version_2_decodes_to_what_version_1_stored(tmp_path, strategy):
    """On a bundled transcript: each call's prompt, entry for entry, and the history, from a version 2
    file (read as the viewer reads it) are version 1's; DB-GPT's rebuilt system prompt is stored
    against the one before it, each its change, not its whole text again."""
    (transcript,) = [t for t in load_transcripts([ROOT / "ctxbench/data/bundled"]) if t.id == "synth-sql_060k"]
    cfg = composed(f"strategy={strategy}")
    model = build_model(cfg)
    counter = TokenCounter(get_tokenizer(model.tokenizer))
    built = build_strategy(cfg)
    new, old = ContextRecorder(transcript, counter, built, model), Version1Recorder(transcript, counter, built, model)
    replay(transcript, built, build_estimator(cfg), model, counter, observers=[new, old])
    (tmp_path / FILE).write_bytes(gzip.compress(new.data()))
    read = read_contexts(tmp_path)
    assert read["header"] == {**old.rows[0], "format": "ctxbench.contexts/2"}
    assert _prompts([read["header"], *read["rows"]]) == _prompts(old.rows)
    assert not any("base" in e for r in old.rows[1:] for e in r["new"].values())
    assert decoded(old.rows) == old.rows  # a version 1 file's rows as they are
    based = [e for r in new.rows[1:] for e in r["new"].values() if "base" in e]
    if strategy == "dbgpt":
        assert len(based) > 50
        stored = [[e for r in f.rows[1:] for e in r["new"].values() if "origin" in e] for f in (new, old)]
        derived = [sum(len(e["text"]) for e in entries) for entries in stored]  # the derived texts' characters
        assert derived[0] < derived[1] / 10, derived
        assert max(len(e["text"]) for e in based) < 1000  # a progress line, not the prompt
    _text_and_refs_are_json_dumps(new)


def test_a_version_1_file_an_earlier_run_wrote_reads_as_it_was(tmp_path):
    """tests/data/contexts_v1_dbgpt_coding12.jsonl.gz: written by ctxbench at ed5d45a (version 1),
    ``coding_transcript(rounds=12, lines_per_output=60, tid="coding")`` under ``strategy=dbgpt
    model=gpt-4-32k strategy.params.max_context_tokens=6000`` (three Layer 1 cuts, the system prompt
    rebuilt every call). Read as it is, and its prompts are those that run sent (their sha256 then)."""
    data = (ROOT / "tests/data/contexts_v1_dbgpt_coding12.jsonl.gz").read_bytes()
    (tmp_path / FILE).write_bytes(data)
    read = read_contexts(tmp_path)
    raw = [json.loads(line) for line in gzip.decompress(data).splitlines()]
    assert read["header"]["format"] == "ctxbench.contexts/1" and [read["header"], *read["rows"]] == raw
    sent = [[[e["role"], e["text"]] for e in prompt_of(read, call)] for call in range(13)]
    digest = hashlib.sha256(json.dumps(sent, ensure_ascii=False).encode()).hexdigest()
    assert digest == "ac76f73e6aca86bab3723fa939d2461d143f0c39db9c44d42eaff50d208e63e7"
    with pytest.raises(KeyError):
        prompt_of(read, 13)


@settings(max_examples=400, deadline=None)
@given(a=st.text("ab✅", max_size=300), b=st.text("ab✅", max_size=300), hint=st.integers(0, 320))
def test_shared_start_and_end_are_the_simple_forms(a, b, hint):
    start = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    assert shared_start(a, b) == shared_start(a, b, hint) == start  # a hint, right or wrong, changes nothing
    limit = min(len(a), len(b)) - start
    end = next((i for i in range(limit) if a[len(a) - 1 - i] != b[len(b) - 1 - i]), limit)
    assert shared_end(a, b, limit) == shared_end(a, b, limit, hint) == end
    long_a, long_b = a * 40, a * 40 + b  # past the first doubling steps
    assert shared_start(long_a, long_b) == next(
        (i for i, (x, y) in enumerate(zip(long_a, long_b)) if x != y), min(len(long_a), len(long_b))
    )
