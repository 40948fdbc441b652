"""``none``: send the full history every call (the baseline every saving is measured against)."""

from __future__ import annotations

from ctxbench.core import Strategy


class FullHistory(Strategy):
    name = "none"
    max_retries = 0
