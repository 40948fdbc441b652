"""What retention rows say: the question, gold, type and source span; a rejected call's checkpoint
is lost (the agent never had that context); trivial probes (system prompt, first user message, or
always within the last two rounds) are reported apart from the informative ones."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.judges.base import Verdict
from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes import CheckpointPolicy, ProbeObserver, retention_metrics
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ModelSpec
from ctxbench.strategies.none import FullHistory
from ctxbench.strategies.sliding_window import SlidingWindow
from ctxbench.tokens import ExactEstimator, TokenCounter, get_tokenizer
from ctxbench.transcripts.model import Message, Probe, ToolCall, Transcript
from tests.helpers import coding_transcript

SMALL = ModelSpec(name="small", context_window=8000, reserved_output_tokens=1000, tokenizer="cl100k_base")


def _run(transcript, strategy, policy=None):
    observer = ProbeObserver(transcript.probes, DeterministicJudge(), policy or CheckpointPolicy(every_n_calls=5))
    result = replay(
        transcript,
        strategy,
        ExactEstimator("cl100k_base"),
        SMALL,
        TokenCounter(get_tokenizer("cl100k_base")),
        observers=[observer],
    )
    return result, observer


def _with_probes(t: Transcript) -> Transcript:
    """The port stated in the first user message (trivial) and a fact stated in round 3's output."""
    messages = list(t.messages)
    messages[7] = messages[7].replace(content="build id is BX7731Q\n" + messages[7].content)
    probes = [
        t.probes[0],
        Probe("build", "Which build id?", "BX7731Q", "recall", 7, None, label="identifier", span=(12, 19)),
    ]
    return Transcript(t.id, messages, probes=probes, source=t.source)


def test_rejected_calls_lose_every_probe_at_their_checkpoints():
    t = _with_probes(coding_transcript(rounds=40))
    result, observer = _run(t, FullHistory())
    rejected = {c["call"] for c in result.calls if not c["accepted"]}
    assert rejected and max(rejected) == len(t.call_indices) - 1  # the full history overflows at the end
    for row in observer.rows:
        if row["call"] in rejected:
            assert row["status"] == "lost" and "rejected" in row["evidence"], row
    end = [r for r in observer.rows if r["checkpoint"] == "end"]
    assert end and all(r["status"] == "lost" for r in end)
    metrics = retention_metrics(observer.rows, {})
    assert metrics["retention_all"] == 0.0


def test_rows_carry_question_gold_type_and_span():
    t = _with_probes(coding_transcript(rounds=12))
    _, observer = _run(t, SlidingWindow())
    row = next(r for r in observer.rows if r["probe"] == "build")
    assert row["question"] == "Which build id?" and row["gold"] == "BX7731Q"
    assert row["label"] == "identifier" and row["span"] == [12, 19] and row["stated_at"] == 7
    assert row["used_again"] is False and row["needed_at"] is None


def test_trivial_probes_are_reported_apart():
    t = _with_probes(coding_transcript(rounds=12))
    _, observer = _run(t, SlidingWindow())
    metrics = retention_metrics(observer.rows, {})
    # The port sits in the first user message: every strategy keeps it; the build id does not.
    assert metrics["probes_trivial"] == 1 and metrics["probes_informative"] == 1
    assert metrics["trivial_probes"] == ["port"]
    assert metrics["retention"] == metrics["retention_informative"]
    assert metrics["retention_trivial"] == 1.0


def test_a_fact_always_in_the_last_two_rounds_is_trivial():
    messages = [Message("system", "s"), Message("user", "Do the thing with care please")]
    for i in range(6):
        messages += [
            Message("assistant", f"step {i}", tool_calls=(ToolCall(f"c{i}", "bash", '{"cmd": "ls"}'),)),
            Message("tool", f"out {i}" + (" token QQ9911X" if i == 5 else ""), tool_call_id=f"c{i}"),
        ]
    messages.append(Message("assistant", "done"))
    late = Probe("late", "Which token?", "QQ9911X", "recall", len(messages) - 2)
    t = Transcript("t", messages, probes=[late])
    _, observer = _run(t, FullHistory(), CheckpointPolicy(every_n_calls=1))
    metrics = retention_metrics(observer.rows, {})
    assert metrics["trivial_probes"] == ["late"] and metrics["retention"] is None


