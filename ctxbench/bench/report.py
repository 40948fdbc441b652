"""The benchmark's tables (Markdown) and the verdict on the issue's targets."""

from __future__ import annotations

import statistics
from typing import Any

MIB = 1024 * 1024
RATIO_TARGET = 1.5  # replay within 1.5x the tokenizer floor (deterministic strategies, largest transcript)
EXPONENT_TARGET = 1.1
MEMORY_TARGET = 4.0  # peak RSS growth over the RSS just before loading (code + tokenizer), x UTF-8 text bytes
SPEEDUP_TARGET = 1.8
MAIN_JOB_TARGET = 120.0
CELL_RATIO_TARGET = 1.5  # whole cells within 1.5x the floor (generated sizes) and 1.5x `none` (the main job)
REPLAY_250K_TARGET = 1.3  # the replay alone within 1.3x the floor at 250k
MAIN_JOB_DATA = "main job"  # the bundled data measured as one set (ctxbench.bench.cli)


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


MEMORY_NOTE = (
    "Memory: *RSS before load* is the worker's RSS just before it reads the transcript: the interpreter, "
    "the imports, the tokenizer and the built strategy, after a warm-up run of the same kind on a small "
    "generated transcript (lazy imports and one-time caches happen there), garbage collected and with free "
    "heap returned to the system (malloc_trim). The peak RSS (VmHWM) is reset to it through "
    "/proc/self/clear_refs, so *peak RSS* is the peak of loading and replaying this transcript alone. "
    "*growth / text* = (peak RSS - RSS before load) / UTF-8 bytes of the message text; the target is 4x. "
    "*load* and *replay* split it: the peak while reading the JSONL, and the peak during the replay, which "
    "starts from the RSS after loading (the transcript itself, and what the allocator kept of the freed "
    "parse buffers). Worst of the repeats."
)


