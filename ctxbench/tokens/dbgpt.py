"""DB-GPT's token counting (``ContextBudgetTracker.count_messages``), as an estimator.

DB-GPT counts each message's text on its own with tiktoken's encoding for the model name
(``encoding_for_model``; a name tiktoken does not know, e.g. Claude, Llama or Qwen, is
counted with cl100k_base) and falls back to ``len(text) // 4`` when the tokenizer cannot
count. It adds no chat framing, so it undercounts every request by the framing tokens and,
for non-OpenAI models, by the tokenizer mismatch: real sources of estimate error.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Annotated

from ctxbench.core import Param
from ctxbench.errors import ConfigError
from ctxbench.tokens.base import content_key
from ctxbench.tokens.estimators import Estimator
from ctxbench.tokens.line_starts import SPACE_AFTER_WORD, STARTS_LINE, last_cut
from ctxbench.tokens.tokenizers import Tokenizer, arguments_key, get_tokenizer, litellm_tokenizer_dir
from ctxbench.transcripts.model import Message, Transcript
from ctxbench.transcripts.rounds import is_observation

log = logging.getLogger(__name__)
FALLBACK_ENCODING = "cl100k_base"
MAX_BLOCK_PIECES = 256  # a progress block's head, notice and tail counts kept (the notice changes each step)


def dbgpt_encoding_name(model: str) -> str:
    """The tiktoken encoding DB-GPT uses for ``model`` (cl100k_base when tiktoken does not know it)."""
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(litellm_tokenizer_dir()))
    import tiktoken

    try:
        return tiktoken.encoding_name_for_model(model)
    except KeyError:
        return FALLBACK_ENCODING


def message_text(message: Message) -> str:
    """The text DB-GPT would count: in its ReAct prompts the action and its input are part of
    the message content, so tool calls are counted as text too."""
    return message.content + calls_text(message)


def calls_text(message: Message) -> str:
    """What ``message_text`` adds after the content for the tool calls ("" without calls)."""
    if not message.tool_calls:
        return ""
    calls = "\n".join(f"{c.name} {c.arguments}" for c in message.tool_calls)
    return f"\n{calls}" if message.content else calls


class DbgptEstimator(Estimator):
    """Per-message content tokens with the model's tiktoken encoding; ``len // 4`` fallback."""

    def __init__(
        self,
        model: Annotated[
            str, Param("the model name DB-GPT picks its tiktoken encoding by (cl100k_base if unknown)")
        ] = "gpt-3.5-turbo",
        observation_head_chars: Annotated[
            int | None,
            Param("characters Layer 1 keeps of an old observation: their count is remembered apart", ge=0),
        ] = None,
    ) -> None:
        self.model = model
        self.encoding = dbgpt_encoding_name(model)
        self.tokenizer: Tokenizer | None
        try:
            self.tokenizer = get_tokenizer(self.encoding)
        except ConfigError:
            # DB-GPT's ProxyTokenizerWrapper returns -1 when the encoding cannot be loaded.
            log.warning("DB-GPT estimator: encoding %s unavailable offline; counting len // 4", self.encoding)
            self.tokenizer = None
        # Layer 1 keeps an old observation's start: counting that start apart makes its cut cheap
        # to count (speed only; the counts are the same).
        self.head_chars = None if observation_head_chars is None else int(observation_head_chars)
        self._head_count = _head_count(self.tokenizer, self.head_chars)
        self.key = f"dbgpt:{self.encoding if self.tokenizer else 'len4'}"
        self.name = self.key
        # The progress block's step lines (the layer's list, which only grows) and the running sums
        # of their counts; the other pieces' counts (``count_progress_block``).
        self._lines: Sequence[str] | None = None
        self._line_sums = [0]
        self._pieces: dict[str, int] = {}
        # (head, tail, their count): the layer passes the same two string objects every step, so
        # they are known by identity, not copied ("\n" added, cut off) and hashed again each step.
        self._ends: tuple[str, str, int] | None = None

    def start(self, transcript: Transcript) -> None:
        """Before the replay counts the transcript: its observations (what Layer 1 may cut, up to
        the last call) counted as their start and the rest, so their cuts are counted from it."""
        super().start(transcript)
        if self.tokenizer is None or self._head_count is None or not transcript.call_indices:
            return
        for message in islice(transcript.messages, transcript.call_indices[-1]):
            if _observation(message):
                self.tokenizer.count_content(message, self._head_count)

    def count_progress_block(
        self, message: Message, head: str, lines: Sequence[str], start: int, tail: str, notice: str = ""
    ) -> None:
        """Count the content of ``message``, DB-GPT's system prompt with its task-progress block
        (``ctxbench.layers.snapshots``): ``head + notice + "".join(lines[start:]) + tail``, each
        piece after ``head`` starting with a newline at a line start. Each such line start is a
        pre-token boundary (``ctxbench.tokens.line_starts``), so the count is the head's (with the
        newline), plus each line's, plus the tail's: a step line is counted once, when it is new,
        and the block's count is a sum of kept counts, not a pass over the block every step. The
        count goes where ``Tokenizer.count_content`` keeps it, so this estimator and the provider's
        counter (the same tokenizer) find it. ``lines`` only grows, by appending. Nothing is kept
        when a piece does not start a line, or counting fails: the message is counted as usual."""
        tokenizer = self.tokenizer
        if tokenizer is None or not tokenizer.splits_at_line_starts:
            return
        key = content_key(tokenizer.name)
        if key in message.token_cache:
            return
        try:
            sums = self._summed(tokenizer, lines)
            if sums is None or not _starts_line(tail) or (notice and not _starts_line(notice)):
                return
            ends = self._ends
            if ends is None or ends[0] is not head or ends[1] is not tail:
                ends = self._ends = (head, tail, self._piece(tokenizer, head + "\n") + self._piece(tokenizer, tail[1:]))
            tokens = ends[2] + sums[len(lines)] - sums[start]
            message.token_cache[key] = tokens + (self._piece(tokenizer, notice[1:] + "\n") if notice else 0)
        except Exception:  # noqa: BLE001 - counted as usual instead, with DB-GPT's fallback (message)
            return

    def _summed(self, tokenizer: Tokenizer, lines: Sequence[str]) -> list[int] | None:
        """The running sums of the lines' counts (each with the newline that follows it, which
        starts the next piece), the new lines counted; None when a line does not start a line."""
        sums = self._line_sums
        if self._lines is not lines or len(lines) < len(sums) - 1:
            self._lines, sums = lines, [0]
            self._line_sums = sums
        for line in lines[len(sums) - 1 :]:  # a slice: islice would touch every line before
            if not _starts_line(line):
                self._lines, self._line_sums = None, [0]
                return None
            sums.append(sums[-1] + tokenizer.count(line[1:] + "\n"))
        return sums

    def _piece(self, tokenizer: Tokenizer, piece: str) -> int:
        tokens = self._pieces.get(piece)
        if tokens is None:
            if len(self._pieces) >= MAX_BLOCK_PIECES:
                self._pieces.clear()
            tokens = self._pieces[piece] = tokenizer.count(piece)
        return tokens

    def message(self, message: Message) -> int:
        cached = message.token_cache.get(self.key)
        if cached is None:
            calls = calls_text(message)
            try:
                if self.tokenizer is None:
                    cached = (len(message.content) + len(calls)) // 4
                elif not calls:  # the provider's counter may already have the content's count
                    head = self._head_count if _observation(message) else None  # a cut one: from its start
                    cached = self.tokenizer.count_content(message, head)
                else:  # content + calls, counted from the content's count and its last line
                    content_tokens = self.tokenizer.count_content(message)
                    cached = _count_with_one_call(self.tokenizer, message, content_tokens)
                    if cached is None:
                        cached = self.tokenizer.count_appended(message.content, content_tokens, calls)
            except Exception:  # noqa: BLE001 - DB-GPT falls back on any counting failure
                cached = (len(message.content) + len(calls)) // 4
            message.token_cache[self.key] = cached
        return cached


