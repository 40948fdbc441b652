"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (stdlib http.server, one thread).

``POST /v1/chat/completions`` answers deterministically from the request: every ``## heading``
line of the system message is echoed, each followed by the first words of the user message and a
digest of the whole request, so replies are checkable and differ per request. ``behaviour`` makes
it answer like a failing provider instead: "overflow" (400 context_length_exceeded), "rate_limit"
(429), "error" (500), "empty" (empty content), "malformed" (no headings), "slow" (sleeps past the
client timeout), "length" (the reply, with finish_reason "length"). ``script`` gives a behaviour
per request instead, in turn (cycled): a server that fails, then recovers, then fails again.

Hostile behaviours (issue 29): "no_choices" (``"choices": []``), "missing_choices" (no key),
"drip_body" / "drip_headers" (one byte every ``drip_seconds``, each read well within any timeout),
"huge" (a ``huge_bytes`` reply), "gzip_bomb" (a small gzip body that inflates to ``huge_bytes``),
"huge_usage" (a usage of 10^25 prompt tokens)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OVERFLOW_BODY = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
SERVER_ERROR_BODY = {
    "error": {"message": "The server had an error while processing your request.", "type": "server_error"}
}
RATE_LIMIT_BODY = {
    "error": {
        "message": "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}


def reply_text(request: dict[str, Any]) -> str:
    messages = request.get("messages", [])
    system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    user = " ".join(str(m.get("content", "")) for m in messages if m.get("role") != "system")
    if "<conversation>" in user and "</conversation>" in user:  # a summary request: echo the span, not the tags
        user = user.split("<conversation>", 1)[1].split("</conversation>", 1)[0]
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:12]
    gist = " ".join(user.split()[:6])
    headings = [line.strip() for line in system.splitlines() if line.strip().startswith("## ")]
    if not headings:
        return f"echo {digest}: {gist}"
    return "\n".join(f"{h}\n- {gist} [{digest}]" for h in headings)


class LLMServer:
    """``with LLMServer() as server: server.api_base`` -> "http://127.0.0.1:<port>/v1"."""

    def __init__(
        self,
        behaviour: str = "ok",
        sleep_seconds: float = 3.0,
        reply: Callable[[dict[str, Any]], str] = reply_text,
        script: list[str] | None = None,
        drip_seconds: float = 0.2,
        huge_bytes: int = 100 << 20,
    ) -> None:
        self.drip_seconds = drip_seconds
        self.huge_bytes = huge_bytes
        self.behaviour = behaviour
        self.script = list(script or [])  # behaviour per request, in turn (cycled)
        self.behaviours: list[str] = []  # what each request got
        self.reply = reply  # the "model": request -> completion text
        self.sleep_seconds = sleep_seconds
        self.cached_tokens = 0  # reported as usage.prompt_tokens_details.cached_tokens (capped at the prompt)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with server.lock:
                    server.requests.append(body)
                    number = len(server.requests) - 1
                    behaviour = server.script[number % len(server.script)] if server.script else server.behaviour
                    server.behaviours.append(behaviour)
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if behaviour == "error":
                    return self._send(500, SERVER_ERROR_BODY)
                if behaviour == "overflow":
                    return self._send(400, OVERFLOW_BODY)
                if behaviour == "rate_limit":
                    return self._send(429, RATE_LIMIT_BODY)
                if behaviour == "slow":
                    time.sleep(server.sleep_seconds)
                if behaviour in HOSTILE:
                    return HOSTILE[behaviour](self, server, body)
                canned = {"empty": "", "malformed": "All good, nothing to report."}
                text = canned[behaviour] if behaviour in canned else server.reply(body)
                words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
                self._send(
                    200,
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "test-model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "length" if behaviour == "length" else "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": words,
                            "completion_tokens": len(text.split()),
                            "total_tokens": words + len(text.split()),
                            "prompt_tokens_details": {"cached_tokens": min(server.cached_tokens, words)},
                        },
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.handler = Handler
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> LLMServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# --- hostile replies ------------------------------------------------------------------------------------


def completion(text: str, **usage: Any) -> dict[str, Any]:
    counts = {"prompt_tokens": 10, "completion_tokens": len(text.split()), **usage}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {**counts, "total_tokens": counts["prompt_tokens"] + counts["completion_tokens"]},
    }


def _raw(handler: Any, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
    _stream(handler, status, len(data), [data], headers)


def _stream(handler: Any, status: int, length: int, chunks: Any, headers: dict[str, str] | None = None) -> None:
    """A reply sent in chunks (a 100 MB body without 100 MB in this process)."""
    try:
        handler.send_response(status)
        for key, value in {
            "Content-Type": "application/json",
            "Content-Length": str(length),
            **(headers or {}),
        }.items():
            handler.send_header(key, value)
        handler.end_headers()
        for chunk in chunks:
            handler.wfile.write(chunk)
    except (BrokenPipeError, ConnectionResetError, OSError):
        pass


def _huge_parts(size: int, fill: bytes) -> tuple[bytes, int, bytes]:
    head, tail = json.dumps(completion("@")).encode().split(b"@")
    return head, size, tail


def _huge_chunks(size: int, fill: bytes) -> Any:
    head, n, tail = _huge_parts(size, fill)
    yield head
    block = fill * (1 << 20)
    for _ in range(n >> 20):
        yield block
    yield tail


def _drip(handler: Any, data: bytes, seconds: float) -> None:
    try:
        for i in range(len(data)):
            handler.wfile.write(data[i : i + 1])
            handler.wfile.flush()
            time.sleep(seconds)
    except (BrokenPipeError, ConnectionResetError, OSError):
        pass


def _drip_body(handler: Any, server: LLMServer, body: dict[str, Any]) -> None:
    data = json.dumps(completion("a reply that takes minutes to arrive " * 20)).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.flush()
    _drip(handler, data, server.drip_seconds)


def _drip_headers(handler: Any, server: LLMServer, body: dict[str, Any]) -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(f"X-Pad-{i}: {'x' * 40}\r\n".encode() for i in range(300))
    _drip(handler, head, server.drip_seconds)


def _huge(handler: Any, server: LLMServer, body: dict[str, Any]) -> None:
    head, n, tail = _huge_parts(server.huge_bytes, b"x")
    length = len(head) + (n >> 20 << 20) + len(tail)
    _stream(handler, 200, length, _huge_chunks(server.huge_bytes, b"x"))


def _gzip_bomb(handler: Any, server: LLMServer, body: dict[str, Any]) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    data = b"".join(compressor.compress(chunk) for chunk in _huge_chunks(server.huge_bytes, b" ")) + compressor.flush()
    _raw(handler, 200, data, {"Content-Encoding": "gzip"})


HOSTILE: dict[str, Callable[[Any, LLMServer, dict[str, Any]], None]] = {
    "no_choices": lambda h, s, b: _raw(h, 200, json.dumps({**completion("x"), "choices": []}).encode()),
    "missing_choices": lambda h, s, b: _raw(
        h, 200, json.dumps({k: v for k, v in completion("x").items() if k != "choices"}).encode()
    ),
    "drip_body": _drip_body,
    "drip_headers": _drip_headers,
    "huge": _huge,
    "gzip_bomb": _gzip_bomb,
    "huge_usage": lambda h, s, b: _raw(h, 200, json.dumps(completion("fine", prompt_tokens=10**25)).encode()),
}
