"""One LLM role (summariser, answerer, judge) on ``litellm.completion``, behind a cassette.

litellm is imported lazily (first live call, or first price looked up in its map): its import
costs seconds, and offline runs never need it."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, NoReturn

from ctxbench.core import Param
from ctxbench.errors import ConfigError
from ctxbench.llm.base import SummariserError
from ctxbench.llm.cassette import Cassette, CassetteMiss, prompt_preview, request_key
from ctxbench.llm.cost import call_cost
from ctxbench.llm.errors import classify_exception
from ctxbench.llm.faults import FAULT_MESSAGES, MALFORMED_TEXT, FaultConfig

ROLES: tuple[str, ...] = ("summariser", "answerer", "judge")
# Failures worth asking again: they say nothing about the request itself.
RETRY_KINDS = frozenset({"error", "timeout", "rate_limit"})
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "none")
MAX_USAGE_TOKENS = 10_000_000  # no model's window comes near: a larger reported count is not a count


@dataclass(frozen=True)
class RoleConfig:
    model: Annotated[str, Param("a litellm model string (gpt-4.1-mini, anthropic/claude-haiku-4-5, openai/<name>)")]
    role: Annotated[str, Param("summariser, answerer, judge, ...")] = "summariser"
    api_base: Annotated[
        str | None, Param("the server's URL (an OpenAI-compatible local server: http://127.0.0.1:8000/v1)")
    ] = None
    api_key_env: Annotated[
        str | None, Param("the NAME of the environment variable that holds the key, never the key")
    ] = None
    temperature: Annotated[float, Param("sampling temperature", ge=0, le=2)] = 0.0
    max_tokens: Annotated[int | None, Param("default completion cap (a request's own max_tokens wins)", ge=1)] = None
    timeout: Annotated[float, Param("seconds per attempt", gt=0)] = 120.0
    num_retries: Annotated[int, Param("retries of a transient failure (error, timeout, rate limit)", ge=0)] = 2
    retry_min_seconds: Annotated[
        float, Param("backoff before the first retry; doubles each retry, with jitter", ge=0)
    ] = 1.0
    retry_max_seconds: Annotated[float, Param("backoff cap (a server's Retry-After is honoured up to this)", ge=0)] = (
        30.0
    )
    structured_output: Annotated[str, Param("JSON replies: auto, json_schema, json_object or none")] = "auto"
    input_price_per_mtok: Annotated[
        float | None, Param("USD per 1M prompt tokens (null: litellm's cost map)", ge=0)
    ] = None
    output_price_per_mtok: Annotated[
        float | None, Param("USD per 1M output tokens (null: litellm's cost map)", ge=0)
    ] = None
    cached_input_price_per_mtok: Annotated[
        float | None, Param("USD per 1M prompt tokens the provider served from its cache", ge=0)
    ] = None
    params: Annotated[dict[str, Any], Param("other answer-changing parameters (top_p, seed, stop, ...)")] = field(
        default_factory=dict
    )

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
            config = cls(**{**data, "role": role})
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if config.structured_output not in STRUCTURED_OUTPUT:
            raise ConfigError(
                f"{where}.structured_output: {config.structured_output!r}; choose from {', '.join(STRUCTURED_OUTPUT)}"
            )
        if int(config.num_retries) < 0 or config.retry_min_seconds < 0 or config.retry_max_seconds < 0:
            raise ConfigError(f"{where}: num_retries and retry_*_seconds must be >= 0")
        return config


@dataclass(frozen=True)
class Reply:
    text: str
    finish_reason: str | None  # "stop", "length" (cut at max_tokens), ... as the provider said


class LLMClient:
    """``complete(messages)`` -> text. Every call (live, replayed, answered from the cassette or
    failed) appends one usage record; a record with ``cached`` is a cache hit, not a provider call."""

    def __init__(
        self,
        config: RoleConfig,
        cassette: Cassette | None = None,
        faults: FaultConfig | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.cassette = cassette if cassette is not None and cassette.mode != "live" else None
        self.faults = faults if faults is not None and faults.active else None
        self.usage: list[dict[str, Any]] = []
        self.calls = 0
        self.sleep = sleep
        self.on_event: Callable[[dict[str, Any]], None] | None = None  # set by the replay: failure events

    @property
    def role(self) -> str:
        return self.config.role

    def request(
        self, messages: list[dict[str, Any]], max_tokens: int | None = None, schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The exact request: everything in it changes the answer, so all of it is in the cassette key."""
        cfg = self.config
        request = {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": max_tokens if max_tokens is not None else cfg.max_tokens,
            **cfg.params,
        }
        response_format = self._response_format(schema)
        if response_format is not None:
            request["response_format"] = response_format
        return request

    def _response_format(self, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        """The JSON reply format the provider can enforce, for a caller that wants one."""
        mode = self.config.structured_output
        if schema is None or mode == "none":
            return None
        if mode == "auto":
            from ctxbench.llm.cost import supports_json_schema

            mode = "json_schema" if supports_json_schema(self.config.model) else "none"
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "grade", "schema": schema, "strict": True}}
        if mode == "json_object":  # llama.cpp's server turns the schema into a grammar
            return {"type": "json_object", "schema": schema}
        return None

    def complete(self, messages: list[dict[str, Any]], max_tokens: int | None = None, purpose: str = "") -> str:
        """The reply text; raises SummariserError (kind from FAULT_KINDS) or CassetteMiss in replay mode."""
        return self.reply(messages, max_tokens, purpose).text

    def reply(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int | None = None,
        purpose: str = "",
        schema: dict[str, Any] | None = None,
    ) -> Reply:
        """The reply and its finish reason; raises SummariserError or CassetteMiss (replay mode)."""
        number = self.calls
        self.calls += 1
        if self.faults is not None and (kind := self.faults.draw(number)):
            self._record(purpose, None, 0, 0, cached=False, fault=kind, injected=True)
            if kind == "malformed":  # bad text, as an unvalidated model would give: the caller's checks see it
                return Reply(MALFORMED_TEXT, "stop")
            self.fail(kind, f"{self.role}: {FAULT_MESSAGES.get(kind, 'injected fault: empty completion')}")
        request = self.request(messages, max_tokens, schema)
        key = request_key(request)
        served = self.cassette.serve(key) if self.cassette else None
        if served is None:
            if self.cassette and self.cassette.mode == "replay":
                raise CassetteMiss(
                    f"cassette {self.cassette.path}: no recorded answer for role={self.role} "
                    f"model={self.config.model} prompt={prompt_preview(request)!r}... key={key[:16]}"
                )
            entry = self._live(request, key)
            if self.cassette:
                self.cassette.append(entry)
            cached = replayed = False
        else:
            entry, cached, replayed = served.entry, served.cache_hit, not served.cache_hit
        usage = entry.get("usage") or {}
        error = entry.get("error")
        self._record(
            purpose,
            key,
            0 if cached else int(usage.get("prompt_tokens") or 0),
            0 if cached else int(usage.get("completion_tokens") or 0),
            cached=cached,
            fault=error["kind"] if error else None,
            cached_prompt_tokens=0 if cached else int(usage.get("cached_prompt_tokens") or 0),
            replayed=replayed,
            attempts=0 if cached else int(entry.get("attempts") or 1),
            finish_reason=entry.get("finish_reason"),
        )
        if error:
            self.fail(error["kind"], f"{self.role} {self.config.model}: {error['message']}", record=False)
        text = entry.get("response") or ""
        if not text.strip():
            self.fail("empty", f"{self.role} {self.config.model}: empty completion")
        return Reply(text, entry.get("finish_reason"))

    def fail(self, kind: str, message: str, record: bool = True) -> NoReturn:
        """Mark the last call failed with ``kind`` (an event of the replay) and raise."""
        self.mark_failed(kind, message, record)
        raise SummariserError(kind, message)

    def mark_failed(self, kind: str, message: str, record: bool = True) -> None:
        """The last call failed (e.g. its reply did not parse): count it and tell the replay."""
        if record and self.usage:
            self.usage[-1]["fault"] = kind
        if self.on_event is not None:
            last = self.usage[-1] if self.usage else {}
            self.on_event(
                {
                    "type": "llm.failure",
                    "role": self.role,
                    "kind": kind,
                    "purpose": last.get("purpose"),
                    "cached": bool(last.get("cached")),
                    "message": message[:300],
                }
            )

    def _live(self, request: dict[str, Any], key: str) -> dict[str, Any]:
        """Call the provider, retrying transient failures with backoff and jitter; the final outcome
        (a failure too, so a replay fails the same way) is the cassette entry."""
        cfg = self.config
        entry: dict[str, Any] = {"key": key, "role": cfg.role, "request": request}
        rng = random.Random(key)  # jitter: spread retries of parallel jobs, reproducibly
        attempt = 0
        while True:
            attempt += 1
            outcome, retry_after = self._attempt(request)
            kind = (outcome.get("error") or {}).get("kind")
            if kind not in RETRY_KINDS or attempt > int(cfg.num_retries):
                return {**entry, **outcome, "attempts": attempt}
            delay = min(cfg.retry_max_seconds, cfg.retry_min_seconds * 2 ** (attempt - 1))
            delay *= 0.5 + rng.random()  # +-50% jitter
            if retry_after is not None:
                delay = max(delay, retry_after)
            self.sleep(min(delay, cfg.retry_max_seconds))

    def _attempt(self, request: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
        """One request to the provider: (outcome, the server's Retry-After in seconds if it sent one)."""
        import litellm

        litellm.suppress_debug_info = True  # its "Give Feedback" banner would clutter every failure log
        cfg = self.config
        kwargs = dict(request)
        # ctxbench retries itself (num_retries): litellm's wrapper and the OpenAI SDK must not retry too.
        kwargs.update(timeout=cfg.timeout, num_retries=0, max_retries=0)
        kwargs["drop_params"] = True  # a param the provider lacks (seed, response_format) is dropped, not an error
        if cfg.api_base:
            kwargs["api_base"] = cfg.api_base
        api_key = self._api_key()
        if api_key:
            kwargs["api_key"] = api_key
        from ctxbench.llm.http import attempt_deadline, bounded_client

        if litellm.client_session is None:  # OpenAI-compatible calls: a deadline per attempt, bounded replies
            litellm.client_session = bounded_client()
        try:
            with attempt_deadline(cfg.timeout):
                response = litellm.completion(**kwargs)
        except Exception as exc:  # litellm raises provider-specific types; classify_exception maps them
            refused = _refusal(exc)
            if refused is not None:  # too large, or an encoding that cannot be bounded: not worth asking again
                return {"error": {"kind": "malformed", "message": refused}}, None
            message = " ".join(str(exc).split())[:500]
            if "no 'choices'" in message:  # litellm's own check of a 200 without choices
                return {"error": {"kind": "malformed", "message": message}}, None
            return {"error": {"kind": classify_exception(exc), "message": message}}, _retry_after(exc)
        try:
            return _checked_reply(response, cfg.model), None
        except ValueError as exc:  # a 200 that is not a completion: counted as malformed, never a verdict
            return {"error": {"kind": "malformed", "message": f"reply {exc}"}}, None

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
        replayed: bool = False,
        attempts: int = 1,
        finish_reason: str | None = None,
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
                "replayed": replayed,
                "attempts": attempts,
                "finish_reason": finish_reason,
                "key": key,
            }
        )


