"""The benchmark's tables (Markdown) and the verdict on the issue's targets."""

from __future__ import annotations

import statistics
from typing import Any

MIB = 1024 * 1024
RATIO_TARGET = 1.5  # replay within 1.5x the tokenizer floor (deterministic strategies, largest transcript)
EXPONENT_TARGET = 1.1
MEMORY_TARGET = 4.0  # peak growth under 4x the transcript's text size (on top of code + tokenizer)
SPEEDUP_TARGET = 1.8
MAIN_JOB_TARGET = 120.0


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def replay_table(rows: list[dict[str, Any]], exps: dict[str, dict[str, float | None]]) -> str:
    lines = [
        "| transcript | tokens | text MiB | measured | wall s | cpu s | x floor (wall) | x floor (cpu) "
        "| peak RSS MiB | growth / text | exponent (cpu) |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['transcript']} | {r['tokens']:,} | {r['text_bytes'] / MIB:.1f} | {r['name']} | {r['seconds']:.2f} "
            f"| {r['cpu_seconds']:.2f} | {r['ratio_wall']:.2f} | {r['ratio_cpu']:.2f} | {r['peak_rss_kib'] / 1024:.0f} "
            f"| {r['memory_growth_x_text']:.2f} | {_f(exps.get(r['name'], {}).get('cpu'))} |"
        )
    return "\n".join(lines)


def speedup(sweep: dict[str, Any]) -> float | None:
    times = sweep["times"]
    ones, twos = times.get(1) or times.get("1"), times.get(2) or times.get("2")
    if not ones or not twos:
        return None
    return statistics.median(ones) / statistics.median(twos)


def sweep_table(sweep: dict[str, Any]) -> str:
    lines = ["| n_jobs | cells | wall s (median) | cpu s (median) | cpu / wall |", "|---:|---:|---:|---:|---:|"]
    for n, times in sweep["times"].items():
        wall, cpu = statistics.median(times), statistics.median(sweep["cpu"][n])
        lines.append(f"| {n} | {sweep['cells'][n]} | {wall:.1f} | {cpu:.1f} | {cpu / wall:.2f} |")
    return "\n".join(lines)


def verdicts(
    rows: list[dict[str, Any]],
    exps: dict[str, dict[str, float | None]],
    largest: str | None,
    sweep: dict[str, Any] | None,
    main: dict[str, Any] | None,
) -> list[tuple[str, str, bool | None]]:
    """(target, what was measured, met?) for each of the issue's targets; None: not measured."""
    out: list[tuple[str, str, bool | None]] = []
    replays = [r for r in rows if r["kind"] == "replay"]
    for r in (r for r in replays if r["transcript"] == largest):
        out.append(
            (
                f"{r['name']} within {RATIO_TARGET}x the floor on {largest}",
                f"x{r['ratio_cpu']:.2f} cpu, x{r['ratio_wall']:.2f} wall",
                r["ratio_cpu"] <= RATIO_TARGET,
            )
        )
    for name in dict.fromkeys(r["name"] for r in replays):
        exp = exps.get(name, {}).get("cpu")
        out.append((f"{name} time exponent <= {EXPONENT_TARGET}", _f(exp), None if exp is None else exp <= 1.1))
    worst = max(replays, key=lambda r: r["memory_growth_x_text"], default=None)
    if worst is not None:
        out.append(
            (
                f"peak memory under {MEMORY_TARGET:g}x text + tokenizer",
                f"worst {worst['name']} on {worst['transcript']}: {worst['memory_growth_x_text']:.2f}x text "
                f"over a {worst['rss_ready_kib'] / 1024:.0f} MiB baseline",
                worst["memory_growth_x_text"] <= MEMORY_TARGET,
            )
        )
    if sweep is not None:
        s = speedup(sweep)
        out.append((f"2 workers >= {SPEEDUP_TARGET}x faster than 1", _f(s), None if s is None else s >= 1.8))
    if main is not None:
        out.append(
            (
                f"main job under {MAIN_JOB_TARGET:.0f} s",
                f"{main['seconds']:.1f} s ({main['cells']} cells)",
                main["seconds"] < 120,
            )
        )
    return out


def markdown(result: dict[str, Any]) -> str:
    machine = result["machine"]
    parts = [
        "# ctxbench bench",
        "",
        f"Machine: {machine['cpus']} cores, {machine['memory_gib']:.0f} GiB, Python {machine['python']}, "
        f"{machine['platform']}; load average at start {machine['load_average'][0]:.2f}. "
        f"Model {result['model']} (tokenizer {result['tokenizer']}); {result['repeats']} repeats, medians; "
        "ratios are to the tokenizer floor measured in the same round.",
        "",
        "## Transcripts",
        "",
        "| name | tokens | messages | calls | text MiB | source |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for t in result["transcripts"]:
        parts.append(
            f"| {t['name']} | {t['tokens']:,} | {t['messages']} | {t['calls']} | {t['text_bytes'] / MIB:.2f} "
            f"| {t['source']} |"
        )
    parts += [*(f"\n{note}" for note in result.get("notes", []))]
    parts += ["", "## Replay against the tokenizer floor", "", replay_table(result["rows"], result["exponents"])]
    if result.get("sweep"):
        sweep = result["sweep"]
        parts += [
            "",
            f"## Sweep: {len(sweep['strategies'])} cells on {sweep['transcript']} with the joblib launcher",
            "",
            sweep_table(sweep),
            "",
            f"Speedup 2 vs 1 worker: {_f(speedup(sweep))}; 1-minute load average during the sweep: "
            + ", ".join(f"{x:.1f}" for x in sweep["load_average_1m"]),
        ]
    if result.get("main_job"):
        main = result["main_job"]
        parts += ["", f"Main job `{main['command']}`: {main['seconds']:.1f} s for {main['cells']} cells."]
    parts += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for target, measured, met in result["verdicts"]:
        parts.append(f"| {target} | {measured} | {'-' if met is None else ('yes' if met else 'NO')} |")
    return "\n".join(parts) + "\n"
