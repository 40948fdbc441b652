"""The synthetic transcript generator and the bundled datasets/ it made."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ctxbench.data import BUNDLED
from ctxbench.datagen import DEFAULT_SPECS, GENERATOR_VERSION, make_transcript
from ctxbench.datagen import generate as gen
from ctxbench.datagen.builder import message_text
from ctxbench.datagen.cli import cli
from ctxbench.errors import ConfigError
from ctxbench.tokens import TokenCounter, get_tokenizer
from ctxbench.transcripts import read_transcripts, write_transcripts
from ctxbench.transcripts.model import Transcript

DATASETS = BUNDLED
COMMITTED = sorted(DATASETS.glob("*.jsonl"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_probes(t: Transcript) -> None:
    """Every planted value is stated once, then first reappears in the assistant message that needs it."""
    assert len(t.probes) >= 10
    assert len({p.kind for p in t.probes} - {"recall"}) >= 2
    assert len({p.id for p in t.probes}) == len(t.probes)
    for p in t.probes:
        assert p.source == "planted"
        assert 0 < p.message_index < p.needed_at < len(t.messages), p.id
        assert p.answer not in p.question, p.id
        assert p.answer in message_text(t.messages[p.message_index]), p.id
        user = t.messages[p.needed_at]
        assert user.role == "assistant" and p.answer in message_text(user), p.id
        earlier = [i for i in range(p.needed_at) if i != p.message_index and p.answer in message_text(t.messages[i])]
        assert earlier == [], f"{p.id}: gold {p.answer!r} also in messages {earlier}"


def check_shape(t: Transcript) -> None:
    msgs = t.messages
    assert msgs[0].role == "system" and msgs[1].role == "user"
    assert msgs[-1].role == "assistant"
    kind = t.metadata["agent_kind"]
    if kind == "sql":  # DB-GPT ReAct: text actions, observations as user messages
        for m in msgs[2:]:
            assert not m.tool_calls and m.role in ("user", "assistant")
            if m.role == "assistant":
                assert (
                    m.content.startswith("Thought: ") and "\nAction: " in m.content and "\nAction Input: {" in m.content
                )
        assert sum(m.content.startswith("Observation: ") for m in msgs) >= len(t.call_indices) - 1
    else:  # OpenAI tool calls: every call answered right after, every result answers a call
        open_ids: list[str] = []
        for m in msgs[2:]:
            if m.role == "tool":
                assert m.tool_call_id == open_ids.pop(0) and m.name
            else:
                assert not open_ids, "a tool call was left without its result"
                open_ids = [c.id for c in m.tool_calls]
        assert not open_ids


def test_same_seed_same_bytes_and_other_seed_differs(tmp_path: Path) -> None:
    a = write_transcripts(tmp_path / "a.jsonl", [make_transcript("coding", 8_000, 5)])
    b = write_transcripts(tmp_path / "b.jsonl", [make_transcript("coding", 8_000, 5)])
    c = write_transcripts(tmp_path / "c.jsonl", [make_transcript("coding", 8_000, 6)])
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


@pytest.mark.parametrize("kind", ["sql", "coding", "research"])
def test_small_transcripts_are_well_formed(kind: str) -> None:
    t = make_transcript(kind, 20_000, 11)
    counted = TokenCounter(get_tokenizer("o200k_base")).prompt(t.messages)  # fresh counter: real recount
    assert t.metadata["tokens"] == counted
    assert 0.9 * 20_000 <= counted <= 1.1 * 20_000
    assert t.metadata["agent_kind"] == kind and t.metadata["seed"] == 11
    assert t.metadata["generator_version"] == GENERATOR_VERSION
    check_shape(t)
    check_probes(t)


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown agent kind"):
        make_transcript("poetry", 10_000, 0)
    with pytest.raises(ConfigError, match="at least"):
        make_transcript("sql", 10, 0)


def test_committed_files_are_the_default_set() -> None:
    assert [p.name for p in COMMITTED] == sorted(f"{s.name}.jsonl" for s in DEFAULT_SPECS)
    assert len(COMMITTED) >= 8 and (DATASETS / "README.md").is_file()


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_transcript(path: Path) -> None:
    (t,) = list(read_transcripts(path))
    meta = t.metadata
    assert 50_000 <= meta["tokens_o200k_base"] <= 400_000
    assert 40 <= len(t.call_indices) == meta["assistant_calls"] <= 400
    assert any(m.pinned for m in t.messages)
    assert {"seed", "agent_kind", "generator_version", "tokens_o200k_base"} <= set(meta)
    check_shape(t)
    check_probes(t)


def test_committed_set_is_spread_and_has_big_outputs() -> None:
    sizes, kinds, big = [], set(), 0
    for path in COMMITTED:
        (t,) = list(read_transcripts(path))
        sizes.append(t.metadata["tokens"])
        kinds.add(t.metadata["agent_kind"])
        big += sum(len(m.content) > 60_000 for m in t.messages if m.role in ("tool", "user"))
    assert kinds == {"sql", "coding", "research"}
    assert min(sizes) < 100_000 and max(sizes) > 350_000
    assert big >= 3  # truncation layers need some 20k+ token outputs


@pytest.mark.parametrize("spec", sorted(DEFAULT_SPECS, key=lambda s: s.target_tokens)[:2], ids=lambda s: s.name)
def test_committed_file_matches_generator(spec: gen.Spec, tmp_path: Path) -> None:
    """The two smallest files regenerate byte for byte (the full set: the slow --check test)."""
    t = make_transcript(spec.kind, spec.target_tokens, gen.DEFAULT_SEED + spec.seed_offset, f"synth-{spec.name}")
    fresh = write_transcripts(tmp_path / f"{spec.name}.jsonl", [t])
    assert _sha(fresh) == _sha(DATASETS / f"{spec.name}.jsonl")


def test_load_dataset_reads_committed_file(tmp_path: Path) -> None:
    import datasets  # a dependency of ctxbench: always installed

    path = DATASETS / "sql_060k.jsonl"
    ds = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path))
    (t,) = list(read_transcripts(path))
    row = ds[0]
    assert row["id"] == t.id and len(row["messages"]) == len(t.messages) and len(row["probes"]) == len(t.probes)
    assert row["probes"][0]["answer"] == t.probes[0].answer


def test_cli_generate_and_check_on_small_specs(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(gen, "DEFAULT_SPECS", (gen.Spec("sql", 6_000, 1), gen.Spec("research", 7_000, 2)))
    out = tmp_path / "ds"
    assert cli(["--out", str(out), "--seed", "3"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "research_007k.jsonl", "sql_006k.jsonl"]
    assert cli(["--out", str(out), "--seed", "3", "--check"]) == 0
    assert cli(["--out", str(out), "--seed", "4", "--check"]) == 1  # another seed, other bytes
    target = out / "sql_006k.jsonl"
    target.write_bytes(target.read_bytes().replace(b'"seed": 4', b'"seed": 5'))
    capsys.readouterr()
    assert cli(["--out", str(out), "--seed", "3", "--check"]) == 1
    printed = capsys.readouterr().out
    assert "sql_006k.jsonl" in printed and "research_007k.jsonl" not in printed
    (out / "research_007k.jsonl").unlink()
    assert cli(["--out", str(out), "--seed", "3", "--check"]) == 1
    assert "research_007k.jsonl: missing" in capsys.readouterr().out


@pytest.mark.slow
def test_full_check_of_committed_datasets() -> None:
    assert cli(["--out", str(DATASETS), "--check"]) == 0
