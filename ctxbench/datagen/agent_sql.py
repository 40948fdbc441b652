"""A DB-GPT style data-analysis agent: ReAct text, tool output fed back as ``Observation:`` user messages."""

from __future__ import annotations

from ctxbench.datagen import content as C
from ctxbench.datagen import words as W
from ctxbench.datagen.agent_base import Agent, args_json
from ctxbench.datagen.builder import Builder
from ctxbench.datagen.facts import Fact
from ctxbench.transcripts.model import Message

_SYSTEM = """You are a data analysis agent working against the company's analytics database.
You solve the user's task step by step in the ReAct format. Every reply MUST be exactly:

Thought: <your reasoning about what to do next>
Action: <one of: sql_query, code_interpreter, chart_render, terminate>
Action Input: <a JSON object with the tool's arguments>

Tools:
- sql_query: {"sql": "<one read-only SQL statement>"} runs the statement on the warehouse (dialect: {dialect}).
  Results come back as an ASCII table. Never run DDL or DML.
- code_interpreter: {"code": "<python>"} runs Python 3.11 with pandas, numpy and matplotlib; stdout is returned.
- chart_render: {"chart_type": "bar|line|pie|scatter", "sql": "...", "title": "..."} renders a chart file.
- terminate: {"output": "<final answer in markdown>"} ends the task.

After each action you will receive the result as a message starting with "Observation:".
Database: {db}. Available schemas: {schemas}. Today is {today}.
Rules: prefer aggregated queries, always add LIMIT when exploring, state assumptions explicitly,
and keep numbers exact in the final report."""

_TASKS = (
    "Analyse last quarter's revenue by region and product line, find the three biggest drivers of the change "
    "versus the previous quarter, and prepare a short report with charts.",
    "Our churn went up in the spring cohorts. Figure out which segments and acquisition channels explain it and "
    "recommend where to focus retention work.",
    "Build a reconciliation between the orders table and the payments ledger for the last 90 days, quantify "
    "mismatches by status and city, and explain the largest discrepancies.",
    "Investigate why average delivery time regressed in Q3. Break it down by warehouse, carrier and product size.",
)


