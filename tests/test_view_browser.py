"""`ctxbench view` in a real browser (headless Chromium, tests/browser.py): what a person opens it for.
The issue's case: the largest bundled transcript under dbgpt, call 120: what was sent, and what
Layer 1 truncated."""

import json
import subprocess

import pytest

from ctxbench.transcripts import read_transcripts
from ctxbench.view.data import prompt_of, read_contexts
from tests.browser import file_url
from tests.conftest import CTXBENCH, ROOT

LARGEST = "synth-coding_390k"
BUNDLED = ROOT / "ctxbench" / "data" / "bundled"


@pytest.fixture(scope="module")
def viewed(tmp_path_factory):
    """`ctxbench run strategy=dbgpt` on the largest bundled transcript, then `ctxbench view`."""
    out = tmp_path_factory.mktemp("view")
    largest = max(BUNDLED.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    assert next(iter(read_transcripts(largest))).id == LARGEST
    run = [*CTXBENCH, "run", "strategy=dbgpt", f"dataset.include=[{LARGEST}]", f"output.root={out}", "progress=false"]
    done = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    view = subprocess.run([*CTXBENCH, "view", str(out / "default")], capture_output=True, text=True, timeout=300)
    assert view.returncode == 0, view.stderr
    assert "1 cells (1 with recorded prompts); wrote 1 pages (" in view.stdout
    (cell,) = [p.parent for p in (out / "default").rglob("summary.json")]
    return out / "default" / "view", cell


def test_the_index_leads_to_the_cell(browser, viewed):
    folder, _ = viewed
    page = browser.page()
    page.open(file_url(folder / "index.html"))
    assert page.js("document.querySelectorAll('#cells tbody tr').length") == 1
    href = page.js("document.querySelector('#cells tbody a').href")
    page.open(href, "document.body.dataset.ready === '1'")
    assert LARGEST in page.js("document.getElementById('title').textContent")
    page.close()


def test_call_120_shows_what_was_sent_and_what_layer1_cut(browser, viewed):
    folder, cell = viewed
    (html,) = (folder / "cells").glob("*.html")
    page = browser.page(1400, 900)
    page.open(file_url(html) + "#call=120", "document.body.dataset.ready === '1'")
    assert page.js("document.getElementById('call-title').textContent") == "Call 120"
    # The timeline is on the first screen, and nothing is cut off the right of the page.
    assert page.js("document.getElementById('timeline-svg').getBoundingClientRect().bottom") <= 900
    assert page.js("document.documentElement.scrollWidth <= window.innerWidth")
    # Every message of the prompt, in the order sent, is in the page: compare with the file.
    sent = prompt_of(read_contexts(cell), 120)
    shown = page.js(
        "[...document.querySelectorAll('#messages li')].filter(li => !['dropped', 'summarised']"
        ".includes(li.dataset.status)).map(li => li.querySelector('.where').textContent)"
    )
    assert shown == [f"#{e['index']}" if "index" in e else f"#{e['origin']}" if "origin" in e else "new" for e in sent]
    # A Layer 1 cut: what went out (the start and the notice) and what did not, as the transcript has it.
    cut = next(e for e in sent if "layer1" in (e.get("meta") or {}).get("compacted_by", []))
    original = next(iter(read_transcripts(BUNDLED / "coding_390k.jsonl"))).messages[cut["origin"]].content
    li = (
        "[...document.querySelectorAll('#messages li.truncated')]"
        f".find(li => li.querySelector('.where').textContent === '#{cut['origin']}')"
    )
    assert "by layer1" in page.js(f"{li}.querySelector('.mhead').textContent")
    page.js(f"{li}.querySelectorAll('button.more').forEach(b => b.click())")
    texts = page.js(f"[...{li}.querySelectorAll('pre.text')].map(p => p.textContent)")
    assert texts == [cut["text"], original[cut["same"] :]]
    assert cut["text"].startswith(original[: cut["same"]]) and "[truncated" in cut["text"]
    # The thresholds drawn are the ones its events used: 0.70 and 0.90 of the budget they report.
    events = [json.loads(line) for line in (cell / "events.jsonl").read_text().splitlines()]
    (budget,) = {e["budget"] for e in events if e["type"] == "context.status"}
    labels = page.js("[...document.querySelectorAll('#timeline-svg text.threshold-label')].map(t => t.textContent)")
    assert labels == [f"layer1, layer2 ≥ {round(0.7 * budget):,}", f"layer3 ≥ {round(0.9 * budget):,}"]
    # A row of the calls table opens its call.
    page.js("document.querySelector('#calls tr[data-call=\"5\"]').click()")
    page.wait("document.getElementById('call-title').textContent === 'Call 5'")
    page.close()


def test_each_probe_says_where_it_was_lost(browser, viewed):
    folder, cell = viewed
    (html,) = (folder / "cells").glob("*.html")
    page = browser.page()
    page.open(file_url(html), "document.body.dataset.ready === '1'")
    rows = page.js("[...document.querySelectorAll('#probes tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))")
    judged = [json.loads(line) for line in (cell / "retention.jsonl").read_text().splitlines()]
    assert len(rows) == len({r["probe"] for r in judged})
    lost = [r for r in rows if r[5] == "lost"]
    assert lost and all(r[6].startswith("call ") and r[7] != "-" for r in lost)
    page.close()


def test_serve_builds_the_same_pages_on_request(viewed):
    import re
    import urllib.error
    import urllib.request

    folder, _ = viewed
    server = subprocess.Popen(
        [*CTXBENCH, "view", str(folder.parent), "--serve", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        index = urllib.request.urlopen(url, timeout=60).read().decode()
        href = re.search(r'href="(cells/[^"]+)"', index).group(1)
        page = urllib.request.urlopen(url + href, timeout=60).read().decode()
        assert page == (folder / href).read_text()  # the page the static files hold
        try:
            urllib.request.urlopen(url + "cells/nope.html", timeout=60)
            raise AssertionError("a missing page must be a 404")
        except urllib.error.HTTPError as error:
            assert error.code == 404
    finally:
        server.terminate()
        server.wait(timeout=30)
