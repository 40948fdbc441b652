"""Replay fidelity: how close the replayed prompt is to the prompt the provider counted.

Transcripts that carry provider usage are ground truth. For every call whose assistant message
has ``usage.prompt_tokens``, the full history before it (no compaction, as ``none`` replays it)
is counted with a real tokenizer (by default the provider's own tokenizer family) and compared
with the reported count. The tool schemas a transcript recorded (``metadata["tools"]``) are counted
in every request (``tool_schema_tokens``), they and the messages as the agent rendered them
(``metadata["tools_rendering"]``: OpenHands' mock function calling). What the transcript cannot
hold (unrecorded tool schemas, a system prompt it does not log, the provider's framing) is a
per-request constant: it is fitted on half of a source's calls (the median difference, on every
other call) and scored on the other half.

Condensation events an importer recorded (``metadata["condensations"]``: the messages the agent
forgot from message ``at`` on, and the summary it sent instead) are applied. Reasoning parts
(``metadata["reasoning"]``) are counted the way the provider resends them: the transcript's
``metadata["reasoning_resent"]`` says ``tool_loop`` (the assistant turns since the last user message
resend theirs: Anthropic, DeepSeek thinking mode, OpenAI reasoning items), ``all`` or ``none``;
``measure`` can override it to let the numbers decide.

Python API: :func:`measure` -> :class:`Fidelity` (``fidelity_rows``, ``outlier_rows``),
:func:`estimator_rows`, :func:`write_report`, :func:`file_median_ratio`.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ctxbench.atomic import write_csv_atomic
from ctxbench.calibration.cache_fidelity import (
    CALIBRATION_COLUMNS,
    calibrate_cache,
    run_overrides,
    write_cache_fidelity,
)
from ctxbench.calibration.cache_fidelity import COLUMNS as CACHE_COLUMNS
from ctxbench.calibration.sources import has_usage, reported_prompt, source_of
from ctxbench.errors import ConfigError
from ctxbench.tokens.counting import TokenCounter, tools_tokens
from ctxbench.tokens.estimators import (
    AnchoredEstimator,
    EmaEstimator,
    Estimator,
    ExactEstimator,
    FixedRatioEstimator,
)
from ctxbench.tokens.reasoning import reasoning_tokens
from ctxbench.tokens.tokenizers import Tokenizer, get_tokenizer, resolve_tokenizer_name
from ctxbench.transcripts.condensations import CondensationReplay
from ctxbench.transcripts.model import Message, Transcript

ReasoningPolicy = Literal["tool_loop", "all", "none"]
REASONING_POLICIES: tuple[str, ...] = ("tool_loop", "all", "none")
OUTLIER_RANGE = (0.8, 1.25)  # ratio after the overhead outside this: listed in fidelity_outliers.csv
IMPORT_WARN_RANGE = (0.9, 1.1)  # ``ctxbench import`` warns when a file's median ratio is outside this
STRATEGY_TOKENIZER = "cl100k_base"  # what DB-GPT counts every model with
# Model families whose own tokenizer ctxbench does not ship: the closest one it does (named in
# every row, so the approximation is visible). Llama 4 has its own 200k vocabulary.
FAMILY_APPROXIMATIONS = (("llama-4", "llama3"), ("llama4", "llama3"), ("claude", "claude-legacy"))


def provider_tokenizer(model: str | None) -> str | None:
    """The tokenizer of a model's family (or its closest shipped relative), None if unknown."""
    if not model:
        return None
    try:
        return resolve_tokenizer_name(model)
    except ConfigError:
        low = model.lower()
        return next((tok for key, tok in FAMILY_APPROXIMATIONS if key in low), None)


@dataclass
class FidelityCall:
    """One call with reported usage: the replayed prompt's count against the provider's."""

    source: str
    model: str
    tokenizer: str
    transcript: str
    call: int
    message_index: int
    counted: int
    reported: int
    reasoning: int  # reasoning tokens included in ``counted``
    tools: int  # the recorded tool schemas' tokens included in ``counted``
    largest: tuple[int, str, int, str]  # (message index, role, tokens, first characters) in the prompt

    @property
    def ratio(self) -> float:
        return self.counted / self.reported


def _preview(message: Message, n: int = 80) -> str:
    text = message.content or " ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
    return " ".join(text.split())[:n]


def _reasoning_policy(transcript: Transcript, override: str | None) -> str:
    policy = override or transcript.metadata.get("reasoning_resent") or "tool_loop"
    if policy not in REASONING_POLICIES:
        raise ConfigError(f"unknown reasoning policy {policy!r} (known: {', '.join(REASONING_POLICIES)})")
    return policy


