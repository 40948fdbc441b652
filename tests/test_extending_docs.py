"""docs/extending.md runs: every block marked `# file:` is written into a folder (a plugin
package with its entry points, and a user's configs/), then the commands the page shows are run
against it: `ctxbench ls`, `ctxbench import --format turns`, `ctxbench run` with the new layer,
strategy and judge."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ctxbench.transcripts import write_transcripts
from tests.conftest import CTXBENCH, ROOT
from tests.helpers import coding_transcript

DOC = ROOT / "docs" / "extending.md"
BLOCK = re.compile(r"```\w*\n# file: (\S+)\n(.*?)```", re.S)


def _write_blocks(folder: Path) -> list[str]:
    written = []
    for name, body in BLOCK.findall(DOC.read_text("utf-8")):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        written.append(name)
    (folder / "my_ext" / "__init__.py").write_text("")
    (folder / "my_ext-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: my-ext\nVersion: 0.1\n")
    return written


def test_the_worked_examples_of_extending_md_run(tmp_path):
    written = _write_blocks(tmp_path)
    assert {"my_ext/layers.py", "my_ext/strategies.py", "my_ext/importers.py", "my_ext/judges.py"} <= set(written)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path[1:], str(ROOT)])}

    def ctxbench(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=tmp_path, env=env)
        assert done.returncode == 0, f"ctxbench {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    listed = ctxbench("ls").stdout
    entries = re.sub(r"\n {20,}", " ", listed)  # a description wrapped under itself: one line per entry
    for name in ("keep_last", "halve_on_overflow", "turns", "exact_case"):
        assert re.search(rf"^  {name} .*\[from my-ext\]$", entries, re.M), name
    assert "keep: int = 20, in [1, inf) -- the newest messages kept" in listed

    # The plugin's declared range is checked as a shipped layer's is: one line, before any work.
    bad = subprocess.run(
        [*CTXBENCH, "run", "strategy=keep_last", "strategy.proactive.0.layer.keep=0"],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert "strategy.proactive.0.layer.keep=0: out of range, allowed [1, inf)" in bad.stderr.splitlines()[-1]

    chat = {"id": "chat", "turns": [{"who": "system", "say": "You help."}, {"who": "user", "say": "Port?"}]}
    chat["turns"] += [
        {"who": "bot", "say": "It is 47213."},
        {"who": "user", "say": "Thanks"},
        {"who": "bot", "say": "ok"},
    ]
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    ctxbench("import", "chat.json", "--format", "turns", "--out", "data")
    imported = [json.loads(line) for line in (tmp_path / "data" / "chat.jsonl").read_text().splitlines()]
    assert [m["role"] for m in imported[0]["messages"]] == ["system", "user", "assistant", "user", "assistant"]

    write_transcripts(tmp_path / "data" / "long.jsonl", [coding_transcript(rounds=30, tid="long")])
    ctxbench(
        "run", "-m", "strategy=keep_last,halve", "dataset.paths=[data]", "judge.kind=exact_case",
        "model=gpt-4-32k", "model.context_window=3000", "model.reserved_output_tokens=500",
    )  # fmt: skip
    cells = {
        (s["cell"]["strategy"], s["cell"]["transcript"]): s
        for s in (json.loads(p.read_text()) for p in (tmp_path / "results").rglob("summary.json"))
    }
    assert set(cells) == {("keep_last", "chat"), ("keep_last", "long"), ("halve", "chat"), ("halve", "long")}
    keep_last, halve = cells[("keep_last", "long")], cells[("halve", "long")]
    assert keep_last["metrics"]["compacted_calls"] > 0  # the layer fired
    assert halve["metrics"]["retries"] > 0 and halve["metrics"]["overflow_errors"] > 0  # the strategy reacted
    assert keep_last["cell"]["judge"] == "exact_case" and keep_last["metrics"]["probes"] >= 1
