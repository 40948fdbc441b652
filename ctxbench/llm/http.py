"""The HTTP transport under litellm's OpenAI-compatible calls: a deadline per attempt, bounded replies.

httpx's ``timeout`` bounds each read, so a server that drips its headers or body one byte at a
time is never timed out; and a reply is read whole into memory, however large, then decompressed,
however large it becomes. Here one attempt (connect, headers and body together) must end within
its deadline, the body may not exceed ``MAX_REPLY_BYTES`` on the wire nor after gzip/deflate
decompression, and any other content encoding is refused. The work runs in a helper thread the
caller waits for until the deadline; a thread still blocked on a dripping server then gives up
at its next byte (its reads check the deadline) and is left to end by itself.
"""

from __future__ import annotations

import contextvars
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

MAX_REPLY_BYTES = 8 << 20  # a chat completion is a few kB; 8 MiB is far beyond any honest one


class ReplyRefused(httpx.TransportError):
    """A reply ctxbench will not read: too large, or in an encoding it cannot bound."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("ctxbench_llm_deadline", default=None)
_LIMIT: contextvars.ContextVar[int] = contextvars.ContextVar("ctxbench_llm_limit", default=MAX_REPLY_BYTES)


@contextmanager
def attempt_deadline(seconds: float, max_bytes: int = MAX_REPLY_BYTES) -> Iterator[None]:
    """Calls made inside end within ``seconds`` in all, with replies of at most ``max_bytes``."""
    tokens = (_DEADLINE.set(time.monotonic() + seconds), _LIMIT.set(max_bytes))
    try:
        yield
    finally:
        _DEADLINE.reset(tokens[0])
        _LIMIT.reset(tokens[1])


def _decoded(raw: bytes, encoding: str, limit: int) -> bytes:
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "deflate", "x-gzip"):
        raise ReplyRefused(f"reply in content-encoding {encoding!r}, which ctxbench does not read")
    decoder = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
    try:
        out = decoder.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise ReplyRefused(f"reply body does not decompress ({exc})") from None
    if len(out) > limit or decoder.unconsumed_tail:
        raise ReplyRefused(f"reply larger than {limit:,} bytes once decompressed")
    return out


class BoundedTransport(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline, limit = _DEADLINE.get(), _LIMIT.get()
        if deadline is None:  # not inside attempt_deadline: still bounded in size
            deadline = time.monotonic() + 600.0
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                response = self.inner.handle_request(request)
                try:
                    raw = bytearray()
                    for chunk in response.stream:  # type: ignore[union-attr]
                        raw += chunk
                        if len(raw) > limit:
                            raise ReplyRefused(f"reply larger than {limit:,} bytes")
                        if time.monotonic() > deadline:
                            raise httpx.ReadTimeout("attempt deadline passed while reading the reply")
                finally:
                    response.close()
                encoding = response.headers.get("content-encoding", "").strip().lower()
                body = _decoded(bytes(raw), encoding, limit)
                headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _RECOMPUTED]
                box["response"] = httpx.Response(response.status_code, headers=headers, content=body)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="ctxbench-llm-http", daemon=True)
        worker.start()
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            raise httpx.ReadTimeout("timed out: no complete reply within the attempt's deadline", request=request)
        if "error" in box:
            raise box["error"]
        response: httpx.Response = box["response"]
        response.request = request
        return response

    def close(self) -> None:
        self.inner.close()


_RECOMPUTED = {"content-encoding", "content-length", "transfer-encoding"}


def bounded_client() -> httpx.Client:
    """The httpx client litellm's OpenAI-compatible calls go through (``litellm.client_session``)."""
    return httpx.Client(transport=BoundedTransport(), follow_redirects=True)
