"""Before a run that needs an LLM server on this machine: is anything listening there? A judge
whose every call fails to connect retries for a minute per transcript and leaves every probe
unjudged; one look at the port says it in a line, before any work."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from ctxbench.errors import ConfigError

LOOPBACK = ("127.0.0.1", "localhost", "::1")
NEEDS_SERVER = ("live", "record")  # replay never calls; replay-or-live calls only on a cassette miss


def roles_in_use(cfg: Mapping[str, Any]) -> list[str]:
    """The LLM roles a run calls for sure: the answerer and judge of an LLM judge."""
    judge = cfg.get("judge") or {}
    return ["answerer", "judge"] if judge.get("kind") == "llm" else []


def check_local_servers(cfg: Mapping[str, Any], timeout: float = 2.0) -> None:
    """A ``ConfigError`` naming the role and address when a role in use points at a server on this
    machine (``api_base`` on loopback) that refuses the connection."""
    llm = cfg.get("llm") or {}
    for role in roles_in_use(cfg):
        spec = llm.get(role) or {}
        mode = ((spec.get("cassette") or {}).get("mode")) or "live"
        base = spec.get("api_base")
        if not base or mode not in NEEDS_SERVER:
            continue
        url = urlparse(str(base))
        if url.hostname not in LOOPBACK:
            continue
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            socket.create_connection((url.hostname, port), timeout=timeout).close()
        except OSError as exc:
            raise ConfigError(
                f"llm.{role}.api_base={base}: no server answers there ({exc.strerror or exc}); start one "
                "(docs/llm.md), or replay recorded answers with llm=replay"
            ) from None
