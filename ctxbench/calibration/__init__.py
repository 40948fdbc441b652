"""Calibration against what providers reported: the replay's prompts (``provider_fidelity``), the
estimators, and the prompt cache (``cache_fidelity``). Above ``tokens``, ``replay`` and
``transcripts``: measuring a transcript against its provider replays it and counts it; the
``ctxbench import`` and ``ctxbench calibrate`` commands reach it through ``commands``.
"""
