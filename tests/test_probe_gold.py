"""Extraction against the hand-labelled gold set (tests/data/probe_gold/, labelled by reading the
dev transcripts): at least 90% precision and 80% recall, and every gold label names a real
transcript message that states or does what it says."""

from pathlib import Path

from ctxbench.probes.actions import probe_text
from ctxbench.probes.gold import load_gold, matches, score_folder
from ctxbench.transcripts.importer import import_file

GOLD = Path(__file__).parent / "data" / "probe_gold"


def test_gold_set_is_large_and_covers_every_type():
    gold = load_gold(GOLD)
    labels = [p for e in gold for p in e["probes"]]
    assert len(labels) >= 150
    assert {p["type"] for p in labels} >= {
        "task",
        "file_edited",
        "file_read",
        "command",
        "constraint",
        "identifier",
        "final",
    }
    assert all("test_fixed" in e["complete"] for e in gold)  # none in the dev set: any extracted one is wrong
    assert len({e["gold_file"] for e in gold}) == 4  # SWE-agent, OpenHands, Claude Code, tau-bench


def test_gold_labels_point_at_their_messages(shared_transcripts):
    gold = load_gold(GOLD)
    transcripts = {t.id: t for rel in {e["file"] for e in gold} for t in import_file(shared_transcripts / rel)}
    for entry in gold:
        messages = transcripts[entry["transcript"]].messages
        for label in entry["probes"]:
            at = label["message"]
            text = "\n".join(probe_text(m) for m in messages[at : at + 2])
            words = label["gold"].split()
            # the labelled message (or, for an edit of the open file, its observation) holds the gold;
            # paths may be spelled relative there
            assert matches("task", label["gold"], text) or words[-1].rsplit("/", 1)[-1] in text, label


def test_extraction_reaches_precision_and_recall(shared_transcripts):
    score = score_folder(GOLD, shared_transcripts)
    print(score.table())
    assert score.precision() >= 0.90, (score.table(), score.extras)
    assert score.recall() >= 0.80, (score.table(), score.misses)
    for label in ("task", "file_edited", "command"):
        assert score.precision(label) >= 0.9 and score.recall(label) >= 0.8, score.table()


def test_held_out_transcripts_labelled_after_the_extractor_was_written(shared_transcripts):
    """A smaller check less biased by development: the two tau-bench runs labelled last."""
    score = score_folder(GOLD, shared_transcripts, held_out_only=True)
    print(score.table())
    assert sum(score.gold.values()) >= 20
    assert score.precision() >= 0.90 and score.recall() >= 0.80, (score.table(), score.misses)