def replay_table(rows: list[dict[str, Any]], exps: dict[str, dict[str, float | None]]) -> str:
    lines = [
        "| transcript | tokens | text MiB | measured | wall s | cpu s | x floor (wall) | x floor (cpu) "
        "| RSS before load MiB | peak RSS MiB | growth / text | load / text | replay / text | exponent (cpu) |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        unreset = "" if r.get("peak_reset", True) else " (peak not reset)"
        lines.append(
            f"| {r['transcript']} | {r['tokens']:,} | {r['text_bytes'] / MIB:.1f} | {r['name']} | {r['seconds']:.2f} "
            f"| {r['cpu_seconds']:.2f} | {r['ratio_wall']:.2f} | {r['ratio_cpu']:.2f} "
            f"| {r['rss_ready_kib'] / 1024:.1f} | {r['peak_rss_kib'] / 1024:.1f} "
            f"| {r['memory_growth_x_text']:.2f}{unreset} "
            f"| {_f(r.get('load_growth_x_text'))} | {_f(r.get('replay_growth_x_text'))} "
            f"| {_f(exps.get(r['name'], {}).get('cpu'))} |"
        )
    return "\n".join(lines)


CELLS_NOTE = (
    "*cells*: each transcript's whole cell as `ctxbench run` computes it (`ctxbench.cells.run_cell`: the "
    "strategy and probes built, the replay with the deterministic judge at every checkpoint and the context "
    "recorder, the cell's files published), timed in a fresh process after a warm-up cell; *replay*: the "
    "replay alone. The process start, Hydra and the tokenizer load are in neither (the same for every "
    "strategy; the main job's wall time below has them). *x floor*: CPU against the tokenizer floor of the "
    "same round; *x none*: against `none` of the same kind and round. Medians of the rounds."
)


def cells_table(rows: list[dict[str, Any]]) -> str:
    """Per transcript and strategy: the replay alone beside the whole cells."""
    lines = [
        "| transcript | strategy | replay cpu s | cells cpu s | cells wall s | replay x floor | cells x floor "
        "| replay x none | cells x none |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    replays = {(r["transcript"], r["strategy"]): r for r in rows if r["kind"] == "replay"}
    for c in (r for r in rows if r["kind"] == "cell"):
        r = replays.get((c["transcript"], c["strategy"])) or {}
        lines.append(
            f"| {c['transcript']} | {c['strategy']} | {_f(r.get('cpu_seconds'))} | {c['cpu_seconds']:.2f} "
            f"| {c['seconds']:.2f} | {_f(r.get('ratio_cpu'))} | {c['ratio_cpu']:.2f} "
            f"| {_f(r.get('ratio_none_cpu'))} | {_f(c.get('ratio_none_cpu'))} |"
        )
    return "\n".join(lines)


def cell_verdicts(rows: list[dict[str, Any]], synthetic: set[str]) -> list[tuple[str, str, bool | None]]:
    """The whole-cell targets: the main job's cells within 1.5x `none`'s, cells within 1.5x the
    floor on every generated size, the replay alone within 1.3x the floor at 250k."""
    out: list[tuple[str, str, bool | None]] = []
    for c in rows:
        if c["kind"] == "cell" and c["transcript"] == MAIN_JOB_DATA and c["strategy"] != "none":
            ratio = c.get("ratio_none_cpu")
            out.append(
                (
                    f"{c['strategy']}: main job's cells within {CELL_RATIO_TARGET}x none's",
                    f"x{_f(ratio)} cpu ({c['cpu_seconds']:.2f} s)",
                    None if ratio is None else ratio <= CELL_RATIO_TARGET,
                )
            )
    for c in rows:
        if c["kind"] == "cell" and c["transcript"] in synthetic:
            out.append(
                (
                    f"{c['strategy']}: cells within {CELL_RATIO_TARGET}x the floor on {c['transcript']}",
                    f"x{c['ratio_cpu']:.2f} cpu",
                    c["ratio_cpu"] <= CELL_RATIO_TARGET,
                )
            )
    for r in rows:
        if r["kind"] == "replay" and r["transcript"] == "250k":
            out.append(
                (
                    f"{r['strategy']}: replay within {REPLAY_250K_TARGET}x the floor on 250k",
                    f"x{r['ratio_cpu']:.2f} cpu",
                    r["ratio_cpu"] <= REPLAY_250K_TARGET,
                )
            )
    return out


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
    synthetic: set[str] | None = None,
) -> list[tuple[str, str, bool | None]]:
    """(target, what was measured, met?) for each of the issue's targets; None: not measured."""
    out = cell_verdicts(rows, synthetic or set())
    replays = [r for r in rows if r["kind"] == "replay" and r["transcript"] != MAIN_JOB_DATA]
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
        per_transcript: dict[str, dict[str, Any]] = {}
        for r in replays:
            seen = per_transcript.get(r["transcript"])
            if seen is None or r["memory_growth_x_text"] > seen["memory_growth_x_text"]:
                per_transcript[r["transcript"]] = r
        out.append(
            (
                f"peak memory under {MEMORY_TARGET:g}x text + tokenizer",
                f"worst {worst['name']} on {worst['transcript']}: peak RSS "
                f"{(worst['peak_rss_kib'] - worst['rss_ready_kib']) / 1024:.1f} MiB over the "
                f"{worst['rss_ready_kib'] / 1024:.1f} MiB RSS just before loading (imports, tokenizer, strategy, "
                f"warm-up), {worst['memory_growth_x_text']:.2f}x the {worst['text_bytes'] / MIB:.2f} MiB of text"
                + ("" if worst.get("peak_reset", True) else " (peak not reset: it may date from start-up)")
                + "; worst per transcript: "
                + ", ".join(
                    f"{name} {r['memory_growth_x_text']:.2f}x ({r['name']})" for name, r in per_transcript.items()
                ),
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
    if any(r["kind"] == "cell" for r in result["rows"]):
        parts += ["", "## Whole cells: what a user waits for", "", cells_table(result["rows"]), "", CELLS_NOTE]
    replays = [r for r in result["rows"] if r["kind"] != "cell"]
    parts += ["", "## Replay against the tokenizer floor", "", replay_table(replays, result["exponents"])]
    parts += ["", MEMORY_NOTE]
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
