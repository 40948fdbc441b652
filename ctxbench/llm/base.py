"""The summariser interface the compaction layers write against, and its one error type.
They live in ctxbench.core; this module keeps the old import path."""

from ctxbench.core import FAULT_KINDS, Summariser, SummariserError, SummaryRequest

# The same error for the answerer and judge roles, under a role-neutral name.
LLMError = SummariserError

__all__ = ["FAULT_KINDS", "LLMError", "Summariser", "SummariserError", "SummaryRequest"]
