"""``ctxbench view RESULTS... [--out DIR] [--only PATTERN] [--serve [--port N]]``: see what a strategy
sent and dropped, call by call.

Writes an index of the cells and one page per cell (static HTML: open ``index.html`` in a browser),
or serves the same pages on 127.0.0.1 with ``--serve``, each built when it is asked for. A cell's
page: its call timeline against the thresholds its strategy used, each call's prompt message by
message marked against the full history, and each probe's story."""

from __future__ import annotations

import argparse
import fnmatch
import http.server
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ctxbench.atomic import write_text_atomic
from ctxbench.errors import InputError
from ctxbench.replay.contexts import FILE as CONTEXTS_FILE
from ctxbench.report.tables import NOT_VARIANT
from ctxbench.results.store import iter_summaries
from ctxbench.view.data import cell_data
from ctxbench.view.page import cell_html, index_html


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ctxbench view",
        description="See what a strategy sent and dropped, call by call: an index of cells and a page per cell.",
    )
    p.add_argument("results", nargs="+", help="result roots, run folders or cell folders")
    p.add_argument("--out", help="folder for the static pages (default: RESULTS/view of the first path)")
    p.add_argument("--only", help="write pages only for cells whose path matches this glob (e.g. '*dbgpt*')")
    p.add_argument("--serve", action="store_true", help="serve the pages on 127.0.0.1 instead of writing them")
    p.add_argument("--port", type=int, default=7576, help="port for --serve (default 7576; 0: any free port)")
    return p


def page_name(name: str) -> str:
    """A cell's page file: its path under ``cells/`` with the folders joined by ``__``."""
    return name.replace("/", "__") + ".html"


def find_cells(paths: Sequence[str]) -> list[tuple[str, Path, dict[str, Any]]]:
    """(name, folder, summary) of every complete cell; the name is its path under ``cells/``."""
    found = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(path, None, "no such file or directory")
        for cell_dir, summary in iter_summaries(path):
            if cell_dir.resolve() in seen:
                continue
            seen.add(cell_dir.resolve())
            parts = cell_dir.resolve().parts
            below = len(parts) - parts[::-1].index("cells") if "cells" in parts else len(parts) - 1
            name = "/".join(parts[below:])  # strategy/model/transcript-hash
            found.append((name, cell_dir, summary))
    return sorted(found, key=lambda f: f[0])


def entries(cells: list[tuple[str, Path, dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for name, cell_dir, summary in cells:
        cell, metrics = summary.get("cell", {}), summary.get("metrics", {})
        overrides = [o for o in cell.get("overrides") or () if not o.lstrip("+~").startswith(NOT_VARIANT)]
        out.append(
            {
                "href": f"cells/{page_name(name)}",
                "transcript": cell.get("transcript"),
                "strategy": cell.get("strategy"),
                "model": cell.get("model"),
                "variant": " ".join(overrides),
                "calls": int(metrics.get("calls") or 0),
                "savings": metrics.get("savings"),
                "retention": metrics.get("retention"),
                "contexts": (cell_dir / CONTEXTS_FILE).exists(),
            }
        )
    return out


def write_pages(cells: list[tuple[str, Path, dict[str, Any]]], out: Path, sources: list[str], only: str | None) -> int:
    """The index and the pages of the cells ``only`` matches (all without it); returns pages written."""
    written = 0
    for name, cell_dir, summary in cells:
        if only and not fnmatch.fnmatch(name, only):
            continue
        write_text_atomic(out / "cells" / page_name(name), cell_html(cell_data(cell_dir, summary, name)))
        written += 1
    write_text_atomic(out / "index.html", index_html(entries(cells), sources))
    return written


def serve(cells: list[tuple[str, Path, dict[str, Any]]], sources: list[str], port: int) -> None:
    pages = {page_name(name): (name, cell_dir, summary) for name, cell_dir, summary in cells}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  (the name http.server calls)
            path = unquote(urlparse(self.path).path)
            if path in ("/", "/index.html"):
                self._send(200, index_html(entries(cells), sources))
            elif path.startswith("/cells/") and path[len("/cells/") :] in pages:
                name, cell_dir, summary = pages[path[len("/cells/") :]]
                self._send(200, cell_html(cell_data(cell_dir, summary, name)))
            else:
                self._send(404, "<!doctype html><p>No such page. <a href='/'>All cells</a></p>")

        def _send(self, status: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (http.server's name)
            pass  # one line per request would bury the address

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"Serving {len(cells)} cells on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def cli(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    cells = find_cells(args.results)
    if not cells:
        raise InputError(", ".join(args.results), None, "no complete result cells found")
    if args.serve:
        serve(cells, list(args.results), args.port)
        return 0
    out = Path(args.out) if args.out else Path(args.results[0]) / "view"
    written = write_pages(cells, out, list(args.results), args.only)
    recorded = sum(1 for _, cell_dir, _ in cells if (cell_dir / CONTEXTS_FILE).exists())
    size = sum(p.stat().st_size for p in (out / "cells").glob("*.html")) if written else 0
    print(
        f"{len(cells)} cells ({recorded} with recorded prompts); wrote {written} pages ({size / 1e6:.1f} MB) to {out}",
        file=sys.stdout,
    )
    print(f"Open: {(out / 'index.html').resolve().as_uri()}")
    return 0
