"""The HTML report in a real browser (headless Chromium, tests/browser.py), as a person reads it:
the answer first (the Pareto plot on the first screen, which strategy per model), nothing cut off
the right, every contents link leads somewhere, details collapsed, and every figure as the
printed table says it."""

import re
import subprocess

import pytest

from tests.browser import file_url
from tests.conftest import CTXBENCH, ROOT


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    run = [*CTXBENCH, "run", "-m", "strategy=none,dbgpt,sliding_window,observation_masking", f"output.root={out}"]
    run += ["dataset.include=[synth-sql_060k,synth-coding_090k,synth-research_130k]", "progress=false"]
    done = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    made = [*CTXBENCH, "report", str(out / "default"), "--out", str(out / "report"), "--no-progress"]
    printed = subprocess.run(made, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert printed.returncode == 0, printed.stderr
    return out / "report" / "report.html", printed.stdout


@pytest.mark.parametrize("width,height", [(1400, 900), (1920, 1080)])
def test_the_answer_is_on_the_first_screen_and_nothing_is_cut_off(browser, report, width, height):
    html, _ = report
    page = browser.page(width, height)
    page.open(file_url(html))
    plot = page.js("JSON.stringify(document.querySelector('#pareto img').getBoundingClientRect())")
    top, bottom = (float(re.search(rf'"{k}":([\d.]+)', plot).group(1)) for k in ("top", "bottom"))
    assert top < height / 4 and bottom <= height  # the first plot, whole, on the first screen
    assert page.js("document.querySelector('#pareto img').naturalWidth") > 0
    assert page.js("document.documentElement.scrollWidth") <= width
    assert page.js("document.getElementById('comparison-table').getBoundingClientRect().right") <= width
    answer = page.js("document.querySelector('#answer table').innerText")
    assert "most retention" in answer and "Pareto frontier" in answer
    page.close()


def test_contents_links_lead_somewhere_and_details_are_collapsed(browser, report):
    html, _ = report
    page = browser.page()
    page.open(file_url(html))
    targets = page.js("[...document.querySelectorAll('#toc a')].map(a => a.getAttribute('href').slice(1))")
    assert len(targets) >= 5
    assert page.js(f"{targets}.every(id => document.getElementById(id) !== null)")
    assert page.js("document.querySelectorAll('details').length") > 0
    assert page.js("[...document.querySelectorAll('details')].every(d => !d.open)")
    # Numbers formatted as in the comparison: no 19420042 or 410.786160 in the per-transcript table.
    cells = page.js("[...document.querySelectorAll('#per-transcript td')].map(td => td.textContent.trim())")
    assert cells and not [c for c in cells if re.fullmatch(r"\d{5,}(\.\d+)?|\d+\.\d{4,}", c)]
    page.close()


def test_every_figure_is_as_the_printed_table_says(browser, report):
    html, printed = report
    page = browser.page()
    page.open(file_url(html))
    rows = page.js(
        "[...document.querySelectorAll('#comparison-table tbody tr')].map(tr => "
        "[...tr.cells].map(td => td.childNodes[0].textContent.trim()))"
    )
    heads = page.js("[...document.querySelectorAll('#comparison-table th')].map(th => th.textContent)")
    column = heads.index("retention")
    shown = {r[0]: r[column].rstrip("%") for r in rows}
    lines = [line.split() for line in printed.splitlines()]
    header = next(line for line in lines if line and line[0] == "strategy")
    at = header.index("retention")  # "retention %" in the terminal: the value is the word under it
    for line in lines[lines.index(header) + 1 :]:
        if not line or line[0] not in {r[0].split(" ")[0] for r in rows}:
            break
        name = line[0] + (" (ref)" if line[1] == "(ref)" else "")
        values = [w for w in line if re.fullmatch(r"\d+\.\d", w)]
        assert shown[name] in values, (name, shown[name], line, at)
    page.close()
