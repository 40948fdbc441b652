"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (stdlib http.server, one thread).

``POST /v1/chat/completions`` answers deterministically from the request: every ``## heading``
line of the system message is echoed, each followed by the first words of the user message and a
digest of the whole request, so replies are checkable and differ per request. ``behaviour`` makes
it answer like a failing provider instead: "overflow" (400 context_length_exceeded), "rate_limit"
(429), "error" (500), "empty" (empty content), "malformed" (no headings), "slow" (sleeps past the
client timeout), "length" (the reply, with finish_reason "length"). ``script`` gives a behaviour
per request instead, in turn (cycled): a server that fails, then recovers, then fails again."""

from __future__ import annotations

import hashlib
import json
import threading
import time
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
    ) -> None:
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
