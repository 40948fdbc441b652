"""``ctxbench import`` and ``ctxbench calibrate``: the importers and the tokenizer calibration, with
what only the calibration layer can add (it replays and counts, above tokens/ and transcripts/):
the median ratio against provider usage on each imported file, and ``--against provider``."""

from __future__ import annotations

from ctxbench.calibration.provider_fidelity import import_ratio_note, write_report
from ctxbench.tokens import calibrate
from ctxbench.transcripts import importer


def import_cli(argv: list[str]) -> int:
    return importer.cli(argv, ratio_note=import_ratio_note)


def calibrate_cli(argv: list[str]) -> int:
    return calibrate.cli(argv, against_provider=write_report)
