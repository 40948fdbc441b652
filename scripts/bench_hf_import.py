"""Peak memory of ``ctxbench import`` on a parquet dataset larger than the memory it may use (issue 13.4).

Builds a parquet dataset of OpenAI-style agent runs (``messages`` with tool calls and usage, plus the
scalar columns public datasets carry) until the file reaches ``--size-gb`` on disk, then runs
``ctxbench import FILE --out DIR`` in a child process under ``nice -n 10`` and reports the child's peak
RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss``; the builder runs in this process, which is not a
child), wall time, rows/s and the output size. The target is a peak under 1 GB for a 2 GB file.

Message texts are slices of a large random-word corpus at random offsets, so parquet's compression
sees text about as compressible as real logs, not repeated blocks.

    nice -n 10 python scripts/bench_hf_import.py                  # 2 GB in /tmp/ctxbench-hf-bench
    nice -n 10 python scripts/bench_hf_import.py --size-gb 0.2    # a quick run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
WORDS = (  # noqa: SIM905
    "the a to of and in is for on with file error test def return import self value path line function "
    "class assert none true false raise print config model token context window call tool result "
    "observation action python pytest traceback module object string list dict index key request "
    "response status django astropy sympy numpy array shape dtype parse build install run check update "
    "commit diff patch repo branch issue"
).split()


def corpus(chars: int, rng: random.Random) -> str:
    """Random words with identifiers and numbers mixed in: compresses like text, not like a repeated block."""
    parts: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        if rng.random() < 0.15:
            word = f"{word}_{rng.randrange(10**6)}"
        if rng.random() < 0.05:
            word += "\n"
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)


def make_row(i: int, text: str, rng: random.Random) -> dict:
    def piece(low: int, high: int) -> str:
        n = rng.randint(low, high)
        start = rng.randrange(len(text) - n)
        return text[start : start + n]

    messages = [
        {"role": "system", "content": piece(2_000, 6_000), "tool_calls": None, "tool_call_id": None, "usage": None},
        {"role": "user", "content": piece(500, 3_000), "tool_calls": None, "tool_call_id": None, "usage": None},
    ]
    prompt = 2_000
    for step in range(rng.randint(10, 50)):
        call_id = f"call_{i}_{step}"
        prompt += rng.randint(300, 3_000)
        messages.append(
            {
                "role": "assistant",
                "content": piece(50, 800),
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": piece(20, 200)}}
                ],
                "tool_call_id": None,
                "usage": {"prompt_tokens": prompt, "completion_tokens": rng.randint(20, 400)},
            }
        )
        messages.append(
            {"role": "tool", "content": piece(100, 12_000), "tool_calls": None, "tool_call_id": call_id, "usage": None}
        )
    return {
        "instance_id": f"bench__repo-{i}",
        "model": "gpt-4o",
        "resolved": i % 3 == 0,
        "messages": messages,
        "git_patch": piece(200, 3_000),
    }


def build(path: Path, size_bytes: int, rows_per_group: int, seed: int) -> tuple[int, float]:
    rng = random.Random(seed)
    text = corpus(64 * 1024 * 1024, rng)
    started = time.perf_counter()
    rows = 0
    writer: pq.ParquetWriter | None = None
    try:
        while not path.exists() or path.stat().st_size < size_bytes:
            batch = [make_row(rows + k, text, rng) for k in range(rows_per_group)]
            table = pa.Table.from_pylist(batch)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="snappy")
            writer.write_table(table)
            rows += len(batch)
            del batch, table
            print(f"  built {rows} rows, {path.stat().st_size / 1e9:.2f} GB", file=sys.stderr, end="\r")
    finally:
        if writer is not None:
            writer.close()
    print(file=sys.stderr)
    return rows, time.perf_counter() - started


def sample_rss(child: subprocess.Popen, every: float = 0.5) -> list[float]:
    """The child's RSS (MB) every ``every`` seconds until it exits (nice wraps python: follow its exec)."""
    samples: list[float] = []
    status = Path(f"/proc/{child.pid}/status")
    while child.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    samples.append(int(line.split()[1]) / 1024)
        except OSError:
            pass
        time.sleep(every)
    return samples


def quarter_peaks(samples: list[float]) -> list[float]:
    if len(samples) < 4:
        return [round(max(samples, default=0.0), 1)]
    size = len(samples) / 4
    return [round(max(samples[int(q * size) : int((q + 1) * size)]), 1) for q in range(4)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=2.0, help="parquet file size to build (default 2.0)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ctxbench-hf-bench"), help="work directory")
    parser.add_argument("--rows-per-group", type=int, default=256, help="rows per parquet row group")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--keep", action="store_true", help="keep the dataset and the output")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    source = args.dir / f"bench-{args.size_gb:g}gb.parquet"
    out = args.dir / "out"
    if not source.exists() or source.stat().st_size < args.size_gb * 1e9:
        source.unlink(missing_ok=True)
        rows, build_s = build(source, int(args.size_gb * 1e9), args.rows_per_group, args.seed)
        print(f"built {source}: {rows} rows, {source.stat().st_size / 1e9:.2f} GB in {build_s:.0f} s")
    meta = pq.ParquetFile(source).metadata
    uncompressed = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    command = ["nice", "-n", "10", sys.executable, "-m", "ctxbench.cli", "import", str(source), "--out", str(out)]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr, text=True)
        samples = sample_rss(child)
        stdout.seek(0)
        stderr.seek(0)
        result = subprocess.CompletedProcess(command, child.returncode, stdout.read(), stderr.read())
    wall = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: kilobytes
    output_bytes = sum(f.stat().st_size for f in out.glob("*.jsonl")) if out.exists() else 0
    report = {
        "parquet_gb": round(source.stat().st_size / 1e9, 3),
        "parquet_uncompressed_gb": round(uncompressed / 1e9, 3),
        "rows": meta.num_rows,
        "row_groups": meta.num_row_groups,
        "import_exit_code": result.returncode,
        "import_seconds": round(wall, 1),
        "rows_per_second": round(meta.num_rows / wall, 1),
        "peak_rss_mb": round(peak_mb, 1),
        # Max RSS sampled in each quarter of the run: flat when memory does not grow with the rows read.
        "rss_mb_by_quarter": quarter_peaks(samples),
        "output_gb": round(output_bytes / 1e9, 3),
        "target_peak_mb": 1024,
        "within_target": peak_mb < 1024,
    }
    print(result.stdout.strip())
    if result.returncode:
        print(result.stderr.strip()[-2000:], file=sys.stderr)
    print(json.dumps(report, indent=2))
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
        source.unlink(missing_ok=True)
    return 0 if result.returncode == 0 and report["within_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
