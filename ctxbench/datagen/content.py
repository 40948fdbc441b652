"""Seeded generators of realistic-looking tool-output text: prose, code, JSON, tables, logs, CJK.

Every generator takes a ``random.Random`` and a rough size in tokens; sizes are hints (the
builder counts real tokens), converted at about 3.6 characters per token.
"""

from __future__ import annotations

import json
import random
import string

from ctxbench.datagen import words as W

CHARS_PER_TOKEN = 3.6


def _chars(tokens: int) -> int:
    return max(16, int(tokens * CHARS_PER_TOKEN))


def past(verb: str) -> str:
    return verb + ("d" if verb.endswith("e") else "ed")


def ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(W.NOUNS if i else W.VERBS + W.ADJECTIVES) for i in range(parts))


def camel(rng: random.Random) -> str:
    return rng.choice(W.VERBS) + rng.choice(W.NOUNS).capitalize() + rng.choice(W.NOUNS).capitalize()


def hexid(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def alnum(rng: random.Random, n: int, alphabet: str = string.ascii_lowercase + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def timestamp(rng: random.Random) -> str:
    return (
        f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
    )


def person(rng: random.Random) -> str:
    return f"{rng.choice(W.FIRST_NAMES)} {rng.choice(W.LAST_NAMES)}"


def src_path(rng: random.Random, ext: str = "py") -> str:
    top = {"py": "src", "js": "web/src", "ts": "web/src", "sql": "sql", "md": "docs", "yaml": "deploy"}.get(ext, "src")
    return f"{top}/{rng.choice(W.PY_MODULES)}/{ident(rng)}.{ext}"


def sentence(rng: random.Random) -> str:
    shape = rng.randrange(5)
    if shape == 0:
        s = f"the {rng.choice(W.ADJECTIVES)} {rng.choice(W.NOUNS)} {rng.choice(W.ADVERBS)} "
        s += f"needs to {rng.choice(W.VERBS)}"
        s += f" every {rng.choice(W.NOUNS)} before the {rng.choice(W.NOUNS)} is {rng.choice(W.ADJECTIVES)}"
    elif shape == 1:
        s = f"{rng.choice(W.CONNECTIVES)}, teams {rng.choice(W.VERBS)} the {rng.choice(W.NOUNS)} layer"
        s += f" to keep {rng.choice(W.ADJECTIVES)} {rng.choice(W.NOUNS)}s under {rng.randint(2, 97)}%"
    elif shape == 2:
        s = f"a {rng.choice(W.ADJECTIVES)} {rng.choice(W.NOUNS)} can {rng.choice(W.VERBS)} about {rng.randint(3, 900)}"
        s += f" {rng.choice(W.NOUNS)}s per second when the {rng.choice(W.NOUNS)} is {rng.choice(W.ADJECTIVES)}"
    elif shape == 3:
        s = f"{person(rng)} reported that the {rng.choice(W.NOUNS)} {rng.choice(W.ADVERBS)} failed to "
        s += f"{rng.choice(W.VERBS)} the {rng.choice(W.ADJECTIVES)} {rng.choice(W.NOUNS)}"
    else:
        s = f"we {rng.choice(W.VERBS)} the {rng.choice(W.NOUNS)} and then {rng.choice(W.VERBS)} each "
        s += f"{rng.choice(W.ADJECTIVES)} {rng.choice(W.NOUNS)}, which took {rng.randint(2, 600)} ms on average"
    return s[0].upper() + s[1:] + "."


def paragraph(rng: random.Random, n: int | None = None) -> str:
    return " ".join(sentence(rng) for _ in range(n or rng.randint(3, 7)))


def cjk_paragraph(rng: random.Random, lang: str | None = None) -> str:
    pool = W.ZH_SENTENCES if (lang or rng.choice("zj")) in ("zh", "z") else W.JA_SENTENCES
    return "".join(rng.sample(pool, rng.randint(3, 6)))


def prose(rng: random.Random, tokens: int, cjk_share: float = 0.0) -> str:
    out: list[str] = []
    size, limit = 0, _chars(tokens)
    while size < limit:
        p = cjk_paragraph(rng) if rng.random() < cjk_share else paragraph(rng)
        out.append(p)
        size += len(p) * (3 if p and ord(p[0]) > 0x2E80 else 1)  # CJK costs about a token per char
    return "\n\n".join(out)


def python_function(rng: random.Random) -> str:
    name, arg, other = ident(rng), rng.choice(W.NOUNS), rng.choice(W.NOUNS)
    body = [
        f"def {name}({arg}: dict, {other}s: list[str] | None = None, *, limit: int = {rng.randint(2, 500)}) -> list:",
        f'    """{sentence(rng)}"""',
        "    result = []",
        f"    for item in ({other}s or [])[:limit]:",
        f"        if not item or item.startswith({rng.choice(W.NOUNS)!r}):",
        "            continue",
        f"        value = {arg}.get(item, {rng.randint(0, 99)})",
        rng.choice(
            [
                f"        result.append({ident(rng)}(value, strict={rng.choice(['True', 'False'])}))",
                f"        logger.debug('{rng.choice(W.VERBS)} %s -> %s', item, value)\n        result.append(value)",
                f"        if value > {rng.randint(1, 1000)}:\n            raise ValueError(f'{ident(rng)}: {{value}}')",
            ]
        ),
        "    return result",
    ]
    return "\n".join(body)


def python_module(rng: random.Random, tokens: int) -> str:
    mods = rng.sample(("os", "json", "time", "logging", "dataclasses", "typing", "pathlib", "re", "itertools"), 4)
    parts = ["from __future__ import annotations", "", *(f"import {m}" for m in sorted(mods)), ""]
    parts.append("logger = logging.getLogger(__name__)")
    parts.append(f"{ident(rng).upper()} = {rng.randint(2, 10000)}")
    size, limit = 0, _chars(tokens)
    while size < limit:
        if rng.random() < 0.25:
            cls = camel(rng)
            block = f'\n\nclass {cls[0].upper() + cls[1:]}:\n    """{sentence(rng)}"""\n\n'
            block += f"    def __init__(self, {rng.choice(W.NOUNS)}_id: str) -> None:\n"
            block += f"        self.{rng.choice(W.NOUNS)}_id = {rng.choice(W.NOUNS)}_id\n"
            block += f"        self._{rng.choice(W.NOUNS)}s: dict[str, int] = {{}}"
        else:
            block = "\n\n" + python_function(rng)
        parts.append(block)
        size += len(block)
    return "\n".join(parts)


def js_module(rng: random.Random, tokens: int) -> str:
    libs = rng.sample(W.JS_LIBS, 3)
    parts = [f"import {lib} from '{lib}';" for lib in libs]
    size, limit = 0, _chars(tokens)
    while size < limit:
        fn, arg = camel(rng), rng.choice(W.NOUNS)
        block = (
            f"\n\nexport async function {fn}({arg}, options = {{}}) {{\n"
            f"  const {{ limit = {rng.randint(5, 500)}, retries = {rng.randint(0, 5)} }} = options;\n"
            f"  // {sentence(rng)}\n"
            f"  const res = await axios.get(`/api/v1/{rng.choice(W.NOUNS)}s/${{{arg}.id}}`,"
            " { params: { limit } });\n"
            f"  if (res.status !== 200) throw new Error('{rng.choice(W.VERBS)} failed: ' + res.status);\n"
            f"  return res.data.items.filter((x) => x.{rng.choice(W.NOUNS)} !== null).slice(0, limit);\n}}"
        )
        parts.append(block)
        size += len(block)
    return "\n".join(parts)


def sql_query_text(rng: random.Random, table: str | None = None) -> str:
    t = table or f"{rng.choice(('fct', 'dim', 'stg', 'raw'))}_{rng.choice(W.NOUNS)}s"
    cols = rng.sample(("region", "status", "customer_id", "product", "channel", "city", "plan", "segment"), 2)
    metric = rng.choice(("amount", "quantity", "revenue", "cost", "duration_ms", "discount"))
    q = f"SELECT {cols[0]}, {cols[1]}, COUNT(*) AS n, SUM({metric}) AS total_{metric}, AVG({metric}) AS avg_{metric}\n"
    q += f"FROM {t}\nWHERE created_at >= DATE '2024-{rng.randint(1, 12):02d}-01'"
    if rng.random() < 0.5:
        q += f" AND status = '{rng.choice(W.STATUSES)}'"
    q += f"\nGROUP BY {cols[0]}, {cols[1]}\nORDER BY total_{metric} DESC\nLIMIT {rng.choice((10, 20, 50, 100, 500))}"
    return q


def data_value(rng: random.Random, col: str) -> str:
    if col in ("city", "region"):
        return rng.choice(W.CITIES)
    if col in ("customer", "name", "owner"):
        return rng.choice(W.CJK_NAMES) if rng.random() < 0.3 else person(rng)
    if col == "product":
        return rng.choice(W.PRODUCTS)
    if col == "status":
        return rng.choice(W.STATUSES)
    if col.endswith("_id"):
        return str(rng.randint(1000, 999999))
    if col in ("created_at", "updated_at"):
        return timestamp(rng)[:10]
    if col == "currency":
        return W.FILLER_CURRENCY
    return f"{rng.uniform(0, 50000):.2f}"


TABLE_COLUMNS = (
    ("order_id", "customer", "city", "product", "amount", "currency", "status", "created_at"),
    ("customer_id", "name", "region", "segment", "lifetime_value", "orders", "created_at"),
    ("product", "region", "units", "revenue", "margin", "updated_at"),
    ("ticket_id", "owner", "status", "priority", "duration_ms", "created_at"),
)


def ascii_table(rng: random.Random, tokens: int, columns: tuple[str, ...] | None = None) -> str:
    cols = columns or rng.choice(TABLE_COLUMNS)
    rows: list[list[str]] = []
    size, limit = 0, _chars(tokens)
    while size < limit:
        row = [data_value(rng, c) for c in cols]
        rows.append(row)
        size += sum(len(v) + 3 for v in row)
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [sep, "| " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)) + " |", sep]
    lines += ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |" for r in rows]
    lines += [sep, f"({len(rows)} rows)"]
    return "\n".join(lines)