def _row(probe: str, checkpoint: str, status: str) -> dict:
    return {"probe": probe, "checkpoint": checkpoint, "status": status, "kind": "recall", "label": "error",
            "age_calls": 5, "compactions": 1, "call": 3, "layers": [], "trivial": False}  # fmt: skip


def test_headline_retention_scores_a_fact_where_it_was_needed_and_end_retention_beside_it():
    """A fact kept when the agent next needed it counts as kept even when the last call was
    rejected; a fact never used again is scored at the end; retention_end keeps the old figure."""
    rows = [
        _row("used", "needed", "kept"),
        _row("used", "end", "lost"),  # the last call was rejected
        _row("unused", "end", "lost"),
        _row("kept", "end", "kept"),
    ]
    metrics = retention_metrics(rows, {})
    assert metrics["retention"] == round(2 / 3, 4)
    assert metrics["retention_end"] == round(1 / 3, 4)


def _json_lines(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


@pytest.mark.parametrize("strategy", ["dbgpt", "observation_masking"])
def test_rows_text_is_the_rows_as_json_lines_on_bundled_data(strategy, tmp_path):
    """retention.jsonl's lines are put together from pieces encoded once (a probe's, a verdict's):
    the same text as each row's own JSON, on replays with kept, lost and recoverable verdicts."""
    from hydra import compose, initialize_config_dir

    from ctxbench.build import build_estimator, build_model, build_probe_observer, build_strategy
    from ctxbench.data import BUNDLED
    from ctxbench.run_app import CONFIG_DIR
    from ctxbench.transcripts.canonical import read_transcripts

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"strategy={strategy}", "llm=offline"])
    statuses = set()
    picked = ("coding_090k.jsonl", "sql_060k.jsonl", "research_130k.jsonl")  # the smallest of each kind
    for transcript in [t for name in picked for t in read_transcripts(BUNDLED / name)]:
        built, model = build_strategy(cfg), build_model(cfg)
        work = tmp_path / transcript.id
        work.mkdir()
        observer = build_probe_observer(cfg, transcript, work, built.snapshots(work))
        counter = TokenCounter(get_tokenizer(model.tokenizer)).for_transcript(transcript)
        replay(transcript, built, build_estimator(cfg), model, counter, workdir=work, observers=[observer])
        assert observer.rows and observer.rows_text() == _json_lines(observer.rows)
        _assert_table_metrics(observer)
        statuses |= {r["status"] for r in observer.rows}
    assert statuses == ({"kept", "recoverable"} if strategy == "dbgpt" else {"kept", "lost"})


class _GivenVerdicts:
    """Stands in for an LLM judge's verdicts (scores, answers, other judges' statuses, any text),
    which an offline replay cannot produce: hands out the given verdicts in turn."""

    name = "given"

    def __init__(self, verdicts: list[Verdict]) -> None:
        self.verdicts, self.n = verdicts, 0

    def judge(self, probe: Probe, working: object) -> Verdict:
        self.n += 1
        return self.verdicts[self.n % len(self.verdicts)]


_text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(['a"b\\c', "é\n\t\x00", "\u2028"])
_verdicts = st.builds(
    Verdict,
    st.sampled_from(["kept", "lost", "recoverable", "unjudged"]),
    _text,
    st.none() | st.floats(allow_nan=False) | st.integers(0, 5),
    st.none() | _text,
    st.none() | _text,
    st.none() | st.dictionaries(_text, _text, max_size=2),
)


