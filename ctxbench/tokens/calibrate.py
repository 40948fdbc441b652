"""``ctxbench calibrate``: how many chars a token is, per tokenizer and content kind, and how
wrong each estimator is against the real count over the calls of real transcripts.

With ``--against provider`` it measures replay fidelity instead: the replayed prompt against the
provider-reported prompt tokens of every call that carries usage (``ctxbench.calibration.provider_fidelity``).

For every transcript and tokenizer the prompt of each call (all messages before an
assistant message) is counted exactly; estimators guess the same prompt; the EMA learns
from the exact count after each call, as it would from the provider's reported usage.
Each message is tokenized once per tokenizer (cached on the message) and prompts are
prefix sums, so the cost is O(total text).
"""

from __future__ import annotations

import argparse
import io
import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ctxbench.atomic import write_csv_atomic
from ctxbench.cli import describe
from ctxbench.data import BUNDLED
from ctxbench.errors import ConfigError, InputError
from ctxbench.tokens.content_kinds import KINDS, classify
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.estimators import EmaEstimator, Estimator, ExactEstimator, FixedRatioEstimator
from ctxbench.tokens.tokenizers import Tokenizer, get_tokenizer
from ctxbench.transcripts.canonical import read_transcripts
from ctxbench.transcripts.model import Message, Transcript

DEFAULT_TOKENIZERS = (
    "cl100k_base",
    "o200k_base",
    "llama3",
    "qwen2.5",
    "mistral-tekken",
    "deepseek-v3",
    "claude-legacy",
)
DEFAULT_REFERENCES = ("cl100k_base",)  # counting every model with cl100k is DB-GPT's behaviour
SETTLE_TOLERANCE = 0.05
SOURCE_SUFFIXES = {".jsonl", ".json", ".ndjson", ".traj", ".txt", ".log"}


