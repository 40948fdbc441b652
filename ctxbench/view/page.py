"""The viewer's HTML: an index of cells and one self-contained page per cell (its data embedded as
JSON, the script and style inlined), so a page opens from a file as well as from the server."""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from ctxbench.report.tables import NOT_VARIANT


def _asset(name: str) -> str:
    return resources.files("ctxbench.view").joinpath(name).read_text("utf-8")


def _json(data: Any) -> str:
    """JSON safe inside a <script> element (no ``</`` to end it early)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def _pct(value: Any) -> str:
    return f"{value * 100:.1f}%" if isinstance(value, int | float) else "-"


def cell_html(data: dict[str, Any], index_href: str = "../index.html") -> str:
    cell = data["cell"]
    title = f"{cell['transcript']} · {cell['strategy']} · {cell['model']}"
    variant = " ".join(o for o in cell["overrides"] if not o.lstrip("+~").startswith(NOT_VARIANT))
    return f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}: ctxbench view</title><style>{_asset("viewer.css")}</style></head><body>
<p class="note"><a href="{html.escape(index_href)}">all cells</a> · <code>{html.escape(cell["path"])}</code></p>
<h1 id="title">{html.escape(title)}</h1>
{f'<p class="note">{html.escape(variant)}</p>' if variant else ""}
<div class="facts" id="facts"></div>
<h2>Calls</h2>
<div id="timeline"></div>
<div class="legend" id="legend"></div>
<p class="note" id="threshold-note"></p>
<div class="split">
<div><div class="scroll" id="calls-box"><table id="calls"><thead><tr><th>call</th><th>sent</th><th>full</th>
<th>accepted</th><th>state</th><th>layers</th><th>cached</th><th>cost</th></tr></thead><tbody></tbody></table></div>
<h2>Probes</h2>
<div class="scroll"><table id="probes"><thead><tr><th>probe</th><th>question</th><th>gold</th><th>stated</th>
<th>needed</th><th>at the end</th><th>first missing</th><th>layers then</th></tr></thead><tbody></tbody></table></div>
</div>
<div id="call"></div>
</div>
<script type="application/json" id="cell-data">{_json(data)}</script>
<script>{_asset("viewer.js")}</script>
</body></html>
"""


def index_html(entries: list[dict[str, Any]], sources: list[str]) -> str:
    """The cell picker: one row per cell, filterable, each linking to its page."""
    rows = []
    for e in entries:
        rows.append(
            "<tr>"
            + f'<td><a href="{html.escape(e["href"])}">{html.escape(str(e["transcript"]))}</a></td>'
            + f"<td>{html.escape(str(e['strategy']))}</td><td>{html.escape(str(e['model']))}</td>"
            + f"<td>{html.escape(e['variant'])}</td><td>{e['calls']:,}</td>"
            + f"<td>{_pct(e['savings'])}</td><td>{_pct(e['retention'])}</td>"
            + f"<td>{'yes' if e['contexts'] else 'no'}</td></tr>"
        )
    return f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ctxbench view</title><style>{_asset("viewer.css")}</style></head><body>
<h1>ctxbench view</h1>
<p class="note">{len(entries)} cells from {", ".join(f"<code>{html.escape(s)}</code>" for s in sources)}.
Pick a cell to see its calls, what each prompt sent and dropped, and its probes.</p>
<input id="filter" placeholder="filter: transcript, strategy, model..." autofocus>
<table id="cells"><thead><tr><th>transcript</th><th>strategy</th><th>model</th><th>variant</th><th>calls</th>
<th>savings</th><th>retention</th><th>prompts recorded</th></tr></thead><tbody>
{"".join(rows)}
</tbody></table>
<script>
document.getElementById("filter").addEventListener("input", (ev) => {{
  const words = ev.target.value.toLowerCase().split(/\\s+/).filter(Boolean);
  for (const tr of document.querySelectorAll("#cells tbody tr"))
    tr.hidden = !words.every((w) => tr.textContent.toLowerCase().includes(w));
}});
</script>
</body></html>
"""
