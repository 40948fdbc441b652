"""A research agent: web_search, web_fetch (long pages, some Chinese/Japanese), write_note, read_notes."""

from __future__ import annotations

from ctxbench.datagen import content as C
from ctxbench.datagen import words as W
from ctxbench.datagen.agent_base import Agent, args_json
from ctxbench.datagen.builder import Builder
from ctxbench.datagen.facts import Fact
from ctxbench.transcripts.model import Message

_SYSTEM = """You are a careful research assistant. You answer the user's question by searching the web,
reading primary sources, and keeping structured notes. Tools:
- web_search(query, max_results?): returns a JSON list of {title, url, snippet, published}.
- web_fetch(url): returns the page converted to markdown (may be long; may be in Chinese or Japanese).
- write_note(title, content): saves a markdown note and returns its path.
- read_notes(path?): returns one note, or the index of all notes.
Cite every claim with its URL. Prefer primary sources and recent data; say when sources disagree.
Translate non-English material faithfully. Finish with a structured report without calling a tool."""


class ResearchAgent(Agent):
    kind = "research"

    def __init__(self, rng) -> None:  # noqa: ANN001 - random.Random, as in Agent
        super().__init__(rng)
        self.topic = rng.choice(W.RESEARCH_TOPICS)

    def system_prompt(self) -> str:
        return _SYSTEM

    def task(self) -> str:
        rng = self.rng
        return (
            f"I need a well-sourced briefing on {self.topic}: the current state, the main players, key numbers, "
            f"open disagreements, and what to watch over the next year. Include sources in Chinese and Japanese "
            f"where relevant. {C.paragraph(rng, 2)}"
        )

    def _url(self) -> str:
        rng = self.rng
        site, section, slug = rng.choice(W.SITES), rng.choice(W.NOUNS), C.ident(rng).replace("_", "-")
        return f"https://{site}/{section}s/{slug}-{rng.randint(10, 9999)}"

    def step(self, b: Builder, size: int, hint: str | None = None, fact: Fact | None = None) -> None:
        rng = self.rng
        inject = fact.tool_lines if fact else []
        roll = rng.random()
        if hint == "note" or (hint is None and roll < 0.1):
            title = f"{self.topic}: {rng.choice(W.NOUNS)} {rng.choice(('findings', 'numbers', 'open questions'))}"
            (cid,) = self.call(
                b,
                "Saving what I have so far.",
                [("write_note", {"title": title, "content": C.prose(rng, max(80, size // 2), 0.1)})],
            )
            out = inject or [f"Saved note to notes/{C.ident(rng)}.md ({rng.randint(100, 1500)} words)"]
            self.result(b, cid, "write_note", "\n".join(out), fact)
        elif hint is None and roll < 0.3:
            q = f"{self.topic} {rng.choice(W.NOUNS)} {rng.choice(('2024', 'statistics', 'report', '調査', '报告'))}"
            (cid,) = self.call(b, f"Searching for {q}.", [("web_search", {"query": q, "max_results": 10})])
            results: list[dict[str, str]] = []
            while len(results) * 70 < size:
                results.append(
                    {
                        "title": C.sentence(rng)[:70],
                        "url": self._url(),
                        "snippet": rng.choice((C.sentence(rng), C.cjk_paragraph(rng)[:80])),
                        "published": C.timestamp(rng)[:10],
                    }
                )
            self.result(b, cid, "web_search", args_json({"results": results}))
        elif hint is None and roll < 0.38:
            (cid,) = self.call(b, "Let me review my notes.", [("read_notes", {})])
            notes = "\n".join(f"- notes/{C.ident(rng)}.md — {C.sentence(rng)}" for _ in range(max(2, size // 25)))
            self.result(b, cid, "read_notes", notes)
        else:
            url = self._url()
            (cid,) = self.call(
                b,
                rng.choice(("Reading the source.", f"Fetching {url} for the details.", "")),
                [("web_fetch", {"url": url})],
            )
            page = C.web_page(rng, self.topic, size, cjk_share=rng.choice((0.05, 0.15, 0.3)))
            if hint == "config" and inject:
                page = C.insert_lines(rng, page, ["```", *inject, "```"])
            else:
                page = C.insert_lines(rng, page, inject)
            self.result(b, cid, "web_fetch", page, fact)

    def use(self, b: Builder, fact: Fact) -> None:
        rng = self.rng
        if fact.kind == "path":
            (cid,) = self.call(b, fact.use_text, [("read_notes", {"path": fact.use_arg})], needs=fact)
            self.result(b, cid, "read_notes", C.prose(rng, rng.randint(100, 500), 0.1))
            return
        note = {"title": f"{self.topic}: {fact.kind}", "content": f"{fact.use_text}\n\n{fact.use_arg}"}
        (cid,) = self.call(b, fact.use_text, [("write_note", note)], needs=fact)
        self.result(b, cid, "write_note", f"Saved note to notes/{C.ident(rng)}.md ({rng.randint(50, 400)} words)")

    def final(self, b: Builder) -> None:
        rng = self.rng
        text = f"# Briefing: {self.topic}\n\n" + "\n\n".join(
            f"## {h}\n\n{C.paragraph(rng, 3)}" for h in ("Current state", "Key numbers", "Disagreements", "Outlook")
        )
        b.add(Message(role="assistant", content=text))
