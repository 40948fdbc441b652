"""Build summarisers and role clients from the plain ``llm`` config dict (ctxbench/configs/llm/*.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.llm.base import Summariser
from ctxbench.llm.cassette import Cassette
from ctxbench.llm.client import LLMClient, RoleConfig
from ctxbench.llm.extractive import ExtractiveSummariser
from ctxbench.llm.faults import FaultConfig, FaultInjectingSummariser
from ctxbench.llm.summariser import LLMSummariser

CASSETTE_KEYS = ("mode", "dir")


def build_cassette(spec: Any, workdir: Path | None, role: str) -> Cassette:
    """``{mode, dir}`` (or just the mode as a string) -> the role's cassette file ``<dir>/<role>.jsonl``.
    Default: record into ``<workdir>/cassettes``; a relative dir is relative to the current directory."""
    if spec is None:
        spec = {}
    if isinstance(spec, str):
        spec = {"mode": spec}
    if not isinstance(spec, dict):
        raise ConfigError(f"llm.{role}.cassette: expected a mapping with {CASSETTE_KEYS}, got {spec!r}")
    unknown = sorted(set(spec) - set(CASSETTE_KEYS))
    if unknown:
        raise ConfigError(f"llm.{role}.cassette: unknown key {unknown[0]!r} (known: {', '.join(CASSETTE_KEYS)})")
    folder = Path(spec["dir"]) if spec.get("dir") else Path(workdir or ".") / "cassettes"
    return Cassette(path=folder / f"{role}.jsonl", mode=str(spec.get("mode") or "record"))


def build_client(
    role_cfg: dict[str, Any],
    workdir: Path | None,
    role: str = "judge",
    cassette_name: str | None = None,
    stream: str = "",
) -> LLMClient:
    """An LLMClient for one role (summariser, answerer, judge) from its config mapping; its cassette
    is ``<dir>/<cassette_name or role>.jsonl``; ``stream`` (the transcript) keys its injected faults."""
    if not isinstance(role_cfg, dict):
        raise ConfigError(f"llm.{role}: expected a mapping with at least 'model', got {role_cfg!r}")
    data = dict(role_cfg)
    cassette = build_cassette(data.pop("cassette", None), workdir, cassette_name or role)
    faults = FaultConfig.from_dict(data.pop("faults", None), f"llm.{role}.faults").in_stream(stream)
    return LLMClient(RoleConfig.from_dict(data, role), cassette=cassette, faults=faults)


def build_summariser(llm_cfg: dict[str, Any] | None, workdir: Path | None, stream: str = "") -> Summariser:
    """``{"summariser": "extractive"}`` -> ExtractiveSummariser; ``{"summariser": {model, api_base,
    cassette, ...}, "faults": {...}}`` -> LLMSummariser on a recorded client, wrapped by the fault
    injector when faults are configured (top-level ``faults`` or ``summariser.faults``), drawn for
    ``stream`` (the transcript's id)."""
    cfg = dict(llm_cfg or {})
    spec = cfg.get("summariser", "extractive")
    fault_spec = cfg.get("faults")
    inner: Any
    if spec is None or spec == "extractive":
        inner = ExtractiveSummariser()
    elif isinstance(spec, dict):
        spec = dict(spec)
        fault_spec = spec.pop("faults", None) or fault_spec
        if spec.get("model") == "extractive":
            inner = ExtractiveSummariser()
        else:
            inner = LLMSummariser(build_client(spec, workdir, role="summariser"))
    else:
        raise ConfigError(f"llm.summariser: {spec!r} is not 'extractive' or a mapping with 'model'")
    faults = FaultConfig.from_dict(fault_spec, "llm.faults").in_stream(stream)
    return FaultInjectingSummariser(inner, faults) if faults.active else inner