def dataframe_text(rng: random.Random, tokens: int) -> str:
    """What ``print(df)`` shows for a grouped pandas frame."""
    cols = rng.sample(("revenue", "orders", "avg_basket", "churn_rate", "refunds", "margin", "units"), 4)
    key = rng.choice(("region", "segment", "channel", "month", "cohort"))
    lines = [f"{key:<14}" + "".join(f"{c:>14}" for c in cols)]
    n = max(3, int(_chars(tokens) / (14 * 5 + 1)))
    for i in range(n):
        label = rng.choice(W.CITIES) if key == "region" else f"{key[:3]}_{i:03d}"
        lines.append(f"{label:<14}" + "".join(f"{rng.uniform(0, 99999):>14.2f}" for _ in cols))
    lines.append(f"\n[{n} rows x {len(cols)} columns]")
    return "\n".join(lines)


def markdown_table(rng: random.Random, n_rows: int) -> str:
    cols = ("Option", "Default", "Notes")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _ in range(n_rows):
        lines.append(f"| `{ident(rng)}` | `{rng.randint(0, 4096)}` | {sentence(rng)} |")
    return "\n".join(lines)


def json_records(rng: random.Random, tokens: int) -> str:
    items: list[dict] = []
    size, limit = 0, _chars(tokens)
    while size < limit:
        item = {
            "id": f"{rng.choice(W.NOUNS)}_{hexid(rng, 10)}",
            "status": rng.choice(W.STATUSES),
            "owner": person(rng),
            "metrics": {"p50_ms": rng.randint(1, 400), "p99_ms": rng.randint(400, 9000), "errors": rng.randint(0, 50)},
            "tags": rng.sample(W.ADJECTIVES, 3),
            "updated_at": timestamp(rng),
        }
        if rng.random() < 0.15:
            item["note"] = rng.choice(W.ZH_SENTENCES + W.JA_SENTENCES)
        items.append(item)
        size += 260
    return json.dumps({"count": len(items), "items": items}, ensure_ascii=False, indent=2)