class _Length:
    """Stands in for a text of known length (only ``len()`` is asked of it)."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


class _Span:
    """A prompt prefix seen only through its length: the EMA estimator reads only lengths
    (``char_count``, or ``len(content)`` when there are no tool calls), so a prefix is passed
    as one span and each call costs O(1) instead of O(prefix)."""

    __slots__ = ("char_count", "content", "tool_calls")
    role = "span"  # not an assistant message: no reasoning part (``estimators.sent_chars``)

    def __init__(self, chars: int) -> None:
        self.char_count = chars
        self.content = _Length(chars)
        self.tool_calls = ()


@dataclass
class CallError:
    transcript: str
    call: int  # 0-based call number within the transcript
    true: int
    estimate: int

    @property
    def rel(self) -> float:
        return (self.estimate - self.true) / self.true if self.true else 0.0


@dataclass
class Calibration:
    """Everything measured: chars/tokens by (tokenizer, kind), per-call estimator errors by
    (tokenizer, estimator), and (exact, reported) pairs by tokenizer."""

    tokenizers: list[str]
    transcripts: int = 0
    calls: int = 0
    kind_chars: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    kind_tokens: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    errors: dict[tuple[str, str], list[CallError]] = field(default_factory=lambda: defaultdict(list))
    usage: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))

    def kind_rows(self) -> list[dict[str, object]]:
        rows = []
        for tok in self.tokenizers:
            for kind in (*KINDS, "all"):
                if kind == "all":
                    chars = sum(v for (t, _), v in self.kind_chars.items() if t == tok)
                    tokens = sum(v for (t, _), v in self.kind_tokens.items() if t == tok)
                else:
                    chars, tokens = self.kind_chars.get((tok, kind), 0), self.kind_tokens.get((tok, kind), 0)
                if tokens:
                    row = {"tokenizer": tok, "kind": kind, "chars": chars, "tokens": tokens}
                    rows.append({**row, "chars_per_token": chars / tokens})
        return rows

    def error_rows(self) -> list[dict[str, object]]:
        rows = []
        for (tok, est), errs in self.errors.items():
            if not errs:
                continue
            rel = [e.rel for e in errs]
            absolute = sorted(abs(r) for r in rel)
            settles = [s for s in _settle_calls(errs).values()]
            settled = [s for s in settles if s is not None]
            rows.append(
                {
                    "tokenizer": tok,
                    "estimator": est,
                    "calls": len(errs),
                    "mape_pct": 100 * sum(absolute) / len(absolute),
                    "bias_pct": 100 * sum(rel) / len(rel),
                    "p95_abs_pct": 100 * _percentile(absolute, 0.95),
                    "settle_call_median": float(_median(settled)) if settled else None,
                    "never_settled": len(settles) - len(settled),
                    "transcripts": len(settles),
                }
            )
        return rows

    def usage_rows(self) -> list[dict[str, object]]:
        rows = []
        for (tok, source), pairs in sorted(self.usage.items()):
            if not pairs:
                continue
            ratios = [exact / reported for exact, reported in pairs]
            rows.append(
                {
                    "tokenizer": tok,
                    "source": source,
                    "calls": len(pairs),
                    "ratio_mean": sum(ratios) / len(ratios),
                    "mape_pct": 100 * sum(abs(r - 1) for r in ratios) / len(ratios),
                }
            )
        return rows


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _settle_calls(errs: Sequence[CallError], tolerance: float = SETTLE_TOLERANCE) -> dict[str, int | None]:
    """Per transcript: the first call from which every later error is within tolerance
    (None if even the last call is off)."""
    by_transcript: dict[str, list[CallError]] = defaultdict(list)
    for e in errs:
        by_transcript[e.transcript].append(e)
    result: dict[str, int | None] = {}
    for tid, series in by_transcript.items():
        settle: int | None = None
        for e in reversed(series):
            if abs(e.rel) > tolerance:
                break
            settle = e.call
        result[tid] = settle
    return result


def make_estimators(tokenizer: Tokenizer, references: Sequence[str]) -> list[Estimator]:
    """len/4, the EMA with its reference defaults, and an exact count with each other tokenizer."""
    estimators: list[Estimator] = [FixedRatioEstimator(4.0), EmaEstimator()]
    estimators += [ExactEstimator(ref) for ref in references if get_tokenizer(ref).name != tokenizer.name]
    return estimators


def _source_label(transcript: Transcript) -> str:
    """Where reported usage comes from (format and model): providers differ in what they count."""
    src = transcript.source or {}
    model = src.get("model") or transcript.metadata.get("model") or "?"
    return f"{src.get('format') or '?'}:{model}"


def _kind_of(message: Message, cache: dict[int, str]) -> str:
    kind = cache.get(id(message))
    if kind is None:
        kind = cache[id(message)] = classify(message.content)
    return kind


def calibrate(
    transcripts: Iterable[Transcript],
    tokenizers: Sequence[str] = DEFAULT_TOKENIZERS,
    references: Sequence[str] = DEFAULT_REFERENCES,
) -> Calibration:
    """Measure chars/token by kind and estimator errors over each transcript's calls."""
    loaded = [get_tokenizer(name) for name in tokenizers]
    result = Calibration(tokenizers=[t.name for t in loaded])
    kinds: dict[int, str] = {}
    for transcript in transcripts:
        result.transcripts += 1
        result.calls += len(transcript.call_indices)
        for tok in loaded:
            _calibrate_one(transcript, tok, make_estimators(tok, references), result, kinds)
    return result


