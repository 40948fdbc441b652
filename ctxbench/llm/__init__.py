"""LLM access for ctxbench: summarisers for compaction layers and clients for the answerer and
judge roles, on litellm, with record/replay cassettes, fault injection and cost accounting."""

import os

# litellm downloads its price list at import unless told to use the one it ships; set it before any import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from ctxbench.llm.base import FAULT_KINDS, LLMError, Summariser, SummariserError, SummaryRequest  # noqa: E402
from ctxbench.llm.cassette import MODES, Cassette, CassetteMiss, request_key  # noqa: E402
from ctxbench.llm.client import LLMClient, RoleConfig  # noqa: E402
from ctxbench.llm.cost import call_cost, usage_totals  # noqa: E402
from ctxbench.llm.errors import classify_exception, is_overflow_text  # noqa: E402
from ctxbench.llm.extractive import ExtractiveSummariser  # noqa: E402
from ctxbench.llm.factory import build_cassette, build_client, build_summariser  # noqa: E402
from ctxbench.llm.faults import FaultConfig, FaultInjectingSummariser  # noqa: E402
from ctxbench.llm.summariser import LLMSummariser, missing_sections  # noqa: E402

__all__ = [
    "FAULT_KINDS",
    "MODES",
    "Cassette",
    "CassetteMiss",
    "ExtractiveSummariser",
    "FaultConfig",
    "FaultInjectingSummariser",
    "LLMClient",
    "LLMError",
    "LLMSummariser",
    "RoleConfig",
    "Summariser",
    "SummariserError",
    "SummaryRequest",
    "build_cassette",
    "build_client",
    "build_summariser",
    "call_cost",
    "classify_exception",
    "is_overflow_text",
    "missing_sections",
    "request_key",
    "usage_totals",
]