def log_lines(rng: random.Random, tokens: int) -> str:
    lines: list[str] = []
    size, limit = 0, _chars(tokens)
    svc = rng.choice(W.PY_MODULES)
    while size < limit:
        lvl = rng.choice(W.LOG_LEVELS)
        kind = rng.randrange(4)
        if kind == 0:
            msg = f"{rng.choice(('GET', 'POST', 'PUT'))} {rng.choice(W.HTTP_PATHS)} "
            msg += str(rng.choice((200, 200, 201, 404, 500)))
            msg += f" {rng.randint(1, 3000)}ms req_id={hexid(rng, 12)}"
        elif kind == 1:
            msg = f"{past(rng.choice(W.VERBS))} {rng.randint(1, 90000)} {rng.choice(W.NOUNS)}s"
            msg += f" in {rng.uniform(0, 60):.2f}s"
        elif kind == 2:
            msg = f"{ident(rng)}: {sentence(rng)}"
        else:
            msg = f"worker-{rng.randint(1, 32)} {rng.choice(W.NOUNS)}={hexid(rng, 6)} lag={rng.randint(0, 9999)}"
        line = f"{timestamp(rng)} {lvl:<5} [{svc}.{rng.choice(W.NOUNS)}] {msg}"
        lines.append(line)
        size += len(line)
    return "\n".join(lines)