def _calibrate_one(
    transcript: Transcript, tok: Tokenizer, estimators: list[Estimator], out: Calibration, kinds: dict[int, str]
) -> None:
    counter = TokenCounter(tok)
    prefix_true, prefix_chars = 0, 0
    prefix_est = [0] * len(estimators)
    call = 0
    for message in transcript.messages:
        if message.role == "assistant":
            true = prefix_true + tok.per_request
            if true > 0:
                for k, est in enumerate(estimators):
                    if isinstance(est, EmaEstimator):
                        guess = est.prompt([_Span(prefix_chars)])  # type: ignore[list-item]
                    elif isinstance(est, ExactEstimator):
                        guess = prefix_est[k] + est.counter.tokenizer.per_request
                    else:  # estimators whose prompt is the sum of their per-message estimates
                        guess = prefix_est[k]
                    out.errors[(tok.name, est.name)].append(CallError(transcript.id, call, true, guess))
                for est in estimators:
                    est.observe([_Span(prefix_chars)], true)  # type: ignore[list-item]
            reported = (message.metadata.get("usage") or {}).get("prompt_tokens")
            if isinstance(reported, int | float) and reported > 0:
                out.usage[(tok.name, _source_label(transcript))].append((true, int(reported)))
            call += 1
        prefix_true += counter.message(message)
        prefix_chars += message.char_count
        for k, est in enumerate(estimators):
            if not isinstance(est, EmaEstimator):
                prefix_est[k] += est.message(message)
        # Content kinds: the message text and each tool call's arguments, without chat framing.
        if message.content:
            kind = _kind_of(message, kinds)
            out.kind_chars[(tok.name, kind)] += len(message.content)
            out.kind_tokens[(tok.name, kind)] += tok.count(message.content)
        for tc in message.tool_calls:
            if tc.arguments:
                kind = classify(tc.arguments)
                out.kind_chars[(tok.name, kind)] += len(tc.arguments)
                out.kind_tokens[(tok.name, kind)] += tok.count(tc.arguments)


# ---- loading ----------------------------------------------------------------------------------


def _import_file(path: Path) -> list[Transcript] | None:
    try:
        from ctxbench.transcripts.importer import import_file
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibrate only needs the text; ctxbench import reports losses
        return import_file(path)


def load_any(paths: Sequence[str | Path]) -> list[Transcript]:
    """Canonical JSONL files, or any format the importer knows; directories are walked.
    A file named explicitly must load; files found in a directory that no reader
    understands are skipped with a note."""
    transcripts: list[Transcript] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = [f for f in sorted(p.rglob("*")) if f.is_file() and f.suffix.lower() in SOURCE_SUFFIXES]
            for f in files:
                if not f.name.startswith("."):
                    transcripts += _load_file(f, strict=False)
        elif p.exists():
            transcripts += _load_file(p, strict=True)
        else:
            raise InputError(p, None, "no such file or directory")
    return transcripts


def _load_file(path: Path, strict: bool) -> list[Transcript]:
    if path.suffix.lower() == ".jsonl":
        try:
            return list(read_transcripts(path))
        except InputError as exc:
            first_error: InputError | None = exc
    else:
        first_error = None
    try:
        imported = _import_file(path)
    except InputError as exc:
        if strict:
            raise
        print(f"calibrate: skipped {path}: {exc.problem}")
        return []
    if imported is None:
        if strict and first_error is not None:
            raise first_error
        return []
    return imported


