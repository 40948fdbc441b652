"""Seeded generator of long synthetic agent transcripts with planted-fact probes.

``make_transcript(kind, target_tokens, seed)`` makes one on demand; ``write_datasets`` makes
the bundled files in ``ctxbench/data/bundled/`` (``ctxbench generate`` regenerates or checks them).
"""

from ctxbench.datagen.generate import (
    AGENT_KINDS,
    DEFAULT_SEED,
    DEFAULT_SPECS,
    GENERATOR_VERSION,
    Spec,
    default_transcripts,
    make_transcript,
    write_datasets,
)

__all__ = [
    "AGENT_KINDS",
    "DEFAULT_SEED",
    "DEFAULT_SPECS",
    "GENERATOR_VERSION",
    "Spec",
    "default_transcripts",
    "make_transcript",
    "write_datasets",
]