def _measure_one(transcript: Transcript, tok: Tokenizer, reasoning: str | None) -> list[FidelityCall]:
    counter = TokenCounter(tok).for_transcript(transcript)  # the messages as the agent sent them
    policy = _reasoning_policy(transcript, reasoning)
    source, model = source_of(transcript)
    out: list[FidelityCall] = []
    tools = tools_tokens(tok, transcript)  # sent with every request, where the source recorded them
    total = tok.per_request + tools
    reasoning_all = reasoning_loop = 0  # reasoning tokens in the prompt: all of it, since the last user message
    largest: tuple[int, str, int, str] = (-1, "", 0, "")
    call = 0
    condensations = CondensationReplay(transcript)  # the agent's own (OpenHands), applied as they happened
    held: list[Message] = []  # the history the agent holds, when it condensed
    for i, message in enumerate(transcript.messages):
        if condensations and condensations.advance(i):
            held, change = condensations.view_counted(held, counter.sizes)
            total += change
        if message.role == "assistant":
            reported = reported_prompt(message)
            if reported:
                extra = {"tool_loop": reasoning_loop, "all": reasoning_all, "none": 0}[policy]
                out.append(
                    FidelityCall(
                        source, model, tok.name, transcript.id, call, i, total + extra, reported, extra, tools, largest
                    )
                )
            call += 1
        tokens = counter.message(message)
        total += tokens
        if condensations.pending:
            held.append(message)
        if tokens > largest[2]:
            largest = (i, message.role, tokens, _preview(message))
        if message.role == "user":
            reasoning_loop = 0
        n = reasoning_tokens(message, tok)
        reasoning_all += n
        reasoning_loop += n
    return out


@dataclass
class Fidelity:
    """Every measured call, and the overhead fitted per (source, model, tokenizer)."""

    calls: list[FidelityCall] = field(default_factory=list)
    overheads: dict[tuple[str, str, str], int] = field(default_factory=dict)
    transcripts: int = 0
    skipped: list[str] = field(default_factory=list)  # transcripts with usage but no known tokenizer

    def groups(self) -> dict[tuple[str, str, str], list[FidelityCall]]:
        grouped: dict[tuple[str, str, str], list[FidelityCall]] = defaultdict(list)
        for c in self.calls:
            grouped[(c.source, c.model, c.tokenizer)].append(c)
        return dict(grouped)

    def fidelity_rows(self) -> list[dict[str, Any]]:
        """One row per (source, model, tokenizer); mape columns in %."""
        rows = []
        for (source, model, tokenizer), calls in sorted(self.groups().items()):
            ratios = sorted(c.ratio for c in calls)
            fit, score = calls[0::2], calls[1::2]
            overhead = self.overheads[(source, model, tokenizer)]
            rows.append(
                {
                    "source": source,
                    "model": model,
                    "tokenizer": tokenizer,
                    "calls": len(calls),
                    "median_ratio": statistics.median(ratios),
                    "p05_ratio": _percentile(ratios, 0.05),
                    "p95_ratio": _percentile(ratios, 0.95),
                    "mape": 100 * statistics.fmean(abs(r - 1) for r in ratios),
                    "tool_schema_tokens": round(statistics.median(c.tools for c in calls)),
                    "fitted_overhead_tokens": overhead,
                    "fit_calls": len(fit),
                    "scored_calls": len(score),
                    "mape_after_overhead": (
                        100 * statistics.fmean(abs((c.counted + overhead) / c.reported - 1) for c in score)
                        if score
                        else None
                    ),
                }
            )
        return rows

    def outlier_rows(self, low: float = OUTLIER_RANGE[0], high: float = OUTLIER_RANGE[1]) -> list[dict[str, Any]]:
        """Calls whose ratio after the overhead is outside [low, high], with the prompt's largest
        message named when it is big enough to explain the gap (at least half of it)."""
        rows = []
        for key, calls in sorted(self.groups().items()):
            overhead = self.overheads[key]
            for c in calls:
                after = (c.counted + overhead) / c.reported
                if low <= after <= high:
                    continue
                index, role, tokens, preview = c.largest
                gap = abs(c.counted + overhead - c.reported)
                dominant = tokens >= gap / 2 and index >= 0
                rows.append(
                    {
                        "source": c.source,
                        "model": c.model,
                        "tokenizer": c.tokenizer,
                        "transcript": c.transcript,
                        "call": c.call,
                        "counted": c.counted,
                        "overhead": overhead,
                        "reported": c.reported,
                        "ratio_after_overhead": after,
                        "dominant_message_index": index if dominant else None,
                        "dominant_role": role if dominant else None,
                        "dominant_tokens": tokens if dominant else None,
                        "dominant_preview": preview if dominant else None,
                    }
                )
        return rows


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not sorted_values:
        return math.nan
    return sorted_values[max(1, math.ceil(q * len(sorted_values))) - 1]


