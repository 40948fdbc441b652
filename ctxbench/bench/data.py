"""The transcripts a benchmark runs on: generated ones of given sizes, and the largest real one."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ctxbench.errors import ConfigError
from ctxbench.tokens.counting import TokenCounter
from ctxbench.tokens.tokenizers import get_tokenizer
from ctxbench.transcripts.canonical import write_transcripts
from ctxbench.transcripts.model import Transcript

log = logging.getLogger(__name__)
DEFAULT_REAL = Path(__file__).resolve().parents[2].parent / "shared" / "transcripts"
REAL_SUFFIXES = (".jsonl", ".json", ".traj")


@dataclass(frozen=True)
class BenchTranscript:
    name: str
    path: Path
    tokens: int
    messages: int
    calls: int
    chars: int
    text_bytes: int  # UTF-8 bytes of all message text (content, tool-call names and arguments)
    synthetic: bool
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "path": str(self.path)}


def parse_size(text: str) -> int:
    """``100k`` -> 100000, ``1m`` -> 1000000, ``2500`` -> 2500."""
    value = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(value[-1:], 1)
    try:
        number = float(value[:-1] if scale > 1 else value)
    except ValueError:
        raise ConfigError(f"--sizes: {text!r} is not a size like 100k or 1m") from None
    if number <= 0:
        raise ConfigError(f"--sizes: {text!r} must be positive")
    return int(number * scale)


def size_label(tokens: int) -> str:
    return f"{tokens // 1_000_000}m" if tokens % 1_000_000 == 0 else f"{tokens // 1000}k"


def text_bytes(transcript: Transcript) -> int:
    return sum(
        len(m.content.encode()) + sum(len(c.name.encode()) + len(c.arguments.encode()) for c in m.tool_calls)
        for m in transcript.messages
    )


def describe(
    transcript: Transcript, path: Path, name: str, tokenizer: str, synthetic: bool, source: str
) -> BenchTranscript:
    counter = TokenCounter(get_tokenizer(tokenizer))
    return BenchTranscript(
        name=name,
        path=path,
        tokens=counter.prompt(transcript.messages),
        messages=len(transcript.messages),
        calls=len(transcript.call_indices),
        chars=transcript.char_count,
        text_bytes=text_bytes(transcript),
        synthetic=synthetic,
        source=source,
    )


def dataset(folder: Path, name: str, tokenizer: str) -> BenchTranscript:
    """A folder of canonical transcripts measured as one set (the bundled data: the main job's
    cells); its sizes are the sums over its transcripts."""
    from ctxbench.transcripts.canonical import find_canonical_files, read_transcripts

    transcripts = [t for f in find_canonical_files([folder]) for t in read_transcripts(f) if t.call_indices]
    counter = TokenCounter(get_tokenizer(tokenizer))
    return BenchTranscript(
        name=name,
        path=folder,
        tokens=sum(counter.prompt(t.messages) for t in transcripts),
        messages=sum(len(t.messages) for t in transcripts),
        calls=sum(len(t.call_indices) for t in transcripts),
        chars=sum(t.char_count for t in transcripts),
        text_bytes=sum(text_bytes(t) for t in transcripts),
        synthetic=False,
        source=f"{folder.name}/ ({len(transcripts)} transcripts, one cell each)",
    )


def generated(
    target_tokens: int, workdir: Path, tokenizer: str, kind: str = "coding", seed: int = 0
) -> BenchTranscript:
    """A transcript from the bundled generator, written once as canonical JSONL under ``workdir``."""
    from ctxbench.datagen import make_transcript

    transcript = make_transcript(kind, target_tokens, seed)
    path = write_transcripts(workdir / f"synth_{kind}_{size_label(target_tokens)}.jsonl", [transcript])
    source = f"make_transcript({kind!r}, {target_tokens}, seed={seed})"
    return describe(transcript, path, size_label(target_tokens), tokenizer, True, source)


def largest_real(root: Path, workdir: Path, tokenizer: str) -> BenchTranscript | None:
    """The largest single transcript (by characters) that the importer reads under ``root``."""
    from ctxbench.transcripts.importer import import_file

    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in REAL_SUFFIXES)
    best: tuple[Transcript, Path] | None = None
    for file in files:
        try:
            transcripts = import_file(file)
        except Exception as exc:  # noqa: BLE001 - a file the importer cannot read is skipped, not fatal
            log.info("bench: %s not imported (%s)", file, exc)
            continue
        for transcript in transcripts:
            if transcript.call_indices and (best is None or transcript.char_count > best[0].char_count):
                best = (transcript, file)
    if best is None:
        return None
    transcript, file = best
    path = write_transcripts(workdir / "real.jsonl", [transcript])
    source = f"{file.relative_to(root) if root.is_dir() else file.name} ({transcript.id})"
    return describe(transcript, path, "real", tokenizer, False, source)
