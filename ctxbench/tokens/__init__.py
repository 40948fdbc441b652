"""Tokens: real tokenizers (offline), cached counting, and the estimators strategies use."""

from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.estimators import EmaEstimator, Estimator, ExactEstimator, FixedRatioEstimator
from ctxbench.tokens.tokenizers import (
    Tokenizer,
    available_tokenizers,
    get_tokenizer,
    register_tokenizer,
    resolve_tokenizer_name,
)

__all__ = [
    "EmaEstimator",
    "Estimator",
    "ExactEstimator",
    "FixedRatioEstimator",
    "TokenCounter",
    "Tokenizer",
    "available_tokenizers",
    "get_tokenizer",
    "register_tokenizer",
    "resolve_tokenizer_name",
]
