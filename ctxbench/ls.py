"""``ctxbench ls [kind]``: every layer, strategy, estimator, judge, tokenizer and importer by its
short name, with its parameters: type and default from the signature, range and one-line
description from each parameter's declaration (``ctxbench.core.Param``), and the strategy configs
(``strategy=NAME``) with their ``params``. Plugins (entry points) are listed with their origin."""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from pathlib import Path
from typing import Any

from ctxbench.registry import KINDS, entries, parameters, summary

CONFIGS = Path(__file__).resolve().parent / "configs"


def strategy_configs(folders: list[Path]) -> list[dict[str, Any]]:
    """The strategy configs (``strategy=NAME``): name, what the comment says, its ``params``."""
    import yaml

    found: dict[str, dict[str, Any]] = {}
    for folder in folders:  # later folders (the user's ./configs) replace packaged names
        for file in sorted((folder / "strategy").glob("*.yaml")):
            text = file.read_text("utf-8")
            data = yaml.safe_load(text) or {}
            block = []  # the comment the file opens with: its first paragraph
            for line in text.splitlines():
                if not line.startswith("#"):
                    break
                block.append(line.lstrip("#").strip())
            comment = described(" ".join(block))
            found[file.stem] = {
                "name": file.stem,
                "about": data.get("description") or comment,
                "target": data.get("_target_", ""),
                "params": data.get("params") or {},
                "file": str(file),
            }
    return list(found.values())


# A citation of a file a user of the installed package does not have: "(shared/seeds/x.txt, reference.md 1a)".
CITATION = re.compile(r"\s*\([^()]*(?:\.md\b|\.txt\b|\.py\b|seeds/|/(?=[,)\s]))[^()]*\)")
LONG = 300  # a first sentence longer than this is said up to its first colon


def described(text: str) -> str:
    """A description for the listing: the first sentence, whole (never cut mid-sentence), without
    citations of files the user does not have and without reST markup."""
    text = " ".join(text.replace("``", "").split())
    text = CITATION.sub("", text)
    match = re.search(r"(?<=[.!?])\s+(?=[A-Z(`])", text)
    sentence = (text[: match.start()] if match else text).strip()
    if len(sentence) > LONG and ": " in sentence:  # "The 5-layer strategy: ... 600 characters of detail"
        sentence = sentence.split(": ", 1)[0].rstrip(".") + "."
    return sentence


def tokenizer_aliases() -> dict[str, list[str]]:
    """Model names that pick each tokenizer (``model.tokenizer`` may be any of them)."""
    from ctxbench.tokens import tokenizers

    out: dict[str, list[str]] = {}
    for alias, name in sorted(tokenizers._ALIASES.items()):
        out.setdefault(name, []).append(alias)
    return out


def listing(kinds: list[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    aliases = tokenizer_aliases() if "tokenizer" in kinds else {}
    for kind in kinds:
        rows = []
        for entry in entries(kind):
            row: dict[str, Any] = {"name": entry.name, "target": entry.dotted, "origin": entry.origin}
            if kind == "tokenizer":
                row["about"] = "models: " + (", ".join(aliases.get(entry.name, [])) or "-")
            else:
                try:
                    obj = entry.load()
                except Exception as exc:  # a broken plugin is listed with its error, not a traceback
                    row["error"] = f"cannot load: {exc}"
                else:
                    row["about"] = described(summary(obj, paragraph=True))
                    row["parameters"] = [str(p) for p in parameters(obj)] if kind != "importer" else []
            rows.append(row)
        out[kind] = rows
    if "strategy" in kinds:
        out["strategy config"] = strategy_configs([CONFIGS, Path("configs")])
    return out


def plural_of(kind: str) -> str:
    return "strategies" if kind == "strategy" else f"{kind}s"


def _wrapped(name: str, about: str, width: int = 120) -> list[str]:
    """``  name  about``, the description wrapped under itself rather than cut."""
    head = f"  {name:<26} "
    return textwrap.wrap(about, width, initial_indent=head, subsequent_indent=" " * len(head)) or [head.rstrip()]


def render(found: dict[str, list[dict[str, Any]]]) -> str:
    lines: list[str] = []
    for kind, rows in found.items():
        if kind == "strategy config":
            lines.append("strategy configs (ctxbench run strategy=NAME; strategy.params.KEY=VALUE):")
            for row in rows:
                lines += _wrapped(row["name"], row["about"])
                if row["params"]:
                    params = "params: " + ", ".join(f"{k}={v}" for k, v in row["params"].items())
                    lines += textwrap.wrap(params, 120, initial_indent="      ", subsequent_indent="        ")
            lines.append("")
            continue
        how = "_target_: NAME in a config" if kind in ("layer", "strategy", "estimator", "judge") else ""
        head = {"tokenizer": "model.tokenizer=NAME", "importer": "ctxbench import --format NAME"}.get(kind, how)
        plural = plural_of(kind)
        lines.append(f"{plural} ({head}):")
        for row in rows:
            origin = "" if row["origin"] == "ctxbench" else f"  [from {row['origin']}]"
            about = row.get("about") or row.get("error") or ""
            shown = row["target"] if kind != "tokenizer" else ""
            lines += _wrapped(row["name"], f"{about or shown}{origin}")
            for parameter in row.get("parameters") or []:
                lines += textwrap.wrap(parameter, 120, initial_indent="      ", subsequent_indent="          ")
        lines.append("")
    return "\n".join(lines).rstrip()


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="ctxbench ls",
        description="List layers, strategies (classes and configs), estimators, judges, tokenizers and "
        "importers by short name, with parameters and defaults. Plugins add entries through the entry-point "
        "groups ctxbench.layers, ctxbench.strategies, ... (docs/extending.md).",
    )
    parser.add_argument("kind", nargs="?", choices=[*KINDS, *(plural_of(k) for k in KINDS)], help="only this kind")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    singular = {plural_of(k): k for k in KINDS}
    kinds = [singular.get(args.kind, args.kind)] if args.kind else KINDS
    found = listing(list(kinds))
    print(json.dumps(found, indent=1) if args.json else render(found))
    return 0