class SqlAgent(Agent):
    kind = "sql"

    def system_prompt(self) -> str:
        rng = self.rng
        return (
            _SYSTEM.replace("{dialect}", rng.choice(("PostgreSQL 15", "DuckDB", "MySQL 8")))
            .replace("{db}", f"analytics_{rng.choice(W.NOUNS)}")
            .replace("{schemas}", ", ".join(rng.sample(("sales", "finance", "ops", "marketing", "core", "raw"), 3)))
            .replace("{today}", C.timestamp(rng)[:10])
        )

    def task(self) -> str:
        return self.rng.choice(_TASKS) + "\n\n" + C.paragraph(self.rng, 2)

    def _react(self, b: Builder, thought: str, action: str, action_input: dict, needs: Fact | None = None) -> None:
        text = f"Thought: {thought}\nAction: {action}\nAction Input: {args_json(action_input)}"
        b.add(Message(role="assistant", content=text), needs=needs)

    def _observe(self, b: Builder, output: str, fact: Fact | None = None) -> None:
        b.add(Message(role="user", content=f"Observation: {self.fit(output)}"), states=fact)

    def _thought(self) -> str:
        rng = self.rng
        return rng.choice(
            (
                f"I need to {rng.choice(W.VERBS)} the {rng.choice(W.NOUNS)} data before comparing periods.",
                f"The previous result suggests the {rng.choice(W.ADJECTIVES)} {rng.choice(W.NOUNS)}s matter; "
                "let me break them down further.",
                f"Let me check the {rng.choice(W.NOUNS)} distribution to see whether outliers skew the average.",
                f"I should verify the totals against the {rng.choice(W.NOUNS)} table before charting.",
                "The numbers look plausible, but I want to confirm the join does not duplicate rows.",
            )
        )

    def step(self, b: Builder, size: int, hint: str | None = None, fact: Fact | None = None) -> None:
        rng = self.rng
        inject = fact.tool_lines if fact else []
        roll = rng.random()
        if hint == "chart" or (hint is None and roll < 0.08):
            title = f"{rng.choice(W.NOUNS).title()} by {rng.choice(('region', 'month', 'channel'))}"
            self._react(
                b,
                f"A chart will make the {title.lower()} trend clear.",
                "chart_render",
                {"chart_type": rng.choice(("bar", "line", "pie")), "sql": C.sql_query_text(rng), "title": title},
            )
            path = f"charts/{C.ident(rng)}.png"
            out = args_json({"status": "ok", "series": rng.randint(1, 8), "points": rng.randint(5, 400)})
            lines = inject or [f"Chart saved to {path} ({rng.randint(20, 300)} KB)"]
            self._observe(b, out + "\n" + "\n".join(lines), fact)
            return
        if hint == "schema" or (hint is None and roll < 0.16):
            self._react(
                b,
                "Let me look at the available columns before writing the query.",
                "sql_query",
                {
                    "sql": "SELECT table_name, column_name, data_type FROM information_schema.columns "
                    f"WHERE table_schema = '{rng.choice(('sales', 'finance', 'ops'))}' ORDER BY 1, 2"
                },
            )
            rows: list[str] = []
            while len(rows) * 12 < size:
                t = f"{rng.choice(('stg', 'fct', 'dim'))}_{rng.choice(W.NOUNS)}s"
                rows += [
                    f"| {t} | {rng.choice(W.NOUNS)}_{rng.choice(('id', 'at', 'cnt', 'amt', 'cd'))} | "
                    f"{rng.choice(('bigint', 'text', 'numeric(18,2)', 'date', 'timestamptz'))} |"
                    for _ in range(6)
                ]
            self._observe(b, C.insert_lines(rng, "\n".join(rows), inject), fact)
            return
        if hint is None and roll < 0.3:
            group = rng.choice(("region", "segment", "channel"))
            code = f"df = pd.read_sql({C.sql_query_text(rng)!r}, conn)\nprint(df.groupby({group!r}).sum().round(2))"
            self._react(b, self._thought(), "code_interpreter", {"code": code})
            self._observe(b, C.dataframe_text(rng, size))
            return
        if hint in ("config", "doc", "error") or roll < 0.4:
            target = rng.choice(("conf/warehouse.toml", "logs/etl_nightly.log", "README_data.md", "jobs/export.log"))
            code = f"with open({target!r}) as f:\n    print(f.read())"
            if hint == "error" or (hint is None and rng.random() < 0.25):
                code = (
                    f"import pandas as pd\ndf = pd.read_sql('''{C.sql_query_text(rng)}''', conn)\nprint(df.describe())"
                )
                body = C.log_lines(rng, size) + "\n" + C.traceback_text(rng)
            elif target.endswith(".toml"):
                body = C.config_text(rng, size)
            elif target.endswith(".md"):
                body = C.web_page(rng, "data dictionary", size, cjk_share=0.2)
            else:
                body = C.log_lines(rng, size)
            self._react(b, self._thought(), "code_interpreter", {"code": code})
            self._observe(b, C.insert_lines(rng, body, inject), fact)
            return
        table = f"{rng.choice(('fct', 'dim', 'stg'))}_{rng.choice(W.NOUNS)}s"
        sql = C.sql_query_text(rng, table)
        if size > 8000:
            sql = f"SELECT * FROM {table} WHERE created_at >= DATE '2024-01-01'"
        self._react(b, self._thought(), "sql_query", {"sql": sql})
        self._observe(b, C.insert_lines(rng, C.ascii_table(rng, size), inject), fact)

    def use(self, b: Builder, fact: Fact) -> None:
        rng = self.rng
        if fact.kind in ("column", "constraint"):
            self._react(b, fact.use_text, "sql_query", {"sql": fact.use_arg + " LIMIT 100"}, needs=fact)
            self._observe(b, C.ascii_table(rng, rng.randint(60, 400)))
        elif fact.kind == "path":
            self._react(
                b,
                fact.use_text,
                "code_interpreter",
                {"code": f"report.add_image({fact.use_arg!r})\nprint(report.save())"},
                needs=fact,
            )
            self._observe(b, f"report/draft.md updated ({rng.randint(2, 40)} KB)")
        else:
            self._react(
                b,
                fact.use_text,
                "code_interpreter",
                {
                    "code": f"import subprocess\nprint(subprocess.run({fact.use_arg!r}, shell=True, "
                    "capture_output=True, text=True).stdout)"
                },
                needs=fact,
            )
            self._observe(b, C.log_lines(rng, rng.randint(20, 200)))

    def final(self, b: Builder) -> None:
        rng = self.rng
        summary = "## Findings\n\n" + C.paragraph(rng, 3) + "\n\n" + C.ascii_table(rng, 150)
        self._react(b, "I now have everything needed for the final report.", "terminate", {"output": summary})
