"""``ctxbench generate``: regenerate the bundled transcripts, or check they match the generator."""

from __future__ import annotations

import argparse
import gzip
import tempfile
import time
from pathlib import Path

from ctxbench.cli import describe
from ctxbench.data import BUNDLED
from ctxbench.datagen.generate import DEFAULT_SEED, write_datasets


def compare_dirs(expected: Path, actual: Path) -> list[str]:
    """Names of files in ``expected`` that are missing from or differ in ``actual``."""
    bad: list[str] = []
    for path in sorted(expected.iterdir()):
        other = actual / path.name
        if not other.is_file():
            bad.append(f"{other}: missing")
        elif other.read_bytes() != path.read_bytes():
            bad.append(f"{other}: differs from the generator's output")
    return bad


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ctxbench generate", description=describe(__doc__))
    parser.add_argument(
        "--out", default=str(BUNDLED), help="folder to write (default: the bundled data, ctxbench/data/bundled)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"base seed (default: {DEFAULT_SEED})")
    parser.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare with --out")
    args = parser.parse_args(argv)
    out = Path(args.out)
    start = time.perf_counter()
    if args.check:
        with tempfile.TemporaryDirectory(prefix="ctxbench-gen-") as tmp:
            write_datasets(tmp, args.seed)
            bad = compare_dirs(Path(tmp), out)
        for line in bad:
            print(f"ctxbench generate --check: {line}")
        if bad:
            print(f"{len(bad)} file(s) out of date; run `ctxbench generate --out {out}` and commit them")
            return 1
        print(f"{out}: all files match the generator (seed {args.seed}, {time.perf_counter() - start:.1f}s)")
        return 0
    paths = write_datasets(out, args.seed)
    raw = sum(p.stat().st_size for p in paths)
    packed = sum(len(gzip.compress(p.read_bytes(), mtime=0)) for p in paths)
    for p in paths:
        print(p)
    print(f"{len(paths)} files, {raw / 1e6:.1f} MB raw, {packed / 1e6:.1f} MB gzip, {time.perf_counter() - start:.1f}s")
    return 0