# ---- output -----------------------------------------------------------------------------------


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def markdown_table(rows: list[dict[str, object]]) -> str:
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def plot_errors(result: Calibration, path: Path) -> Path:
    """Mean signed error (%) of each estimator at each call number, one panel per tokenizer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    toks = result.tokenizers
    cols = min(3, len(toks)) or 1
    rows = math.ceil(len(toks) / cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.4 * rows), squeeze=False, sharex=True)
    names = sorted({est for _, est in result.errors})
    colors = {est: f"C{i}" for i, est in enumerate(names)}  # one colour per estimator across panels
    for ax, tok in zip(axes.flat, toks):
        for (t, est), errs in sorted(result.errors.items()):
            if t != tok or not errs:
                continue
            by_call: dict[int, list[float]] = defaultdict(list)
            for e in errs:
                by_call[e.call].append(100 * e.rel)
            xs = sorted(by_call)
            ax.plot(xs, [sum(by_call[x]) / len(by_call[x]) for x in xs], label=est, color=colors[est], linewidth=1.2)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.axhspan(-100 * SETTLE_TOLERANCE, 100 * SETTLE_TOLERANCE, color="green", alpha=0.08)
        ax.set_title(f"true: {tok}")
        ax.set_xlabel("call")
        ax.set_ylabel("estimate error %")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(toks) :]:
        ax.set_visible(False)
    fig.tight_layout()
    from ctxbench.atomic import write_bytes_atomic

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_bytes_atomic(path, buffer.getvalue())
    return path


def report(result: Calibration, out_dir: Path | None) -> str:
    parts = [
        f"# Token calibration: {result.transcripts} transcripts, {result.calls} calls",
        "",
        "## Chars per token by content kind",
        markdown_table(result.kind_rows()),
        "",
        "## Estimator error against the exact prompt count (signed error = (estimate - true) / true)",
        f"settle = first call after which |error| stays within {100 * SETTLE_TOLERANCE:g}% (median over transcripts)",
        markdown_table(result.error_rows()),
        "",
        "## Exact count against the provider's reported prompt tokens (ratio = exact / reported)",
        markdown_table(result.usage_rows()) if result.usage else "(no transcript carries reported usage)",
    ]
    text = "\n".join(parts)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_csv_atomic(out_dir / "chars_per_token.csv", result.kind_rows())
        write_csv_atomic(out_dir / "estimator_error.csv", result.error_rows())
        write_csv_atomic(out_dir / "provider_usage.csv", result.usage_rows())
        from ctxbench.atomic import write_text_atomic

        write_text_atomic(out_dir / "calibrate.md", text + "\n")
        if result.errors:
            plot_errors(result, out_dir / "estimator_error.png")
    return text


ProviderReport = Callable[[Sequence[Transcript], Path, Sequence[str], str | None], str]


def cli(argv: list[str], against_provider: ProviderReport | None = None) -> int:
    """``ctxbench calibrate``; ``against_provider`` writes the ``--against provider`` report (the
    command passes ``ctxbench.calibration.provider_fidelity.write_report``: it replays, above tokens)."""
    parser = argparse.ArgumentParser(prog="ctxbench calibrate", description=describe(__doc__))
    parser.add_argument(
        "paths", nargs="*", default=[str(BUNDLED)], help="transcript files or directories (default: the bundled data)"
    )
    parser.add_argument(
        "--tokenizer",
        action="append",
        dest="tokenizers",
        help=f"tokenizer or model name (repeatable; default: {', '.join(DEFAULT_TOKENIZERS)})",
    )
    parser.add_argument(
        "--reference",
        action="append",
        dest="references",
        help="tokenizer an ExactEstimator counts with (repeatable; default: cl100k_base, as DB-GPT)",
    )
    parser.add_argument("--out", type=Path, default=Path("results/calibrate"), help="folder for CSV, Markdown, PNG")
    parser.add_argument(
        "--against",
        choices=("tokenizer", "provider"),
        default="tokenizer",
        help="tokenizer: estimators against the exact count (default); provider: the replayed prompt and the "
        "estimators against each call's provider-reported prompt tokens (provider_fidelity.csv, "
        "fidelity_outliers.csv, estimators_vs_provider.csv, cache_fidelity.csv: the prompt-cache simulator "
        "against reported cache reads; --tokenizer then replaces the provider's family)",
    )
    parser.add_argument(
        "--reasoning",
        choices=("tool_loop", "all", "none"),
        help="with --against provider: which assistant turns' reasoning the provider counts again "
        "(default: tool_loop, the assistant turns since the last user message, unless a transcript's "
        "metadata says reasoning_resent)",
    )
    args = parser.parse_args(argv)
    transcripts = load_any(args.paths)
    if not transcripts:
        raise InputError(", ".join(map(str, args.paths)), None, "no transcripts found")
    if args.against == "provider":
        if against_provider is None:
            raise ConfigError("--against provider: run it as `ctxbench calibrate` (ctxbench.calibration.commands)")
        print(against_provider(transcripts, args.out, args.tokenizers or (), args.reasoning))
        return 0
    result = calibrate(transcripts, args.tokenizers or DEFAULT_TOKENIZERS, args.references or DEFAULT_REFERENCES)
    print(report(result, args.out))
    print(f"\nwritten: {args.out}/calibrate.md, chars_per_token.csv, estimator_error.csv, estimator_error.png")
    return 0
