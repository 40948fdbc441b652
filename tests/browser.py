"""A headless Chromium for the tests that look at pages as a person would (the report, the viewer),
driven through the DevTools protocol over a websocket: open a URL at a window size, wait for the
page, evaluate JavaScript and get the value back.

Debian's ``chromium`` (``.ci/run`` installs it). Without it a test skips on a developer's machine
and fails in CI (``CI`` set), where it is installed: a browser test must not pass by not running.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
)


def chromium_path() -> str:
    """The browser, or the test is skipped (failed in CI, where .ci/run installed it)."""
    path = os.environ.get("CTXBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    message = "chromium is not installed (apt-get install -y chromium; .ci/run does)"
    if os.environ.get("CI"):
        pytest.fail(message + ": CI installs it, so this is a failure")
    pytest.skip(message)


class Browser:
    def __init__(self, executable: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="ctxbench-chromium-")  # a new empty profile
        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.port = self._port()
        self._id = 0

    def _port(self) -> int:
        assert self.process.stderr is not None
        deadline = time.monotonic() + 60
        seen = []
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line and self.process.poll() is not None:
                break
            seen.append(line)
            match = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if match:
                return int(match.group(1))
        self.close()
        raise RuntimeError("chromium did not start: " + "".join(seen[-10:]))

    def page(self, width: int = 1400, height: int = 900) -> Page:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(request, timeout=30) as response:
            target = json.loads(response.read())
        return Page(connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=30), width, height)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """One tab: ``open(url)``, ``js(expression)``."""

    def __init__(self, socket: ClientConnection, width: int, height: int) -> None:
        self.socket = socket
        self._id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.width, self.height = width, height

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
        self._id += 1
        mine = self._id
        self.socket.send(json.dumps({"id": mine, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result") or {})

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(f"{expression}: {details.get('exception', details)}")
        return result["result"].get("value")

    def open(self, url: str, ready: str = "document.readyState === 'complete'", timeout: float = 60) -> None:
        self.call("Page.navigate", {"url": url})
        self.wait(ready, timeout)

    def wait(self, condition: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.js(f"Boolean({condition})"):
                    return
            except RuntimeError:
                pass  # the page is still loading
            time.sleep(0.1)
        raise AssertionError(f"the page never got to: {condition}")

    def close(self) -> None:
        self.socket.close()


def file_url(path: Path) -> str:
    return path.resolve().as_uri()
