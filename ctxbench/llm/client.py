"""One LLM role (summariser, answerer, judge) on ``litellm.completion``, behind a cassette.

litellm is imported lazily (first live call, or first price looked up in its map): its import
costs seconds, and offline runs never need it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.llm.base import SummariserError
from ctxbench.llm.cassette import Cassette, CassetteMiss, prompt_preview, request_key
from ctxbench.llm.cost import call_cost
from ctxbench.llm.errors import classify_exception
from ctxbench.llm.faults import FaultConfig, raise_or_text

ROLES: tuple[str, ...] = ("summariser", "answerer", "judge")


@dataclass(frozen=True)
class RoleConfig:
    model: str  # a litellm model string: "gpt-4.1-mini", "anthropic/claude-haiku-4-5", "openai/<name>"
    role: str = "summariser"
    api_base: str | None = None  # e.g. "http://127.0.0.1:8000/v1" for an OpenAI-compatible local server
    api_key_env: str | None = None  # the NAME of the environment variable holding the key, never the key
    temperature: float = 0.0
    max_tokens: int | None = None  # default completion cap (a summary request's own max_tokens wins)
    timeout: float = 120.0  # seconds per attempt
    num_retries: int = 2  # litellm's retries with backoff; 0 in tests
    input_price_per_mtok: float | None = None  # USD per 1M tokens; unset -> litellm's local cost map
    output_price_per_mtok: float | None = None
    cached_input_price_per_mtok: float | None = None  # prompt tokens the provider served from its cache
    params: dict[str, Any] = field(default_factory=dict)  # other answer-changing params (top_p, seed, stop, ...)

    @classmethod
    def from_dict(cls, data: dict[str, Any], role: str) -> RoleConfig:
        where = f"llm.{role}"
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
        if not data.get("model"):
            raise ConfigError(f"{where}: 'model' is required (a litellm model string such as openai/<name>)")
        try:
            return cls(**{**data, "role": role})
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None


class LLMClient:
    """``complete(messages)`` -> text. Every call (live, replayed or failed) appends one usage record."""

    def __init__(self, config: RoleConfig, cassette: Cassette | None = None, faults: FaultConfig | None = None) -> None:
        self.config = config
        self.cassette = cassette if cassette is not None and cassette.mode != "live" else None
        self.faults = faults if faults is not None and faults.active else None
        self.usage: list[dict[str, Any]] = []
        self.calls = 0

    @property
    def role(self) -> str:
        return self.config.role

    def request(self, messages: list[dict[str, Any]], max_tokens: int | None = None) -> dict[str, Any]:
        """The exact request: everything in it changes the answer, so all of it is in the cassette key."""
        cfg = self.config
        return {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": max_tokens if max_tokens is not None else cfg.max_tokens,
            **cfg.params,
        }

    def complete(self, messages: list[dict[str, Any]], max_tokens: int | None = None, purpose: str = "") -> str:
        """The reply text; raises SummariserError (kind from FAULT_KINDS) or CassetteMiss in replay mode."""
        number = self.calls
        self.calls += 1
        if self.faults is not None and (kind := self.faults.draw(number)):
            self._record(purpose, None, 0, 0, cached=False, fault=kind, injected=True)
            text = raise_or_text(kind)
            if not text:
                raise SummariserError("empty", f"{self.role}: injected fault: empty completion")
            return text
        request = self.request(messages, max_tokens)
        key = request_key(request)
        entry = self.cassette.lookup(key) if self.cassette else None
        cached = entry is not None
        if entry is None:
            if self.cassette and self.cassette.mode == "replay":
                raise CassetteMiss(
                    f"cassette {self.cassette.path}: no recorded answer for role={self.role} "
                    f"model={self.config.model} prompt={prompt_preview(request)!r}... key={key[:16]}"
                )
            entry = self._live(request, key)
            if self.cassette:
                self.cassette.append(entry)
        usage = entry.get("usage") or {}
        error = entry.get("error")
        self._record(
            purpose,
            key,
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            cached=cached,
            fault=error["kind"] if error else None,
            cached_prompt_tokens=int(usage.get("cached_prompt_tokens") or 0),
        )
        if error:
            raise SummariserError(error["kind"], f"{self.role} {self.config.model}: {error['message']}")
        text = entry.get("response") or ""
        if not text.strip():
            self.usage[-1]["fault"] = "empty"
            raise SummariserError("empty", f"{self.role} {self.config.model}: empty completion")
        return text

    def _live(self, request: dict[str, Any], key: str) -> dict[str, Any]:
        """Call the provider; failures become a recorded entry too, so a replay fails the same way."""
        import litellm

        litellm.suppress_debug_info = True  # its "Give Feedback" banner would clutter every failure log
        cfg = self.config
        kwargs = dict(request)
        kwargs.update(timeout=cfg.timeout, num_retries=cfg.num_retries, max_retries=cfg.num_retries)
        if cfg.api_base:
            kwargs["api_base"] = cfg.api_base
        api_key = self._api_key()
        if api_key:
            kwargs["api_key"] = api_key
        entry: dict[str, Any] = {"key": key, "role": cfg.role, "request": request}
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:  # litellm raises provider-specific types; classify_exception maps them
            message = " ".join(str(exc).split())[:500]
            return {**entry, "error": {"kind": classify_exception(exc), "message": message}}
        usage = getattr(response, "usage", None)
        counts = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        }
        details = getattr(usage, "prompt_tokens_details", None)
        cached_prompt = int(getattr(details, "cached_tokens", 0) or 0)
        if cached_prompt:  # the provider's prompt cache served these (OpenAI; litellm maps Anthropic's reads)
            counts["cached_prompt_tokens"] = cached_prompt
        return {
            **entry,
            "response": response.choices[0].message.content or "",
            "model": getattr(response, "model", None) or cfg.model,
            "usage": counts,
        }

    def _api_key(self) -> str | None:
        cfg = self.config
        if cfg.api_key_env:
            value = os.environ.get(cfg.api_key_env)
            if not value:
                raise ConfigError(f"llm.{cfg.role}.api_key_env: environment variable {cfg.api_key_env} is not set")
            return value
        # Local OpenAI-compatible servers need no key, but the OpenAI SDK refuses to send without one.
        return "no-key-needed" if cfg.api_base else None

    def _record(
        self,
        purpose: str,
        key: str | None,
        prompt_tokens: int,
        completion_tokens: int,
        cached: bool,
        fault: str | None,
        injected: bool = False,
        cached_prompt_tokens: int = 0,
    ) -> None:
        cfg = self.config
        cost = 0.0
        if prompt_tokens or completion_tokens:
            prices = (cfg.input_price_per_mtok, cfg.output_price_per_mtok)
            cost = call_cost(
                cfg.model,
                prompt_tokens,
                completion_tokens,
                *prices,
                cached_prompt_tokens,
                cfg.cached_input_price_per_mtok,
            )
        self.usage.append(
            {
                "role": cfg.role,
                "model": cfg.model,
                "purpose": purpose,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cached_prompt_tokens": cached_prompt_tokens,
                "cost_usd": cost,
                "cached": cached,
                "fault": fault,
                "injected": injected,
                "key": key,
            }
        )