def _fit_overhead(calls: Sequence[FidelityCall]) -> int:
    """The per-request constant: the median gap over every other call (the rest are scored)."""
    fit = calls[0::2]
    return round(statistics.median(c.reported - c.counted for c in fit)) if fit else 0


def measure(
    transcripts: Iterable[Transcript], tokenizers: Sequence[str] = (), reasoning: str | None = None
) -> Fidelity:
    """Count every call with reported usage with ``tokenizers`` (default: each transcript's provider
    family) and fit the per-request overhead per (source, model, tokenizer)."""
    result = Fidelity()
    for transcript in transcripts:
        if not has_usage(transcript):
            continue
        result.transcripts += 1
        names = list(tokenizers) or [n for n in [provider_tokenizer(source_of(transcript)[1])] if n]
        if not names:
            result.skipped.append(transcript.id)
            continue
        for name in names:
            result.calls += _measure_one(transcript, get_tokenizer(name), reasoning)
    for key, calls in result.groups().items():
        result.overheads[key] = _fit_overhead(calls)
    return result


def file_median_ratio(transcripts: Sequence[Transcript]) -> tuple[float, str] | None:
    """(median replayed/reported ratio, tokenizer) over a file's calls with usage, or None."""
    fidelity = measure(transcripts)
    if not fidelity.calls:
        return None
    tokenizers = sorted({c.tokenizer for c in fidelity.calls})
    return statistics.median(c.ratio for c in fidelity.calls), "+".join(tokenizers)


def import_ratio_note(place: object, transcripts: Sequence[Transcript], scope: str = "") -> str:
    """`` median_ratio=R (tokenizer[, scope])`` for an ``ctxbench import`` ok line, and a warning on
    stderr when R is outside ``IMPORT_WARN_RANGE``; "" without usage. ``scope`` says what the median
    covers when it is a sample (e.g. "first 32 runs with usage")."""
    measured = file_median_ratio(transcripts) if transcripts else None
    if measured is None:
        return ""
    ratio, tokenizer = measured
    low, high = IMPORT_WARN_RANGE
    covers = f"{tokenizer}, {scope}" if scope else tokenizer
    if not low <= ratio <= high:
        print(
            f"warning: {place}: the replayed prompt is {ratio:.2f}x what the provider reported (median over "
            f"calls, {covers}); what the source does not hold (system prompt, tool schemas) or drops is missing: "
            "see `ctxbench calibrate --against provider`",
            file=sys.stderr,
        )
    return f" median_ratio={ratio:.3f} ({covers})"


# ---- estimators scored against the provider -----------------------------------------------------


def _estimators(provider_tok: str) -> list[tuple[str, Estimator]]:
    """(label, estimator): len/4, DB-GPT's cl100k count, the provider family's exact count, the EMA
    and the anchored estimator, each a fresh instance per transcript."""
    return [
        ("ratio", FixedRatioEstimator(4.0)),
        (f"exact:{STRATEGY_TOKENIZER}", ExactEstimator(STRATEGY_TOKENIZER)),
        ("exact:provider_family", ExactEstimator(provider_tok)),
        ("ema", EmaEstimator(tokenizer=provider_tok)),
        ("anchored", AnchoredEstimator(tokenizer=provider_tok)),
    ]


