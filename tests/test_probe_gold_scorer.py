"""The gold scorer's notion of a probe holding a needed fact (ctxbench.probes.gold.covers): the
rubric counts a fact covered when a probe holds it in any wording; keys are verbatim strings, so
the scorer accepts a key inside the gold, a specific gold inside the key, the key inside the
question (its context), or the key stated across the two: its start in the question, its end in
the gold ("Which reservation did `cancel_reservation` act on?" / "NQNU5R" holds
"cancel_reservation NQNU5R")."""

from ctxbench.probes.gold import covers
from ctxbench.transcripts.model import Probe


def probe(question: str, answer: str) -> Probe:
    return Probe(id="p", question=question, answer=answer, kind="artifact", message_index=3)


def test_key_inside_the_gold_or_the_question():
    assert covers(probe("What did the tests report?", "12 passed, 395 deselected in 3.1s"), "12 passed, 395 deselected")
    assert covers(probe("What did `python test_issue.py` print?", "L031 fired"), "python test_issue.py")


def test_key_stated_across_question_and_gold():
    p = probe("Which reservation id did `cancel_reservation` act on?", "NQNU5R")
    assert covers(p, "cancel_reservation NQNU5R")


def test_split_key_needs_both_halves_specific_and_in_order():
    # the gold's "1" and the question's "passed" are no statement of "1 passed"
    assert not covers(probe("How many tests passed after the change?", "1"), "1 passed")
    # the halves the wrong way round (the gold too short to be a specific part of the key)
    assert not covers(probe("Which reservation was cancelled?", "NQNU5R"), "NQNU5R cancelled")
    # only part of the key anywhere
    assert not covers(
        probe("Which reservation id did `cancel_reservation` act on?", "ZFA04Y"), "cancel_reservation NQNU5R"
    )