def traceback_text(rng: random.Random, exc: str | None = None, message: str | None = None) -> str:
    frames = []
    for _ in range(rng.randint(2, 6)):
        path = src_path(rng)
        frames.append(f'  File "/app/{path}", line {rng.randint(10, 900)}, in {ident(rng)}')
        frames.append(f"    {ident(rng)} = {ident(rng)}({rng.choice(W.NOUNS)}, {rng.choice(W.NOUNS)}_id)")
    exc = exc or rng.choice(W.PY_EXCEPTIONS)
    message = message or f"{rng.choice(W.NOUNS)} {rng.choice(W.ADJECTIVES)} ({rng.randint(1, 9999)})"
    return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{exc}: {message}"


def pytest_output(rng: random.Random, tokens: int, failures: int = 1) -> str:
    mod = rng.choice(W.PY_MODULES)
    n_files = max(2, tokens // 60)
    lines = [
        "============================= test session starts ==============================",
        f"platform linux -- Python 3.11.{rng.randint(2, 9)}, pytest-8.{rng.randint(0, 3)}.{rng.randint(0, 4)}",
        f"rootdir: /app\ncollected {n_files * rng.randint(3, 12)} items",
        "",
    ]
    for _ in range(n_files):
        marks = "".join(rng.choice("....................sF") for _ in range(rng.randint(3, 40)))
        lines.append(f"tests/{mod}/test_{ident(rng)}.py {marks}")
    for _ in range(failures):
        name = f"test_{ident(rng)}"
        lines += ["", f"___________________________ {name} ___________________________", "", traceback_text(rng), ""]
    lines.append(f"=========== {failures} failed, {n_files * 7} passed in {rng.uniform(1, 300):.2f}s ===========")
    return "\n".join(lines)


def config_text(rng: random.Random, tokens: int) -> str:
    lines: list[str] = []
    size, limit = 0, _chars(tokens)
    while size < limit:
        section = f"[{rng.choice(W.NOUNS)}.{rng.choice(W.NOUNS)}]"
        lines.append(section)
        for _ in range(rng.randint(3, 8)):
            key = ident(rng)
            val = rng.choice(
                (
                    str(rng.randint(0, 5000)),
                    f'"{rng.choice(W.ADJECTIVES)}"',
                    rng.choice(("true", "false")),
                    f'"{src_path(rng, "yaml")}"',
                    f"{rng.uniform(0, 1):.3f}",
                )
            )
            lines.append(f"{key} = {val}")
        lines.append("")
        size += sum(len(x) for x in lines[-8:])
    return "\n".join(lines)


def web_page(rng: random.Random, topic: str, tokens: int, cjk_share: float = 0.15) -> str:
    site = rng.choice(W.SITES)
    parts = [
        f"# {topic.title()}: {rng.choice(W.ADJECTIVES)} {rng.choice(W.NOUNS)}s and what we learned",
        f"*{person(rng)} · {timestamp(rng)[:10]} · {site}*",
        "",
    ]
    size, limit = 0, _chars(tokens)
    while size < limit:
        roll = rng.random()
        if roll < 0.12:
            block = f"## {rng.choice(W.VERBS).capitalize()} the {rng.choice(W.NOUNS)}"
        elif roll < 0.12 + cjk_share:
            block = cjk_paragraph(rng)
            size += len(block) * 2
        elif roll < 0.35:
            block = "```python\n" + python_function(rng) + "\n```"
        elif roll < 0.42:
            block = markdown_table(rng, rng.randint(3, 9))
        elif roll < 0.47:
            block = f"> {sentence(rng)} — {person(rng)}"
        else:
            block = paragraph(rng)
        parts.append(block)
        size += len(block)
    parts.append(f"\n[Share] [Cite] · Related: {', '.join(rng.sample(W.RESEARCH_TOPICS, 3))}")
    return "\n\n".join(parts)


def insert_lines(rng: random.Random, text: str, lines: list[str], where: float | None = None) -> str:
    """Bury ``lines`` in ``text`` at a line boundary (``where`` in 0..1, random if None)."""
    if not lines:
        return text
    rows = text.split("\n")
    pos = int(len(rows) * (rng.uniform(0.15, 0.85) if where is None else where))
    # in documents, land between paragraphs rather than inside a table or code block
    breaks = [i for i in range(1, len(rows)) if rows[i - 1] == "" and rows[i] != ""]
    if breaks:
        pos = min(breaks, key=lambda i: abs(i - pos))
        lines = [*lines, ""]
    return "\n".join(rows[:pos] + lines + rows[pos:])
