"""Counting appended and line-structured text from pieces, exactly.

In the split patterns of cl100k, o200k, Llama 3, Qwen and Tekken a newline ends its
pre-token when what follows it, up to the next non-whitespace character, holds no further
line break, unless ``/`` follows it directly (o200k's punctuation pre-token may take
``\n/``). No alternative of those patterns matches across such a point, and the
whitespace alternatives stop at the last newline of a run, so the point is a pre-token
boundary whatever text follows. BPE never merges across pre-tokens, so

    count(text) == count(text[:p]) + count(text[p:])   for every such line start p.

This lets a tokenizer count ``content + suffix`` from the content's known count and its last
line, and count a block of lines (DB-GPT's task-progress block, rebuilt every step) line by
line with the unchanged lines remembered. The same identity holds at a space that follows a
non-whitespace character (``SPACE_AFTER_WORD``): DB-GPT's ``name arguments`` text is counted
from the arguments' own count. It holds too at a ``/`` that follows an ASCII letter or digit
(``SLASH_AFTER_WORD``). So appended text is counted from the content's last word (the text
after its last cut point of any kind), and a new line is counted as its remembered head (up to
its last cut point: ``[Full detail available at: /root/.dbgpt/.../conv``) and the rest (``/step_007_grep.json]``).
Tokenizers opt in (``Tokenizer.splits_at_line_starts``); ``tests/test_line_starts.py`` checks
each identity on adversarial text for each of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import islice

# A line start that is a pre-token boundary: after "\n", before non-line-break whitespace and
# then any non-whitespace, or directly before a non-whitespace character other than "/".
# Python's \s covers every Unicode White_Space character (and a few more), so this is safe.
_AFTER_NEWLINE = r"[^\S\r\n]+\S|[^\s/]"  # what may follow "\n" at a line start
LINE_START = re.compile(rf"\n(?={_AFTER_NEWLINE})")
STARTS_LINE = re.compile(_AFTER_NEWLINE).match  # does this text, put after a "\n", start a line there?
# A space right after a non-whitespace character starts a pre-token too: no alternative of those
# patterns matches a non-whitespace character followed by a space (letters, digits and punctuation
# runs end before it; whitespace runs start with whitespace). Python's \S excludes every Unicode
# White_Space character, so a match here is one for the tokenizers' regex engines as well.
SPACE_AFTER_WORD = re.compile(r"(?<=\S) ")
# A "/" right after a letter or digit starts a pre-token: letter and digit runs never take a "/"
# (only a pre-token that starts with one may, and o200k's punctuation runs end with "/"s, which
# is why the character before must be a letter or digit). ASCII only: Python's Unicode tables
# and the tokenizers' regex engines may class a newer letter differently.
SLASH_AFTER_WORD = re.compile(r"(?<=[0-9A-Za-z])/")
MAX_TAIL = 4096  # look this far back for the last line start; beyond it, count in full
MEMO_PIECE_CHARS = 2048  # only pieces this short are remembered (progress lines, a task line)
MEMO_CHARS = 1 << 20  # remembered characters before the memo is cleared: memory stays bounded


def last_line_start(text: str, within: int = MAX_TAIL) -> int | None:
    """The last line start in the final ``within`` characters of ``text``, or None."""
    low, pos = max(0, len(text) - within), len(text)
    while (nl := text.rfind("\n", low, pos)) >= 0:
        if LINE_START.match(text, nl):
            return nl + 1
        pos = nl
    return None


def last_word_start(text: str, low: int = 0) -> int:
    """The last position after ``low`` (and after 0) at which a pre-token starts by
    ``SPACE_AFTER_WORD`` or ``SLASH_AFTER_WORD``, or -1."""
    high = len(text)
    while (space := text.rfind(" ", low, high)) > 0 and text[space - 1].isspace():
        high = space  # a run of spaces: only its first one follows a non-space character
    low = max(low, space + 1)
    high = len(text)
    while (slash := text.rfind("/", low, high)) > 0:
        before = text[slash - 1]
        if before.isascii() and before.isalnum():
            return slash
        high = slash
    return space if space > 0 else -1


def starts_pre_token(text: str, suffix: str) -> bool:
    """Whether a pre-token starts where ``suffix`` follows ``text`` (by ``SPACE_AFTER_WORD`` or
    ``SLASH_AFTER_WORD``): then ``count(text + suffix) == count(text) + count(suffix)``."""
    if not text or not suffix:
        return True
    before, first = text[-1], suffix[0]
    if first == " ":
        return not before.isspace()
    return first == "/" and before.isascii() and before.isalnum()


def last_cut(text: str, within: int = MAX_TAIL) -> int | None:
    """The last pre-token start of any kind (line start, ``SPACE_AFTER_WORD``,
    ``SLASH_AFTER_WORD``) in the final ``within`` characters of ``text``, or None. Each is
    decided by the text before it or by what follows within ``text``: whatever is appended
    after ``text``, a pre-token still starts there."""
    low = max(0, len(text) - within)
    word = last_word_start(text, low)
    line = last_line_start(text, len(text) - max(low, word))
    if line is not None and line > word:
        return line
    return word if word > 0 else None


def line_pieces(text: str) -> list[str]:
    """``text`` cut at every line start; the pieces join back to ``text``."""
    lines = text.split("\n")  # in C; then only the line starts' condition is checked per line
    pieces: list[str] = []
    current = lines[0]
    starts = STARTS_LINE
    for line in islice(lines, 1, None):
        if starts(line):
            pieces.append(current + "\n")
            current = line
        else:
            current = f"{current}\n{line}"
    pieces.append(current)
    return pieces


class PieceCounter:
    """Counts text as the sum of its line pieces, remembering each piece's count."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self._count = count
        self._memo: dict[str, int] = {}
        # line -> count(line + "\n") for lines that start a line (each follows a line break that is
        # a line start: DB-GPT's progress block, rebuilt every step), looked up without cutting
        # the text into pieces; first lines that do not start a line are kept apart.
        self._lines: dict[str, int] = {}
        self._firsts: dict[str, int] = {}
        self._memo_chars = 0

    def __call__(self, text: str) -> int:
        lines = text.split("\n")
        last = lines.pop()
        if not lines:
            tokens = self._memo.get(last)
            return self._new_line(last) if tokens is None else tokens
        counts, end = self._line_counts(lines, last)
        if end == len(lines):
            tokens = self._memo.get(last)
            return sum(counts) + (self._new_line(last) if tokens is None else tokens)
        if end == 0:
            return self._pieces_sum(text)
        # The lines before ``end`` from their remembered counts, the rest (from a line start) as
        # pieces: DB-GPT's progress block is its step lines and then its footer, whose blank line
        # is not a line start; only the footer and the question are cut into pieces each step.
        offset = sum(map(len, islice(lines, end))) + end
        return sum(islice(counts, end)) + self._pieces_sum(text[offset:])

    def _line_counts(self, lines: list[str], last: str) -> tuple[list[int], int]:
        """``count(line + "\n")`` of each line before ``end``, and ``end``: the line before the
        first line break that is not a line start (``len(lines)`` when each line after the first,
        and ``last``, starts a line). From ``lines[end]`` on, the text is counted as pieces.
        Remembered counts are looked up in C (map); ``_lines`` only holds lines that start a
        line, so only the others are checked (DB-GPT's progress block: 52 lines, one or two new
        each step)."""
        found = list(map(self._lines.get, lines))
        if None in found:
            i = found.index(None)
            while True:
                line = lines[i]
                if STARTS_LINE(line) is not None:
                    found[i] = self._new_start(line)
                elif i > 0:  # a line break that is not a line start: the pieces start a line earlier
                    return found, i - 1  # type: ignore[return-value]  # no None before i
                else:  # the first line follows no line break: it need not start a line
                    tokens = self._firsts.get(line)
                    found[i] = self._remember(self._firsts, line, line + "\n") if tokens is None else tokens
                try:
                    i = found.index(None, i + 1)
                except ValueError:
                    break
        end = len(lines) if STARTS_LINE(last) is not None else len(lines) - 1
        return found, end  # type: ignore[return-value]  # no None left

    def _new_start(self, line: str) -> int:
        """``count(line + "\n")`` of a new line that starts a line, remembered: as its first word
        and the rest (a ``SPACE_AFTER_WORD`` start), each remembered, so DB-GPT's notice
        ``(52 earlier steps, snapshots in op_snapshots/)``, new each step, is counted as ``(52``."""
        space = line.find(" ", 1)
        if space < 0 or line[space - 1].isspace():
            return self._remember(self._lines, line, line + "\n")
        tokens = self.remembered(line[space:] + "\n") + self.remembered(line[:space])
        return self._remember(self._lines, line, line + "\n", tokens)

    def _pieces_sum(self, text: str) -> int:
        """The general case: the text cut at its line starts, each piece remembered."""
        memo = self._memo
        total = 0
        pieces = line_pieces(text)
        last = pieces.pop()
        for piece in pieces:
            tokens = memo.get(piece)
            total += self._remember(memo, piece, piece) if tokens is None else tokens
        tokens = memo.get(last)
        return total + (self._new_line(last) if tokens is None else tokens)

    def _remember(self, memo: dict[str, int], key: str, piece: str, tokens: int | None = None) -> int:
        """Count ``piece`` (unless its ``tokens`` are given) and, if it is short, remember it
        under ``key`` in ``memo``."""
        if tokens is None:
            tokens = self._count(piece)
        if len(piece) <= MEMO_PIECE_CHARS:
            if self._memo_chars + len(piece) > MEMO_CHARS:
                self._memo.clear()
                self._lines.clear()
                self._firsts.clear()
                self._memo_chars = 0
            memo[key] = tokens
            self._memo_chars += len(piece)
        return tokens

    def _new_line(self, line: str) -> int:
        """Count a line not remembered (no line start in it) as its head up to its last word
        start, remembered (a pointer's constant words and folders), and the rest."""
        cut = last_word_start(line)
        if cut <= 0:
            return self._remember(self._memo, line, line)
        return self._remember(self._memo, line, line, self.remembered(line[:cut]) + self._count(line[cut:]))

    def appended(self, text: str, text_tokens: int, suffix: str) -> int:
        """Tokens of ``text + suffix`` given ``text_tokens == count(text)``: only the text after
        its last pre-token start (its last word) is counted again, together with the suffix."""
        if not text or starts_pre_token(text, suffix):
            return text_tokens + self(suffix)
        cut = last_cut(text)
        if cut is None:
            return self._count(text + suffix)
        tail = text[cut:]  # no pre-token starts inside: one remembered piece
        tail_tokens = self._memo.get(tail)
        return text_tokens - (self(tail) if tail_tokens is None else tail_tokens) + self(tail + suffix)

    def remembered(self, piece: str) -> int:
        """Tokens of a short piece that recurs (a tool name, the start of its arguments), remembered."""
        tokens = self._memo.get(piece)
        return self._remember(self._memo, piece, piece) if tokens is None else tokens
