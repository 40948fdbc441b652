"""Assemble whole transcripts: plan facts and big outputs over a token budget, then fill.

``make_transcript`` is the on-demand API (benchmarks ask for ~100k, ~250k, ~1M tokens);
``DEFAULT_SPECS`` and ``write_datasets`` make the bundled files in ``ctxbench/data/bundled/``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from ctxbench.atomic import write_text_atomic
from ctxbench.datagen.agent_base import Agent
from ctxbench.datagen.agent_coding import CodingAgent
from ctxbench.datagen.agent_research import ResearchAgent
from ctxbench.datagen.agent_sql import SqlAgent
from ctxbench.datagen.builder import Builder
from ctxbench.datagen.facts import plan_facts
from ctxbench.errors import ConfigError
from ctxbench.transcripts.canonical import write_transcripts
from ctxbench.transcripts.model import Transcript

GENERATOR_VERSION = "1"
TOKENIZER = "o200k_base"
AGENTS: dict[str, type[Agent]] = {"sql": SqlAgent, "coding": CodingAgent, "research": ResearchAgent}
AGENT_KINDS: tuple[str, ...] = tuple(AGENTS)
MIN_TOKENS = 2_000


@dataclass(frozen=True)
class Spec:
    kind: str
    target_tokens: int
    seed_offset: int

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.target_tokens // 1000:03d}k"


DEFAULT_SEED = 0
DEFAULT_SPECS: tuple[Spec, ...] = (
    Spec("sql", 60_000, 1),
    Spec("coding", 90_000, 2),
    Spec("research", 130_000, 3),
    Spec("sql", 180_000, 4),
    Spec("coding", 230_000, 5),
    Spec("research", 280_000, 6),
    Spec("sql", 330_000, 7),
    Spec("coding", 390_000, 8),
)


def _huge_sizes(rng: random.Random, target: int) -> list[int]:
    """A few 20k-60k token outputs in long transcripts, so truncation layers have work."""
    if target < 150_000:
        return []
    count = 1 + (target >= 250_000) + (target >= 350_000) + min(3, max(0, (target - 400_000) // 200_000))
    return [rng.randint(20_000, min(60_000, target // 6)) for _ in range(count)]


def make_transcript(kind: str, target_tokens: int, seed: int = 0, transcript_id: str | None = None) -> Transcript:
    """A synthetic transcript of about ``target_tokens`` (o200k_base) with planted-fact probes.

    Same arguments, same transcript: all randomness comes from one seeded ``random.Random``.
    """
    if kind not in AGENTS:
        raise ConfigError(f"unknown agent kind {kind!r}; available: {', '.join(AGENT_KINDS)}")
    if target_tokens < MIN_TOKENS:
        raise ConfigError(f"target_tokens must be at least {MIN_TOKENS}, got {target_tokens}")
    tid = transcript_id or f"synth-{kind}-{target_tokens // 1000:03d}k-s{seed}"
    rng = random.Random(f"ctxbench.datagen/{GENERATOR_VERSION}/{kind}/{target_tokens}/{seed}")
    agent = AGENTS[kind](rng)
    facts = plan_facts(rng, kind, 11 + min(4, target_tokens // 100_000), prefix=tid)
    b = Builder(facts, TOKENIZER)
    b.add(agent.system_prompt_message())
    b.add(agent.task_message())

    huge = _huge_sizes(rng, target_tokens)
    huge_at = sorted(rng.uniform(0.1, 0.9) for _ in huge)
    calls = max(60, min(300, target_tokens // 1100))
    fill_budget = max(target_tokens * 0.3, target_tokens - sum(huge) - 400 * len(facts))
    mean_out = max(40.0, fill_budget / calls - 90)  # about 90 tokens per assistant message
    sigma = 1.0
    mu = math.log(mean_out) - sigma * sigma / 2

    overshoot = 1.0

    def reserve() -> int:
        return 450 + 350 * sum(1 for f in facts if f.needed_at is None)

    while b.tokens + reserve() < target_tokens:
        pos = b.tokens / target_tokens
        due = [f for f in facts if f.stated_at is None and f.state_frac <= pos]
        if due:
            fact = due[0]
            if fact.channel == "user":
                agent.user(b, fact.user_text, fact, pinned=fact.pinned)
            else:
                size = int(rng.lognormvariate(mu, sigma))
                agent.step(b, max(60, min(size, int(mean_out * 6))), hint=fact.tool_hint, fact=fact)
            continue
        need = [f for f in facts if f.stated_at is not None and f.needed_at is None and f.need_frac <= pos]
        if need:
            agent.use(b, need[0])
            continue
        if huge and huge_at[0] <= pos:
            huge_at.pop(0)
            agent.size_cap = min(huge.pop(0), max(100, target_tokens - b.tokens - reserve()))
            agent.step(b, agent.size_cap, hint="big")
            agent.size_cap = None
            continue
        if rng.random() < 0.03:
            agent.user(b, agent.follow_up())
            continue
        size = int(min(rng.lognormvariate(mu, sigma), mean_out * 12, max(20, target_tokens - b.tokens - reserve())))
        before = b.tokens
        agent.step(b, max(8, int(size / overshoot)))
        # generators miss their size hints by a kind-specific factor: learn it, so call counts stay as planned
        overshoot = 0.9 * overshoot + 0.1 * min(4.0, max(0.25, (b.tokens - before) / (size + 90)))
    for fact in facts:  # a very small budget can end before late facts were placed
        if fact.stated_at is None:
            if fact.channel == "user":
                agent.user(b, fact.user_text, fact, pinned=fact.pinned)
            else:
                agent.step(b, 200, hint=fact.tool_hint, fact=fact)
    for fact in sorted(facts, key=lambda f: f.need_frac):
        if fact.needed_at is None:
            agent.use(b, fact)
    agent.final(b)

    tokens = b.counter.prompt(b.messages)
    return Transcript(
        id=tid,
        messages=b.messages,
        probes=[f.probe() for f in facts],
        source={"kind": "synthetic", "generator": "ctxbench.datagen"},
        metadata={
            "generator": "ctxbench.datagen",
            "generator_version": GENERATOR_VERSION,
            "seed": seed,
            "agent_kind": kind,
            "target_tokens": target_tokens,
            "tokenizer": TOKENIZER,
            "tokens": tokens,
            f"tokens_{TOKENIZER}": tokens,
            "assistant_calls": b.calls,
            "messages": len(b.messages),
        },
    )


def default_transcripts(seed: int = DEFAULT_SEED) -> list[tuple[Spec, Transcript]]:
    return [
        (s, make_transcript(s.kind, s.target_tokens, seed + s.seed_offset, f"synth-{s.name}")) for s in DEFAULT_SPECS
    ]


def readme_text(rows: list[tuple[Spec, Transcript]], seed: int) -> str:
    lines = [
        "# Bundled synthetic transcripts",
        "",
        "Generated by `ctxbench generate` (the `ctxbench.datagen` package, generator version "
        f"{GENERATOR_VERSION}, base seed {seed}); do not edit by hand: `ctxbench generate --check` fails when a",
        "file differs from what the generator makes. One canonical JSONL file per transcript",
        '(`ctxbench.transcript/1`, loadable with `read_transcripts` or `datasets.load_dataset("json", ...)`).',
        "",
        "Three agent kinds: `sql` (DB-GPT ReAct text, `Observation:` user messages), `coding` (OpenAI-style tool",
        "calls: read_file, grep, glob, bash, edit/write/create_file) and `research` (web_search, web_fetch, notes).",
        "Each transcript plants facts (port, path, constraint, error, decision, credential id, column, threshold,",
        "version, owner, next step) stated exactly once and used later; each is a `planted` probe with",
        "`message_index` (where stated) and `needed_at` (the assistant message that uses it).",
        "",
        "| file | agent | tokens (o200k_base) | assistant calls | messages | probes | probe kinds |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for spec, t in rows:
        kinds = sorted({p.kind for p in t.probes})
        lines.append(
            f"| `{spec.name}.jsonl` | {spec.kind} | {t.metadata['tokens']:,} | {t.metadata['assistant_calls']} | "
            f"{len(t.messages)} | {len(t.probes)} | {', '.join(kinds)} |"
        )
    return "\n".join(lines) + "\n"


def write_datasets(out: str | Path, seed: int = DEFAULT_SEED) -> list[Path]:
    """Write every default transcript (one file each) and the README into ``out``."""
    out = Path(out)
    rows = default_transcripts(seed)
    paths = [write_transcripts(out / f"{spec.name}.jsonl", [t]) for spec, t in rows]
    paths.append(write_text_atomic(out / "README.md", readme_text(rows, seed)))
    return paths