def estimator_errors(transcripts: Iterable[Transcript]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(source, estimator) -> [(estimate, reported)] over calls with usage. Each transcript is
    replayed as a growing context; calibrating estimators observe each reported count, as they
    would in an agent."""
    pairs: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for transcript in transcripts:
        if not has_usage(transcript):
            continue
        source, model = source_of(transcript)
        estimators = _estimators(provider_tokenizer(model) or STRATEGY_TOKENIZER)
        for _, est in estimators:
            est.start(transcript)
        working: list[Message] = []
        for message in transcript.messages:
            reported = reported_prompt(message) if message.role == "assistant" else None
            if reported:
                for label, est in estimators:
                    pairs[(source, label)].append((est.prompt(working), reported))
                for _, est in estimators:
                    est.observe(working, reported)
            working.append(message)
    return pairs


def estimator_rows(transcripts: Iterable[Transcript]) -> list[dict[str, Any]]:
    """estimator, calls, mape, bias, p95 absolute error (in %), over all sources, then per source."""
    pairs = estimator_errors(transcripts)
    merged: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for (_, est), values in pairs.items():
        merged[("all", est)] += values
    rows = []
    for (source, est), values in [*sorted(merged.items()), *sorted(pairs.items())]:
        rel = [(guess - reported) / reported for guess, reported in values]
        absolute = sorted(abs(r) for r in rel)
        rows.append(
            {
                "source": source,
                "estimator": est,
                "calls": len(values),
                "mape": 100 * statistics.fmean(absolute),
                "bias": 100 * statistics.fmean(rel),
                "p95_abs_error": 100 * _percentile(absolute, 0.95),
            }
        )
    return sorted(rows, key=lambda r: (r["source"] != "all", r["source"], r["mape"]))


# ---- output -------------------------------------------------------------------------------------


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def text_table(rows: list[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    if not rows:
        return "(no rows)"
    cols = list(columns or rows[0])
    cells = [[_fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[k]) for row in cells)) for k, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


FIDELITY_COLUMNS = (
    "source",
    "model",
    "tokenizer",
    "calls",
    "median_ratio",
    "p05_ratio",
    "p95_ratio",
    "mape",
    "tool_schema_tokens",
    "fitted_overhead_tokens",
    "fit_calls",
    "scored_calls",
    "mape_after_overhead",
)
OUTLIER_COLUMNS = (
    "source",
    "model",
    "tokenizer",
    "transcript",
    "call",
    "counted",
    "overhead",
    "reported",
    "ratio_after_overhead",
    "dominant_message_index",
    "dominant_role",
    "dominant_tokens",
    "dominant_preview",
)
ESTIMATOR_COLUMNS = ("source", "estimator", "calls", "mape", "bias", "p95_abs_error")


def write_report(
    transcripts: Sequence[Transcript], out_dir: Path, tokenizers: Sequence[str] = (), reasoning: str | None = None
) -> str:
    """Write provider_fidelity.csv, fidelity_outliers.csv, estimators_vs_provider.csv and the prompt
    cache's cache_fidelity.csv (``ctxbench.calibration.cache_fidelity``) into ``out_dir``; return the
    printed report."""
    fidelity = measure(transcripts, tokenizers, reasoning)
    rows, outliers = fidelity.fidelity_rows(), fidelity.outlier_rows()
    est_rows = estimator_rows(transcripts)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(out_dir / "provider_fidelity.csv", rows, FIDELITY_COLUMNS)
    write_csv_atomic(out_dir / "fidelity_outliers.csv", outliers, OUTLIER_COLUMNS)
    write_csv_atomic(out_dir / "estimators_vs_provider.csv", est_rows, ESTIMATOR_COLUMNS)
    parts = [
        f"# Replay fidelity: {fidelity.transcripts} transcripts with usage, {len(fidelity.calls)} calls counted",
        "ratio = replayed prompt tokens / provider-reported prompt tokens; mape in %; the overhead is fitted on",
        "every other call of a source and mape_after_overhead scored on the others",
        "",
        text_table(rows, FIDELITY_COLUMNS) if rows else "(no transcript carries per-call usage)",
        "",
        f"outliers (ratio after overhead outside {list(OUTLIER_RANGE)}): {len(outliers)}",
    ]
    if fidelity.skipped:
        parts.append(f"no known tokenizer for the model of: {', '.join(fidelity.skipped)} (use --tokenizer)")
    if est_rows:
        parts += ["", "## Estimators against the provider's reported prompt tokens (%)", text_table(est_rows)]
    cache_rows = write_cache_fidelity(transcripts, out_dir)
    if cache_rows:
        parts += [
            "",
            "## Prompt cache: simulated against reported (reads summed per session after its first call)",
            text_table(cache_rows, CACHE_COLUMNS),
        ]
    fitted = calibrate_cache(transcripts)
    if fitted:
        parts += [
            "",
            "## Prompt cache calibration: hit_rate fitted on every other call, hit shares on the others",
            text_table(fitted, CALIBRATION_COLUMNS),
            "use it: ctxbench run " + "; ctxbench run ".join(run_overrides(r) for r in fitted),
            f"(also in {out_dir}/cache_calibration.yaml)",
        ]
    parts += [
        "",
        f"written: {out_dir}/provider_fidelity.csv, fidelity_outliers.csv, estimators_vs_provider.csv, "
        "cache_fidelity.csv, cache_fidelity_sessions.csv, cache_calibration.csv, cache_calibration.yaml",
    ]
    return "\n".join(parts)
