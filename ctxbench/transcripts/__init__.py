"""Transcripts: the canonical model, rounds, the on-disk form, and importers."""

from ctxbench.transcripts.canonical import load_transcripts, read_transcripts, write_transcripts
from ctxbench.transcripts.model import PROBE_KINDS, ROLES, Message, Probe, ToolCall, Transcript
from ctxbench.transcripts.rounds import dbgpt_rounds, group_rounds, is_observation

__all__ = [
    "PROBE_KINDS",
    "ROLES",
    "Message",
    "Probe",
    "ToolCall",
    "Transcript",
    "dbgpt_rounds",
    "group_rounds",
    "is_observation",
    "load_transcripts",
    "read_transcripts",
    "write_transcripts",
]