@settings(max_examples=40, deadline=None)
@given(
    verdicts=st.lists(_verdicts, min_size=1, max_size=4),
    fields=st.lists(st.tuples(_text, _text, _text, st.none() | _text), min_size=1, max_size=3),
    window=st.sampled_from([2500, 100_000]),
)
def test_rows_text_is_the_rows_as_json_lines_for_any_verdict(verdicts, fields, window):
    """Any verdict, probe text and checkpoint (rejected calls too, with a small window): the lines
    are each row's JSON, and the rows' fields the probe's (its age and triviality found once)."""
    t = coding_transcript(rounds=6, lines_per_output=20)
    probes = [
        Probe(f"p{i}{pid}", question, answer, "recall", 2 + 3 * i, 9 if i % 2 else None, label=label, span=(i, i + 1))
        for i, (pid, question, answer, label) in enumerate(fields)
    ]
    observer = ProbeObserver(probes, _GivenVerdicts(verdicts), CheckpointPolicy(every_n_calls=1))
    model = ModelSpec(name="m", context_window=window, reserved_output_tokens=1000, tokenizer="cl100k_base")
    replay(
        Transcript(t.id, t.messages, probes=probes),
        FullHistory(),
        ExactEstimator("cl100k_base"),
        model,
        TokenCounter(get_tokenizer("cl100k_base")),
        observers=[observer],
    )
    assert observer.rows and observer.rows_text() == _json_lines(observer.rows)
    _assert_table_metrics(observer)
    # whether any row holds other judges' verdicts (the cell's judge_agreement), known as judged
    assert observer.has_others() == any(r["others"] for r in observer.rows)


def _assert_table_metrics(observer: ProbeObserver) -> None:
    """The metrics from the observer's columns (what a cell computes, no dict per row) are those of
    its rows as dicts, value for value."""
    answers = {p.id: p.answer for p in observer.probes[::2]}
    from_table = retention_metrics(observer.table(), answers)
    assert json.dumps(from_table) == json.dumps(retention_metrics(observer.rows, answers))
    assert json.dumps(from_table) == json.dumps(retention_metrics([dict(r) for r in observer.rows], answers))


def test_rows_added_from_outside_are_rows_of_the_text_and_the_metrics():
    t = _with_probes(coding_transcript(rounds=12))
    _, observer = _run(t, FullHistory())
    before = observer.rows_text()
    extra = {**observer.rows[-1], "status": "recoverable", "others": {"llm": "kept"}}
    observer.rows.append(extra)
    assert observer.rows_text() == before + json.dumps(extra, ensure_ascii=False) + "\n"
    assert observer.has_others()
    assert retention_metrics(observer.table(), {})["recoverable"] == retention_metrics(observer.rows, {})["recoverable"]
    assert retention_metrics(observer.table(), {}) == retention_metrics(list(observer.rows), {})


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 300), st.sampled_from(["kept", "lost", "recoverable"]), st.sampled_from("abc")),
        max_size=40,
    )
)
def test_grouped_rates_are_each_groups_share_kept(cells):
    """Retention by bucket or by value, counted in one pass: each group's share of kept rows, in
    the buckets' order (values sorted), as grouping the rows and rating each group gives."""
    from ctxbench.probes.metrics import AGE_BUCKETS, _bucket, _grouped

    rows = [{"age_calls": age, "status": status, "kind": kind} for age, status, kind in cells]
    for key, buckets in (("age_calls", AGE_BUCKETS), ("kind", None)):
        groups: dict = {}
        for row in rows:
            groups.setdefault(_bucket(row[key], buckets) if buckets else row[key], []).append(row)
        order = [_bucket(low, buckets) for low, _ in buckets] if buckets else sorted(groups)
        expected = {
            k: round(sum(r["status"] == "kept" for r in groups[k]) / len(groups[k]), 4) for k in order if k in groups
        }
        assert json.dumps(_grouped(rows, key, buckets)) == json.dumps(expected)
