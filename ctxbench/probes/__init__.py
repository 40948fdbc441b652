"""Probes: planted and extracted facts with gold answers, judged at replay checkpoints."""

from ctxbench.probes.checkpoints import CheckpointPolicy, ProbeObserver
from ctxbench.probes.metrics import retention_metrics

__all__ = ["CheckpointPolicy", "ProbeObserver", "retention_metrics"]
