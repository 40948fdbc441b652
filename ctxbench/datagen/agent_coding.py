"""A coding agent with OpenAI-style tool calls: read_file, grep, glob, bash, edit/write/create_file."""

from __future__ import annotations

from ctxbench.datagen import content as C
from ctxbench.datagen import words as W
from ctxbench.datagen.agent_base import Agent
from ctxbench.datagen.builder import Builder
from ctxbench.datagen.facts import Fact
from ctxbench.transcripts.model import Message

_SYSTEM = """You are an autonomous software engineering agent working in the repository at /app ({repo}).
You can call these tools:
- read_file(path, offset?, limit?): returns the file with line numbers.
- grep(pattern, path?, glob?): ripgrep over the repository; returns path:line:text matches.
- glob(pattern): lists files matching a glob pattern.
- bash(command, timeout?): runs a shell command and returns stdout and stderr.
- edit_file(path, old_string, new_string): replaces one exact occurrence in a file.
- write_file(path, content): overwrites a file. create_file(path, content): creates a new file.
Work in small verified steps: read before you edit, run the tests after each change, and never
commit. Keep changes minimal and in the style of the surrounding code. When the task is complete,
reply with a short summary of what changed and why, without calling a tool."""

_TASKS = (
    "The nightly export job crashes intermittently with a KeyError when a tenant has no region set. Find the root "
    "cause, fix it, and add a regression test.",
    "Add rate limiting to the public search API (per API key), with configuration in settings and tests for the "
    "burst and steady-state cases.",
    "Refactor the billing module so invoice rounding happens in one place; the totals currently differ by a cent "
    "between the PDF and the CSV export. Keep behaviour otherwise identical.",
    "Upgrade the ingestion pipeline to stream records instead of loading whole files into memory; large uploads "
    "currently OOM the worker.",
)


class CodingAgent(Agent):
    kind = "coding"

    def system_prompt(self) -> str:
        return _SYSTEM.replace("{repo}", f"acme-{self.rng.choice(W.PY_MODULES)}-service")

    def task(self) -> str:
        return self.rng.choice(_TASKS) + "\n\nContext from the ticket: " + C.paragraph(self.rng, 3)

    def _say(self) -> str:
        rng = self.rng
        return rng.choice(
            (
                "",
                f"Let me look at how the {rng.choice(W.NOUNS)} is {C.past(rng.choice(W.VERBS))}.",
                "Running the tests to see the current state.",
                f"I'll check where `{C.ident(rng)}` is used.",
                "That explains part of it; let me read the caller as well.",
                f"The failure points at the {rng.choice(W.NOUNS)} layer. Inspecting it.",
            )
        )

    def _numbered(self, text: str, start: int = 1) -> str:
        return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.split("\n"), start))

    def step(self, b: Builder, size: int, hint: str | None = None, fact: Fact | None = None) -> None:
        rng = self.rng
        inject = fact.tool_lines if fact else []
        roll = rng.random()
        if hint == "grep" or (hint is None and roll < 0.15):
            pattern = C.ident(rng)
            (cid,) = self.call(b, self._say(), [("grep", {"pattern": pattern, "path": "src"})])
            lines: list[str] = []
            while len(lines) * 18 < size:
                lines.append(
                    f"{C.src_path(rng)}:{rng.randint(1, 900)}:    {pattern}({rng.choice(W.NOUNS)}, "
                    f"{rng.choice(W.NOUNS)}_id)"
                )
            self.result(b, cid, "grep", C.insert_lines(rng, "\n".join(lines), inject), fact)
        elif hint == "error" or (hint is None and roll < 0.35):
            cmd = rng.choice(("python -m pytest -x -q", "python -m pytest tests/ -q", "make test", "tox -e py311"))
            (cid,) = self.call(b, self._say(), [("bash", {"command": cmd})])
            out = C.pytest_output(rng, size, failures=rng.randint(1, 3))
            self.result(b, cid, "bash", C.insert_lines(rng, out, inject, where=0.9 if inject else None), fact)
        elif hint == "config" or (hint is None and roll < 0.42):
            cmd = rng.choice(("cat requirements.lock", "env | sort", "cat deploy/settings.toml"))
            (cid,) = self.call(b, self._say(), [("bash", {"command": cmd})])
            if cmd.startswith("cat requirements"):
                body = "\n".join(
                    f"{n}=={rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
                    for n in rng.sample(W.NOUNS, min(len(W.NOUNS), max(5, size // 8)))
                )
            else:
                body = C.config_text(rng, size)
            self.result(b, cid, "bash", C.insert_lines(rng, body, inject), fact)
        elif hint is None and roll < 0.5:
            (cid,) = self.call(b, self._say(), [("glob", {"pattern": f"src/**/*{rng.choice(W.NOUNS)}*.py"})])
            self.result(b, cid, "glob", "\n".join(C.src_path(rng) for _ in range(max(1, size // 12))))
        elif hint is None and roll < 0.62:
            path = C.src_path(rng)
            name = rng.choice(("edit_file", "edit_file", "write_file", "create_file"))
            if name == "edit_file":
                args = {"path": path, "old_string": C.python_function(rng), "new_string": C.python_function(rng)}
                out = f"Applied 1 edit to {path} ({rng.randint(1, 30)} lines changed)"
            else:
                body = C.python_module(rng, max(60, size // 2))
                args = {"path": path, "content": body}
                out = f"{'Created' if name == 'create_file' else 'Wrote'} {path} ({len(body.encode())} bytes)"
            (cid,) = self.call(b, self._say(), [(name, args)])
            self.result(b, cid, name, out)
        else:
            # read one file, or two in parallel (two tool results for one call)
            n = 2 if rng.random() < 0.2 and size > 400 else 1
            exts = [rng.choice(("py", "py", "py", "js", "md", "yaml")) for _ in range(n)]
            paths = [C.src_path(rng, e) for e in exts]
            ids = self.call(b, self._say(), [("read_file", {"path": p}) for p in paths])
            for k, (cid, ext) in enumerate(zip(ids, exts)):
                part = size // n
                if ext == "py":
                    text = C.python_module(rng, part)
                elif ext == "js":
                    text = C.js_module(rng, part)
                elif ext == "md":
                    text = C.web_page(rng, "design notes", part, cjk_share=0.1)
                else:
                    text = C.config_text(rng, part)
                if k == 0 and inject:
                    text = C.insert_lines(rng, text, inject)
                self.result(b, cid, "read_file", self._numbered(text), fact if k == 0 else None)

    def use(self, b: Builder, fact: Fact) -> None:
        rng = self.rng
        if fact.kind == "path":
            args = {"path": fact.use_arg, "old_string": C.python_function(rng), "new_string": C.python_function(rng)}
            (cid,) = self.call(b, fact.use_text, [("edit_file", args)], needs=fact)
            self.result(b, cid, "edit_file", f"Applied 1 edit to {fact.use_arg} ({rng.randint(2, 25)} lines changed)")
            return
        (cid,) = self.call(b, fact.use_text, [("bash", {"command": fact.use_arg})], needs=fact)
        self.result(b, cid, "bash", C.log_lines(rng, rng.randint(10, 150)))

    def final(self, b: Builder) -> None:
        rng = self.rng
        text = "Summary of changes:\n\n" + "\n".join(f"- {C.src_path(rng)}: {C.sentence(rng)}" for _ in range(5))
        text += "\n\nAll tests pass locally (`python -m pytest -q`)."
        b.add(Message(role="assistant", content=text))
