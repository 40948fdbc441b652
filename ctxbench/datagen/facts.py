"""Planted facts: a random unique value, how it is stated once, how it is used later, and its probe.

Each fact kind makes a value that cannot be guessed (port 47213, not 8080) plus the texts
that state it (a user message or a line buried in a tool output) and that use it (an
assistant message). ``plan_facts`` also places each fact at a depth in the transcript.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from ctxbench.datagen import words as W
from ctxbench.datagen.content import alnum, hexid, ident
from ctxbench.transcripts.model import Probe


@dataclass
class Fact:
    id: str
    kind: str  # which fact kind (port, path, ...)
    probe_kind: str  # recall / artifact / continuation / decision
    value: str  # the exact gold string
    question: str
    user_text: str  # a user message that states it
    tool_lines: list[str]  # lines that state it inside a tool output
    use_text: str  # assistant prose that uses it
    use_arg: str  # a tool argument that uses it
    channel: str = "tool"  # "user" or "tool"
    tool_hint: str = "doc"  # which kind of tool output carries it
    aliases: tuple[str, ...] = ()
    pinned: bool = False
    state_frac: float = 0.0
    need_frac: float = 1.0
    stated_at: int | None = None
    needed_at: int | None = None

    def probe(self) -> Probe:
        return Probe(
            id=self.id,
            question=self.question,
            answer=self.value,
            kind=self.probe_kind,  # type: ignore[arg-type]
            message_index=self.stated_at if self.stated_at is not None else 0,
            needed_at=self.needed_at,
            aliases=self.aliases,
            source="planted",
        )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


def _port(rng: random.Random, agent: str) -> dict:
    svc = rng.choice(
        (
            "metrics exporter",
            "staging Postgres proxy",
            "feature-flag sidecar",
            "replay cache",
            "warehouse gateway",
            "crawler proxy",
            "search indexer",
            "job queue broker",
        )
    )
    v = str(rng.randint(20001, 64999))
    return dict(
        kind="port",
        probe_kind="recall",
        value=v,
        channel=rng.choice(("user", "tool")),
        question=f"Which port does the {svc} listen on in this environment?",
        user_text=f"Heads up: in this environment the {svc} listens on port {v}, not the usual default.",
        tool_lines=[f"{_slug(svc)}.listen_port = {v}    # moved by ops, see INC-{rng.randint(100, 999)}"],
        use_text=f"The {svc} listens on port {v} here, so I'll point the check at that port.",
        use_arg=f"curl -sf http://127.0.0.1:{v}/healthz && echo ok",
        tool_hint="config",
        aliases=(f":{v}",),
    )


def _path(rng: random.Random, agent: str) -> dict:
    suffix = alnum(rng, 4)
    if agent == "coding":
        func = f"{rng.choice(W.VERBS)}_{rng.choice(W.NOUNS)}_{rng.choice(W.NOUNS)}"
        v = f"src/{rng.choice(W.PY_MODULES)}/{rng.choice(W.NOUNS)}_{suffix}.py"
        return dict(
            kind="path",
            probe_kind="artifact",
            value=v,
            channel="tool",
            tool_hint="grep",
            question=f"Which file defines `{func}`, the function the agent later edited to fix the bug?",
            user_text="",
            tool_lines=[f"{v}:{rng.randint(20, 400)}:def {func}(self, payload, *, strict=True):"],
            use_text=f"The definition of `{func}` is in {v}; editing it there.",
            use_arg=v,
        )
    if agent == "sql":
        metric = rng.choice(("revenue by region", "churn by cohort", "refund rate by product", "orders per city"))
        v = f"charts/{_slug(metric)}_{suffix}.png"
        return dict(
            kind="path",
            probe_kind="artifact",
            value=v,
            channel="tool",
            tool_hint="chart",
            question=f"To which file did chart_render save the {metric} chart?",
            user_text="",
            tool_lines=[f"Chart saved to {v} (1280x720, {rng.randint(20, 300)} KB)"],
            use_text=f"I'll embed the {metric} chart from {v} in the final report.",
            use_arg=v,
        )
    topic = rng.choice(W.RESEARCH_TOPICS)
    v = f"notes/{_slug(topic)[:24]}_{suffix}.md"
    return dict(
        kind="path",
        probe_kind="artifact",
        value=v,
        channel="tool",
        tool_hint="note",
        question=f"Which note file did the agent save its findings on {topic} to?",
        user_text="",
        tool_lines=[f"Saved note to {v} ({rng.randint(200, 1500)} words)"],
        use_text=f"Re-reading {v} to pull the {topic} findings into the draft.",
        use_arg=v,
    )


def _constraint(rng: random.Random, agent: str) -> dict:
    if agent == "coding":
        v = f"db/migrations/{rng.randint(1000, 9999)}_{ident(rng)}/"
        return dict(
            kind="constraint",
            probe_kind="recall",
            value=v,
            channel="user",
            pinned=True,
            question="Which directory did the user say must never be modified?",
            user_text=f"Please remember: never modify anything under {v} — it is applied in production already.",
            tool_lines=[],
            use_text=f"I won't touch {v} (the user said never to modify it); the fix goes in the model.",
            use_arg=f"git diff --stat -- . ':!{v}'",
        )
    if agent == "sql":
        v = rng.choice(W.FACT_CURRENCIES)
        return dict(
            kind="constraint",
            probe_kind="recall",
            value=v,
            channel="user",
            pinned=True,
            question="In which currency did the user ask for all amounts to be reported?",
            user_text=f"Please remember: report every monetary amount in {v}, converted at the month-end rate.",
            tool_lines=[],
            use_text=f"Converting all totals to {v} as the user required before writing them up.",
            use_arg=f"SELECT month, SUM(amount * fx.rate) AS total_{v.lower()} FROM orders JOIN fx USING (month)"
            f" WHERE fx.to_currency = '{v}' GROUP BY month",
        )
    v = f"{rng.randint(2015, 2021)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return dict(
        kind="constraint",
        probe_kind="recall",
        value=v,
        channel="user",
        pinned=True,
        question="What cutoff date did the user set for the sources that may be cited?",
        user_text=f"Please remember: only cite sources published on or after {v}; older ones are out of scope.",
        tool_lines=[],
        use_text=f"Dropping two sources older than the {v} cutoff the user set.",
        use_arg=f"sources filtered: published >= {v}",
    )


def _error(rng: random.Random, agent: str) -> dict:
    exc = rng.choice(W.FACT_EXCEPTIONS)
    noun = rng.choice(("lease", "shard", "manifest", "lock", "tenant", "watermark", "segment"))
    tail = rng.choice(("expired before commit", "was rejected by the coordinator", "is unavailable", "timed out"))
    v = f"{exc}: {noun} {hexid(rng, 8)} {tail}"
    where = rng.choice(("the nightly load", "the integration run", "the replay job", "the export step"))
    return dict(
        kind="error",
        probe_kind="recall",
        value=v,
        channel="tool",
        tool_hint="error",
        question=f"What exact error message did {where} fail with?",
        user_text=f"FYI {where} failed last night with `{v}`.",
        tool_lines=[f"ERROR {where} aborted: {v}"],
        use_text=f"That matches the earlier failure `{v}`, so I'll add a retry around that call.",
        use_arg=f"grep -rn '{v}' logs/",
        aliases=(v.split(": ", 1)[1],),
    )


_DECISIONS = {
    "coding": (
        ("orjson", "ujson"),
        ("a token-bucket limiter", "a fixed-window limiter"),
        ("SQLite", "Redis"),
        ("httpx", "requests"),
        ("msgpack", "protobuf"),
    ),
    "sql": (
        ("DuckDB", "pandas"),
        ("a materialized view", "a nightly CSV export"),
        ("median", "mean"),
        ("the read replica", "the primary"),
        ("ISO weeks", "calendar weeks"),
    ),
    "research": (
        ("the 2023 field survey", "the vendor whitepaper"),
        ("peer-reviewed sources", "blog posts"),
        ("a comparison table", "a narrative summary"),
        ("the OECD dataset", "the national statistics"),
    ),
}


def _decision(rng: random.Random, agent: str) -> dict:
    a, b = rng.choice(_DECISIONS[agent])
    n, m = rng.randint(101, 9899), rng.randint(13, 97)
    reason = rng.choice(
        (
            f"{b} exceeded the {n} ms p99 budget",
            f"{b} needed {n} MB of memory per worker",
            f"{b} failed {m} of the {n} replay checks",
            f"{b} disagreed with the audited totals by {n} rows",
        )
    )
    return dict(
        kind="decision",
        probe_kind="decision",
        value=reason,
        channel=rng.choice(("user", "tool")),
        tool_hint="doc",
        question=f"Why was {a} chosen over {b}?",
        user_text=f"Decision for the record: we go with {a} rather than {b}, because {reason}.",
        tool_lines=[f"DECISION: use {a}, not {b}. Reason: {reason}. (approved in design review)"],
        use_text=f"Sticking with {a} here: {reason}.",
        use_arg=f"# chose {a}: {reason}",
        aliases=(reason.split(" ", 1)[1],) if " " in b else (),
    )


def _credential(rng: random.Random, agent: str) -> dict:
    style = rng.randrange(3)
    if style == 0:
        v = f"sa-{alnum(rng, 4)}-{hexid(rng, 12)}"
    elif style == 1:
        v = "AKIA" + "".join(rng.choice(string.ascii_uppercase + "234567") for _ in range(16))
    else:
        v = f"tok_{alnum(rng, 20, string.ascii_letters + string.digits)}"
    system = rng.choice(("the warehouse loader", "the staging bucket", "the CI deploy job", "the billing API"))
    return dict(
        kind="credential",
        probe_kind="recall",
        value=v,
        channel=rng.choice(("user", "tool")),
        tool_hint="config",
        question=f"What is the credential id used for {system}?",
        user_text=f"Use the credential id {v} for {system}; the secret itself is in the vault.",
        tool_lines=[f"{_slug(system).upper()}_CREDENTIAL_ID={v}"],
        use_text=f"Authenticating {system} with credential id {v}.",
        use_arg=f"--credential-id {v}",
    )


def _column(rng: random.Random, agent: str) -> dict:
    table = f"{rng.choice(('stg', 'fct', 'dim', 'int'))}_{rng.choice(W.NOUNS)}s_{alnum(rng, 2)}"
    meaning = rng.choice(
        ("net amount after refunds", "first activation date", "tenant region code", "deduplicated event count")
    )
    col = {
        "net amount after refunds": "net_amount_minor",
        "first activation date": "activated_on",
        "tenant region code": "tenant_region_cd",
        "deduplicated event count": "dedup_event_cnt",
    }[meaning]
    v = f"{table}.{col}"
    return dict(
        kind="column",
        probe_kind="recall",
        value=v,
        channel=rng.choice(("user", "tool")),
        tool_hint="schema",
        question=f"Which table and column hold the {meaning}?",
        user_text=f"Note: the {meaning} lives in {v}; do not use the similarly named raw column.",
        tool_lines=[f"-- {meaning}: {v} (authoritative, owned by finance-data)"],
        use_text=f"Using {v} for the {meaning}.",
        use_arg=f"SELECT SUM({col}) FROM {table}",
        aliases=(f"{table}({col})",),
    )


def _threshold(rng: random.Random, agent: str) -> dict:
    what, v = rng.choice(
        (
            ("p95 latency alert threshold", f"{rng.randint(1101, 4899)} ms"),
            ("maximum allowed null ratio", f"0.0{rng.randint(11, 89)}7"),
            ("batch size cap for the loader", f"{rng.randint(1201, 9899)} rows"),
            ("minimum sample size per cohort", f"{rng.randint(311, 2999)} users"),
        )
    )
    return dict(
        kind="threshold",
        probe_kind="recall",
        value=v,
        channel=rng.choice(("user", "tool")),
        tool_hint="config",
        question=f"What is the {what}?",
        user_text=f"For this task the {what} is {v}; flag anything beyond it.",
        tool_lines=[f"# {what}: {v} (agreed with the owners, do not change)"],
        use_text=f"Comparing against the {what} of {v}.",
        use_arg=f"threshold={v}",
    )


def _version(rng: random.Random, agent: str) -> dict:
    pkg = rng.choice(("psycopg", "pyarrow", "duckdb", "fastapi", "sqlalchemy", "polars", "httpx", "pydantic"))
    v = f"{rng.randint(2, 9)}.{rng.randint(11, 39)}.{rng.randint(11, 49)}"
    return dict(
        kind="version",
        probe_kind="recall",
        value=v,
        channel=rng.choice(("user", "tool")),
        tool_hint="config",
        question=f"Which version of {pkg} is pinned for this project?",
        user_text=f"We are pinned to {pkg} {v}; do not upgrade it in this change.",
        tool_lines=[f"{pkg}=={v}    # pinned: newer releases break the exporter"],
        use_text=f"Keeping {pkg} at {v}, the pinned version.",
        use_arg=f"pip install '{pkg}=={v}'",
        aliases=(f"v{v}",),
    )


def _person(rng: random.Random, agent: str) -> dict:
    v = f"{rng.choice(W.FACT_FIRST)} {rng.choice(W.FACT_LAST)}"
    team = f"{rng.choice(W.TEAM_ADJ)}-{rng.choice(W.TEAM_ANIMAL)}"
    system = rng.choice(("payments schema", "ingest pipeline", "pricing service", "survey dataset", "export API"))
    return dict(
        kind="person",
        probe_kind="recall",
        value=v,
        channel=rng.choice(("user", "tool")),
        tool_hint="doc",
        question=f"Who owns the {system} and must be consulted before changing it?",
        user_text=f"{v} from team {team} owns the {system}; check with them before changing anything there.",
        tool_lines=[f"Owner of the {system}: {v} (team {team})"],
        use_text=f"I'll flag this for {v}, who owns the {system}.",
        use_arg=f"@{v} please review",
    )


def _continuation(rng: random.Random, agent: str) -> dict:
    target = rng.choice(
        (
            f"rebuild mv_{rng.choice(W.NOUNS)}_{alnum(rng, 4)}",
            f"rerun backfill_{rng.choice(W.NOUNS)}_{rng.randint(1000, 9999)}",
            f"re-index shard-{alnum(rng, 5)}",
            f"publish draft_{rng.choice(W.NOUNS)}_{alnum(rng, 4)}",
        )
    )
    obj = target.split(" ", 1)[1]
    after = rng.choice(
        ("the schema check passes", "the numbers are verified", "the tests are green", "the draft is reviewed")
    )
    return dict(
        kind="continuation",
        probe_kind="continuation",
        value=target,
        channel=rng.choice(("user", "tool")),
        tool_hint="doc",
        question=f"What was the agent supposed to do next once {after}?",
        user_text=f"Once {after}, the next step is to {target}.",
        tool_lines=[f"- [ ] NEXT (after {after}): {target}"],
        use_text=f"Now that {after}, moving on to the planned next step: {target}.",
        use_arg=obj,
        aliases=(obj,),
    )


FACT_KINDS: dict[str, Callable[[random.Random, str], dict]] = {
    "port": _port,
    "path": _path,
    "constraint": _constraint,
    "error": _error,
    "decision": _decision,
    "credential": _credential,
    "column": _column,
    "threshold": _threshold,
    "version": _version,
    "person": _person,
    "continuation": _continuation,
}
_EXTRA_KINDS = ("path", "decision", "continuation", "port", "error", "credential")

# (state bucket, need gap): early/middle/late statements, needed soon after or much later.
_PATTERNS = (
    ("early", "long"),
    ("early", "short"),
    ("early", "mid"),
    ("middle", "long"),
    ("middle", "short"),
    ("late", "short"),
    ("late", "long"),
)
_STATE_RANGE = {"early": (0.02, 0.18), "middle": (0.3, 0.55), "late": (0.65, 0.82)}


def _depth(rng: random.Random, pattern: tuple[str, str]) -> tuple[float, float]:
    state = rng.uniform(*_STATE_RANGE[pattern[0]])
    if pattern[1] == "short":
        need = state + rng.uniform(0.02, 0.08)
    elif pattern[1] == "mid":
        need = state + rng.uniform(0.2, 0.4)
    else:
        need = rng.uniform(max(state + 0.1, 0.85), 0.97)
    return state, min(need, 0.97)


def plan_facts(rng: random.Random, agent: str, count: int, prefix: str) -> list[Fact]:
    """``count`` facts (every kind once, then extras) with unique values and varied depths."""
    kinds = list(FACT_KINDS) + [_EXTRA_KINDS[i % len(_EXTRA_KINDS)] for i in range(max(0, count - len(FACT_KINDS)))]
    patterns = [_PATTERNS[i % len(_PATTERNS)] for i in range(len(kinds))]
    rng.shuffle(patterns)
    facts: list[Fact] = []
    values: list[str] = []
    for i, kind in enumerate(kinds):
        for _ in range(50):
            spec = FACT_KINDS[kind](rng, agent)
            v = spec["value"]
            # values must not overlap each other, or one fact's guard would rewrite another's text
            if all(v not in o and o not in v for o in values):
                break
        values.append(spec["value"])
        fact = Fact(id=f"{prefix}-{i:02d}-{kind}", **spec)
        fact.state_frac, fact.need_frac = _depth(rng, patterns[i])
        if fact.channel == "user" and not fact.pinned and rng.random() < 0.3:
            fact.pinned = True  # the user asks to keep it: strategies must not drop pinned messages
            fact.user_text = "Please remember this. " + fact.user_text
        facts.append(fact)
    return facts
