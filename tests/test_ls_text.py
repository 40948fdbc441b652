"""`ctxbench ls` says what each entry is in whole sentences a user can follow: no description cut
mid-sentence, no citation of a file the installed package does not have, lines that fit 120
columns, and the kinds named as words (issue 27: "strategys")."""

import re
import subprocess

from ctxbench.ls import described, listing
from ctxbench.registry import KINDS
from tests.conftest import CTXBENCH


def test_descriptions_are_whole_sentences_without_file_citations():
    found = listing(list(KINDS))
    abouts = [row.get("about") or "" for rows in found.values() for row in rows]
    assert len(abouts) > 40
    for about in abouts:
        assert not re.search(r"\.md\b|seeds/|\.txt\b", about), about
        assert "``" not in about, about
    configs = {row["name"]: row["about"] for row in found["strategy config"]}
    assert configs["dbgpt"] == "DB-GPT's 4-layer agent context management."
    # The first sentence whole, however long its lines were in the source:
    assert configs["observation_masking"].endswith("history that fits the window.")


def test_described_keeps_the_first_sentence_and_drops_citations():
    text = "DB-GPT's layers (shared/seeds/000.txt, reference.md 1a) cut old\\n observations. Then more."
    assert described(text.replace("\\n", "\n")) == "DB-GPT's layers cut old observations."
    kept = described("Keep ``n`` results (LastNObservations) of the tool.")
    assert kept == "Keep n results (LastNObservations) of the tool."


def test_the_listing_fits_120_columns_and_names_kinds_as_words():
    out = subprocess.run([*CTXBENCH, "ls"], capture_output=True, text=True)
    assert out.returncode == 0
    assert max(len(line) for line in out.stdout.splitlines()) <= 120
    usage = subprocess.run([*CTXBENCH, "ls", "--help"], capture_output=True, text=True).stdout
    assert "strategys" not in usage and "strategies" in usage
    assert subprocess.run([*CTXBENCH, "ls", "strategies"], capture_output=True, text=True).returncode == 0