def _count(value: Any, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ValueError(f"usage.{name} is {value!r}, not a token count")
    if not 0 <= value <= MAX_USAGE_TOKENS or int(value) != value:
        raise ValueError(f"usage.{name}={value!r} is not a plausible token count (0..{MAX_USAGE_TOKENS:,})")
    return int(value)


def _checked_reply(response: Any, model: str) -> dict[str, Any]:
    """The cassette entry of a provider reply, checked: one choice with text, plausible usage."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise ValueError("has no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise ValueError(f"content is {type(content).__name__}, not text")
    usage = getattr(response, "usage", None)
    counts = {
        "prompt_tokens": _count(getattr(usage, "prompt_tokens", 0), "prompt_tokens"),
        "completion_tokens": _count(getattr(usage, "completion_tokens", 0), "completion_tokens"),
    }
    details = getattr(usage, "prompt_tokens_details", None)
    cached_prompt = _count(getattr(details, "cached_tokens", 0), "prompt_tokens_details.cached_tokens")
    if cached_prompt > counts["prompt_tokens"]:
        raise ValueError(f"usage says {cached_prompt} cached of {counts['prompt_tokens']} prompt tokens")
    if cached_prompt:  # the provider's prompt cache served these (OpenAI; litellm maps Anthropic's reads)
        counts["cached_prompt_tokens"] = cached_prompt
    return {
        "response": content or "",
        "finish_reason": getattr(choice, "finish_reason", None),
        "model": getattr(response, "model", None) or model,
        "usage": counts,
    }


def _refusal(exc: BaseException) -> str | None:
    """The transport's refusal (ctxbench.llm.http.ReplyRefused) somewhere in the exception's chain."""
    from ctxbench.llm.http import ReplyRefused

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplyRefused):
            return str(current)
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header on the failed response, when the server sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None