def _head_count(tokenizer: Tokenizer | None, head_chars: int | None) -> Callable[[str], int] | None:
    """``tokenizer.count`` as its head and the rest (``count_with_head``): the head's count is
    remembered, so Layer 1's cut of the text is counted from it. The same count; None where the
    split pattern gives no line-start boundaries to cut at (or nothing is cut)."""
    if tokenizer is None or head_chars is None or not tokenizer.splits_at_line_starts:
        return None
    return functools.partial(count_with_head, tokenizer, within=head_chars)


def count_with_head(tokenizer: Tokenizer, text: str, within: int) -> int:
    """``tokenizer.count(text)`` as its head, up to its last pre-token start in the first
    ``within`` characters (``line_starts.last_cut``), remembered by the tokenizer's piece counter,
    plus the rest: the start of an observation, which Layer 1 keeps later by itself (its first
    ``truncated_observation_max_chars`` characters), is then known. Exact for a tokenizer that
    ``splits_at_line_starts``."""
    cut = last_cut(text[:within]) if len(text) > within else None
    if cut is None:
        return tokenizer.count(text)
    return tokenizer.pieces().remembered(text[:cut]) + tokenizer.count(text[cut:])


def _starts_line(piece: str) -> bool:
    """Whether ``piece`` is a newline at a line start (``ctxbench.tokens.line_starts``): put after
    any text, a pre-token starts after its newline."""
    return piece[:1] == "\n" and STARTS_LINE(piece, 1) is not None


def _observation(message: Message) -> bool:
    """What DB-GPT's Layer 1 may cut to its start: a tool result or an ``Observation:`` message."""
    return message.role == "tool" or is_observation(message)


def _count_with_one_call(tokenizer: Tokenizer, message: Message, content_tokens: int) -> int | None:
    """``count(message_text(message))`` for a message with one tool call, from the content's count
    and the arguments' count the provider's tokenizer kept (``Tokenizer.count_message``): only the
    seams are counted again. The text is ``content\\nname arguments``; with a tokenizer whose
    pre-tokens start at every line start and at every space after a non-space character
    (``ctxbench.tokens.line_starts``) it is counted as ``content\\n``, ``name``, `` `` + the
    arguments up to their first such space, and the rest of the arguments (their count less that
    of their head). None when that does not apply: count the text from the content's last line."""
    if not tokenizer.splits_at_line_starts or len(message.tool_calls) != 1:
        return None
    name, arguments = message.tool_calls[0].name, message.tool_calls[0].arguments
    arguments_tokens = message.token_cache.get(arguments_key(tokenizer.name, 0))
    if arguments_tokens is None or not name or name[-1].isspace() or not STARTS_LINE(name):
        return None
    space = SPACE_AFTER_WORD.search(arguments)
    if space is None:
        return None
    head = arguments[: space.start()]
    count = tokenizer.pieces().remembered  # names and argument heads recur: "read_file", '{"path":'
    tokens = count(name) + count(f" {head}") + arguments_tokens - count(head)
    if message.content:  # a line start follows the "\\n": the name starts a line
        tokens += tokenizer.count_appended(message.content, content_tokens, "\n")
    return tokens
