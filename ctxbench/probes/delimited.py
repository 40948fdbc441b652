"""Delimited spans (an issue in its tags, an XML tool call and its parameters, a SEARCH/REPLACE
block) found in time linear in the text.

A lazy regex such as ``<(issue)>\\s*(.*?)\\s*</\\1>`` scans to the end of the text from every opening
that has no closing: quadratic on hostile input (a message of 50,000 unclosed ``<issue>`` tags held
extraction for 300 s). Here each kind of opening looks for its closing once: when an opening has
none, no later opening of that kind has one either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    name: str  # the opening's first group (a tag's name), or "" when it has none
    start: int  # where the opening starts
    body_start: int  # where the opening ends
    body_end: int  # where the closing starts
    end: int  # where the closing ends


def delimited(
    text: str, opening: re.Pattern[str], closing: Callable[[str], re.Pattern[str]], ignore_case: bool = False
) -> Iterator[Span]:
    """Non-overlapping spans, leftmost first, as ``opening(.*?)closing`` would find them: each
    opening with the first closing after it (``closing(name)`` gives the closing of an opening
    whose first group is ``name``; ``ignore_case``: names that differ in case share one closing)."""
    dead: set[str] = set()  # names whose closing is nowhere after some opening: nor after later ones
    closings: dict[str, re.Pattern[str]] = {}
    pos = 0
    while (m := opening.search(text, pos)) is not None:
        name = (m.group(1) or "") if opening.groups else ""
        name = name.lower() if ignore_case else name
        if name in dead:
            pos = m.start() + 1
            continue
        if name not in closings:
            closings[name] = closing(name)
        end = closings[name].search(text, m.end())
        if end is None:
            dead.add(name)
            pos = m.start() + 1
            continue
        yield Span(name, m.start(), m.end(), end.start(), end.end())
        pos = max(end.end(), m.start() + 1)


def closing_tag(flags: int = 0) -> Callable[[str], re.Pattern[str]]:
    """The closing of an XML-style tag: ``</name>``."""
    return lambda name: re.compile(f"</{re.escape(name)}>", flags)


def first_body(
    text: str, *kinds: tuple[re.Pattern[str], Callable[[str], re.Pattern[str]], bool]
) -> tuple[int, int] | None:
    """Where the leftmost span of any of ``kinds`` (opening, closing, ignore_case) holds its body,
    without the whitespace around it: ``(start, end)``."""
    spans = [next(delimited(text, opening, closing, fold), None) for opening, closing, fold in kinds]
    first = min((s for s in spans if s is not None), key=lambda s: s.start, default=None)
    if first is None:
        return None
    raw = text[first.body_start : first.body_end]
    start = first.body_start + len(raw) - len(raw.lstrip())
    return start, max(start, first.body_start + len(raw.rstrip()))


def bodies(text: str, opening: re.Pattern[str], closing: Callable[[str], re.Pattern[str]]) -> list[tuple[str, str]]:
    """``(name, body)`` of every span, in order: what ``re.findall`` of ``opening(.*?)closing`` gives."""
    return [(s.name, text[s.body_start : s.body_end]) for s in delimited(text, opening, closing)]


def cut(text: str, opening: re.Pattern[str], closing: Callable[[str], re.Pattern[str]], fill: bool = False) -> str:
    """The text without its spans, delimiters and all (``fill``: each turned into spaces, offsets kept)."""
    out, at = [], 0
    for s in delimited(text, opening, closing):
        out += [text[at : s.start], " " * (s.end - s.start) if fill else ""]
        at = s.end
    return "".join(out) + text[at:]
