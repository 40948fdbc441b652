"""A small deterministic classifier of message text into a content kind.

Kinds: ``cjk`` (Chinese/Japanese/Korean text), ``json``, ``logs`` (timestamps, log levels,
tracebacks, test runner output), ``code`` (source, diffs, shell), ``prose``. Chars per token
differ a lot between them, which is why a single chars/token ratio misestimates.
"""

from __future__ import annotations

import json
import re

KINDS: tuple[str, ...] = ("code", "json", "prose", "logs", "cjk")
SAMPLE_CHARS = 4000  # classify on a bounded prefix: O(1) per message

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LOG_LINE = re.compile(
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\b\d\d:\d\d:\d\d\b|\b(?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\b"
    r"|^Traceback \(most recent call last\)|^\s+File \".*\", line \d+|^\s*at [\w.$<>]+\(|"
    r"\b(?:PASSED|FAILED|SKIPPED|XFAIL)\b|^=+ .* =+$|^\[\d+/\d+\]|^npm (?:ERR|WARN)"
)
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |return\b|if .*:$|elif |else:|for .*:$|while |try:|except\b|"
    r"with .*:$|async |await |function\b|const |let |var |public |private |static |#include|package |func |"
    r"fn |impl |struct |@@ |diff --git|\+\+\+ |--- a/|\$ |[{}()\[\];]+$)"
    r"|[;{]\s*$|^\s{4,}\S|^\d+:\s|=>|->|\w+\(.*\)\s*$|^\s*#|^\s*//"
)


def classify(text: str) -> str:
    """The content kind of a text (deterministic; looks at most at ``SAMPLE_CHARS`` chars)."""
    sample = text[:SAMPLE_CHARS]
    visible = [c for c in sample if not c.isspace()]
    if not visible:
        return "prose"
    if len(_CJK.findall(sample)) >= 0.2 * len(visible):
        return "cjk"
    stripped = sample.lstrip()
    if stripped[:1] in "{[" and _looks_like_json(text, stripped):
        return "json"
    lines = [line for line in sample.splitlines() if line.strip()]
    if not lines:
        return "prose"
    logs = sum(1 for line in lines if _LOG_LINE.search(line))
    code = sum(1 for line in lines if _CODE_LINE.search(line))
    if logs >= 0.3 * len(lines) and logs >= code * 0.5:
        return "logs"
    if code >= 0.3 * len(lines):
        return "code"
    return "prose"


def _looks_like_json(text: str, stripped_sample: str) -> bool:
    if len(text) <= SAMPLE_CHARS:
        try:
            json.loads(text)
            return True
        except ValueError:
            pass
    # Long or truncated JSON: mostly "key": value pairs.
    return stripped_sample.count('":') >= max(2, stripped_sample.count("\n") // 3)
