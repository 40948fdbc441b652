"""Which probe golds a text holds, found once per text.

A gold is kept when its normalised form (``normalise``) is a substring of a message's
normalised text. Normalising a long tool result costs more than searching it, and most
messages hold no gold at all, so each gold has an *anchor*: its longest word, which has no
whitespace and so is a substring of the case-folded text wherever the gold is a substring of
the normalised text. A text is case-folded and searched for the anchors (one C-level
``in`` per distinct anchor: at this size, 16-48 golds, faster than an Aho-Corasick pass or a
compiled alternation, measured in docs/performance.md); only a text that holds an anchor of
a gold of more than one word is normalised, to confirm it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

EMPTY: frozenset[int] = frozenset()
LINES_KEPT = 200_000  # lines anchors_in_lines remembers before it starts again (memory stays bounded)
LINE_FORM_CHARS = 4 << 20  # characters of lines normalised_by_lines remembers before it starts again


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used for matching gold values: case-folded, every
    whitespace run one space, no space at either end. (Equal to ``re.sub(r"\\s+", " ", text)
    .casefold().strip()``, checked for every code point: case folding neither makes nor
    removes whitespace, and ``\\s`` is ``str.isspace``; splitting is three times faster.)"""
    return " ".join(text.casefold().split())


class GoldIndex:
    """The distinct normalised golds of some probes, numbered in the order they were added, and
    which of them a text holds. ``version`` changes whenever a gold is added: what was found
    with an older version may miss the new golds."""

    def __init__(self) -> None:
        self.golds: list[str] = []
        self._ids: dict[str, int] = {}
        self.anchors: list[str] = []  # distinct; anchors[a] is the longest word of golds_of[a]'s golds
        self._anchor_ids: dict[str, int] = {}
        self._golds_of: list[list[int]] = []  # per anchor: the golds it stands for
        self.longest_anchor = 0
        self.longest_gold = 0
        self.version = 0
        self._line_anchors: dict[str, frozenset[int]] = {}  # anchors_in_lines' lines seen
        self._line_forms: dict[str, str] = {}  # normalised_by_lines' lines seen, normalised
        self._line_form_chars = 0

    def ids(self, golds: Iterable[str]) -> tuple[int, ...]:
        """The numbers of normalised, non-empty ``golds`` (in their order), added if new."""
        out = []
        for gold in golds:
            number = self._ids.get(gold)
            if number is None:
                number = self._ids[gold] = len(self.golds)
                self.golds.append(gold)
                self.longest_gold = max(self.longest_gold, len(gold))
                self._anchor(gold, number)
                self._line_anchors.clear()
                self.version += 1
            out.append(number)
        return tuple(out)

    def _anchor(self, gold: str, number: int) -> None:
        word = max(gold.split(" "), key=len)
        anchor = self._anchor_ids.get(word)
        if anchor is None:
            anchor = self._anchor_ids[word] = len(self.anchors)
            self.anchors.append(word)
            self._golds_of.append([])
            self.longest_anchor = max(self.longest_anchor, len(word))
        self._golds_of[anchor].append(number)

    def anchors_in(self, folded: str) -> frozenset[int]:
        """The anchors a case-folded text holds."""
        hits = [a for a, anchor in enumerate(self.anchors) if anchor in folded]
        return frozenset(hits) if hits else EMPTY

    def anchors_in_lines(self, text: str) -> frozenset[int]:
        """``anchors_in(text.casefold())``, remembered line by line: an anchor holds no whitespace,
        so it never spans a line break. For texts made of lines seen before (the appended parts of
        messages: a progress block that gains a line a call, the same pointer notices), only the new
        lines are searched."""
        known = self._line_anchors
        lines = set(text.split("\n"))
        new = lines.difference(known)
        if new:
            if len(known) > LINES_KEPT:
                known.clear()
                new = lines
            hits = self.anchors_in("\n".join(new).casefold())  # one search for all the new lines
            if not hits:
                known.update(dict.fromkeys(new, EMPTY))
            else:
                for line in new:
                    folded = line.casefold()
                    held = [a for a in hits if self.anchors[a] in folded]
                    known[line] = frozenset(held) if held else EMPTY
        return EMPTY.union(*map(known.__getitem__, lines))

    def normalised_by_lines(self, text: str) -> str:
        """``normalise(text)``, from its lines' normalised forms, remembered: the words of a text
        are those of its lines in turn, so its form is theirs joined by single spaces (those
        with words). DB-GPT's progress block, one line longer each call, holds the task: the new
        probe types' golds of several words are confirmed in it at every call."""
        forms = self._line_forms
        lines = text.split("\n")
        found = list(map(forms.get, lines))
        position = _find(found, None, 0)
        while position >= 0:
            line = lines[position]
            if self._line_form_chars > LINE_FORM_CHARS:
                forms.clear()
                self._line_form_chars = 0
            found[position] = forms[line] = normalise(line)
            self._line_form_chars += len(line)
            position = _find(found, None, position + 1)
        return " ".join(filter(None, found))

    def golds_in(
        self, anchors: frozenset[int], normalised: Callable[[], str], known: frozenset[int] = EMPTY
    ) -> frozenset[int]:
        """The golds a text holds, given the anchors its case-folded form holds and a way to get
        its normalised form (asked for only when a gold of several words must be confirmed);
        ``known``: golds it is known to hold (``normalised`` may then be a part of the text that
        holds every other one: see ``seam_words``)."""
        if not anchors:
            return known
        held = []
        text: str | None = None
        for anchor in anchors:
            word = self.anchors[anchor]
            for number in self._golds_of[anchor]:
                gold = self.golds[number]
                if gold == word or number in known:  # one word: the anchor is the gold; or known
                    held.append(number)
                    continue
                if text is None:
                    text = normalised()
                if gold in text:
                    held.append(number)
        return frozenset(held) | known if held else known

    def seam_words(self, text: str) -> str:
        """The end of ``text`` that a gold found in ``text + suffix`` but not in ``text`` must
        start in: ``normalise(text)`` is a prefix of ``normalise(text + suffix)``, so such a gold
        ends after it and starts within its last ``longest_gold - 1`` characters, which its last
        ``longest_gold // 2 + 1`` words hold (each a character at least, and a space between two). Those words,
        and a space when ``text`` ends in whitespace (its last word then ends there): then
        ``normalise(seam_words(text) + suffix)`` is the end of ``normalise(text + suffix)``."""
        most = self.longest_gold // 2 + 1
        words = text.rsplit(None, most)
        tail = " ".join(words[1:] if len(words) > most else words)
        return tail + " " if text[-1:].isspace() else tail


def _find(items: list[str | None], value: None, start: int) -> int:
    """The first place of ``value`` in ``items`` from ``start`` on, or -1 (searched in C)."""
    try:
        return items.index(value, start)
    except ValueError:
        return -1
