"""Rewrite docs/extending.md's table of the shipped layers' parameters from their declarations
(what `ctxbench ls layer` prints for ctxbench's own layers); tests/test_params.py checks it is
current. Usage: python scripts/param_docs.py [--check]"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ctxbench.ls import listing, render

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"
BLOCK = re.compile(r"(<!-- generated: ctxbench ls layer.*?-->\n```text\n)(.*?)(\n```)", re.S)


def table() -> str:
    found = listing(["layer"])
    found["layer"] = [row for row in found["layer"] if row["origin"] == "ctxbench"]
    return render(found)


def main(argv: list[str]) -> int:
    text = DOC.read_text("utf-8")
    match = BLOCK.search(text)
    if match is None:
        print(f"{DOC}: no generated table (its marker comment is gone)")
        return 1
    if "--check" in argv:
        return 0 if match.group(2) == table() else 1
    DOC.write_text(text[: match.start(2)] + table() + text[match.end(2) :], "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
