"""five_layer's readings measured on real transcripts: the table in docs/strategies.md comes from here.

    .venv/bin/ctxbench import ../shared/transcripts --out /tmp/dev          # the dev set, once
    .venv/bin/python scripts/five_layer_real_runs.py /tmp/dev --out /tmp/five-real [--windows 12000,16000]

Runs `ctxbench run -m strategy=five_layer` once per reading (below) on gpt-4o with each context window, into
OUT/<reading>, then prints a Markdown table: one row per reading and window, over all transcripts and over the
long ones (every source but tau-bench's short sessions). "after a summary": calls in which strategy 4/5 ran, how
many of them the provider then accepted, and in how many tool results were cut after it (five_layer.fit). A rerun
reuses the cells already computed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

READINGS: dict[str, list[str]] = {
    # name: overrides of strategy.params
    "seed_names": ["compact_eligibility=by_name", "summary_tail=messages", "fit_tool_results=none"],
    "every_result": ["compact_eligibility=all", "summary_tail=messages", "fit_tool_results=none"],
    "by_action": ["compact_eligibility=by_action", "summary_tail=messages", "fit_tool_results=none"],
    "tail_in_tokens": ["summary_head=task", "fit_tool_results=none"],
    "task_summarised": ["fit_tool_results=none"],
    "default": [],
    "all_results": ["compact_eligibility=all"],
    "openclaw_cut": ["fit_tool_results=openclaw"],
    "system_outside": ["system_in_budget=false"],
}
DESCRIBED = {
    "seed_names": "strategy 2 by the seed's names, the summary keeps the messages the prune kept (before issue 26)",
    "every_result": "every tool result eligible (OpenClaw's guard), otherwise as `seed_names`",
    "by_action": "strategy 2 by what each call does, otherwise as `seed_names`",
    "tail_in_tokens": "the summary's tail sized in tokens, the task kept beside it, nothing cut after it",
    "task_summarised": "the summary's tail sized in tokens, the task summarised, nothing cut after it",
    "default": "the default: strategy 2 by what each call does, the summary's tail sized in tokens, the task "
    "summarised (only the system prompt kept beside it), tool results cut newest first if it still does not fit",
    "all_results": "the default with every tool result eligible for strategy 2 (OpenClaw's guard)",
    "openclaw_cut": "the default, tool results cut after the summary to OpenClaw's 0.3 of the window",
    "system_outside": "the default with the system prompt outside strategy 2's budget, as OpenClaw's guard measures",
}


def run(data: Path, out: Path, reading: str, windows: str) -> None:
    params = [f"strategy.params.{o}" for o in READINGS[reading]]
    cmd = [
        str(Path(sys.executable).with_name("ctxbench")),
        "run",
        "-m",
        "-q",
        "strategy=five_layer",
        "model=gpt-4o",
        f"model.context_window={windows}",
        f"dataset.paths=[{data}]",
        f"output.root={out}",
        f"output.name={reading}",
        *params,
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def cell_rows(root: Path) -> list[dict[str, object]]:
    rows = []
    for summary_path in sorted(root.glob("cells/**/summary.json")):
        cell = summary_path.parent
        summary = json.loads(summary_path.read_text())
        metrics, config = summary["metrics"], summary.get("config", {})
        window = summary["cell"].get("context_window") or (config.get("model") or {}).get("context_window")
        calls = [json.loads(line) for line in (cell / "calls.jsonl").read_text().splitlines() if line.strip()]
        events = (cell / "events.jsonl").read_text().splitlines()
        parsed = [json.loads(line) for line in events if line.strip()]
        summarised = {e["call"] for e in parsed if e.get("type") == "five_layer.summary"}
        fitted = {e["call"] for e in parsed if e.get("type") == "five_layer.fit"}
        accepted = {c["call"] for c in calls if c.get("accepted")}
        rows.append(
            {
                "window": window,
                "source": str(summary["cell"].get("source_format") or ""),
                "calls": len(calls),
                "overflow_errors": metrics["overflow_errors"],
                "failed_calls": metrics["failed_calls"],
                "retention": metrics.get("retention"),
                "summarised": len(summarised),
                "accepted_after": len(summarised & accepted),
                "cut_after": len(summarised & fitted),
            }
        )
    return rows


def table(out: Path, readings: list[str]) -> str:
    lines = [
        "| reading | window | transcripts | calls | overflow errors | failed calls | retention | calls with a summary "
        "| accepted after it | results cut after it |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for subset in ("all", "long"):
        for reading in readings:
            rows = cell_rows(out / reading)
            if subset == "long":
                rows = [r for r in rows if "tau" not in str(r["source"])]
            for window in sorted({r["window"] for r in rows}, key=lambda w: int(w or 0)):
                mine = [r for r in rows if r["window"] == window]
                kept = [float(r["retention"]) for r in mine if r["retention"] is not None]  # type: ignore[arg-type]
                summarised = sum(int(r["summarised"]) for r in mine)  # type: ignore[call-overload]
                accepted = sum(int(r["accepted_after"]) for r in mine)  # type: ignore[call-overload]
                cut = sum(int(r["cut_after"]) for r in mine)  # type: ignore[call-overload]
                share = f" ({100 * accepted / summarised:.0f}%)" if summarised else ""
                lines.append(
                    f"| {reading}{' (long runs)' if subset == 'long' else ''} | {int(window or 0):,} | {len(mine)} "
                    f"| {sum(int(r['calls']) for r in mine):,} "  # type: ignore[call-overload]
                    f"| {sum(int(r['overflow_errors']) for r in mine):,} "  # type: ignore[call-overload]
                    f"| {sum(int(r['failed_calls']) for r in mine):,} "  # type: ignore[call-overload]
                    f"| {100 * sum(kept) / len(kept) if kept else 0:.1f}% | {summarised:,} | {accepted:,}{share} "
                    f"| {cut:,} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a folder of imported transcripts (ctxbench import ... --out DIR)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--windows", default="12000,16000")
    parser.add_argument("--readings", default=",".join(READINGS))
    args = parser.parse_args()
    readings = args.readings.split(",")
    for reading in readings:
        run(args.data.resolve(), args.out.resolve(), reading, args.windows)
    print("\n".join(f"- `{r}`: {DESCRIBED[r]} ({' '.join(READINGS[r]) or 'no overrides'})" for r in readings))
    print()
    print(table(args.out.resolve(), readings))


if __name__ == "__main__":
    main()
