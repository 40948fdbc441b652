"""Strategy 2 of the 5-layer strategy (OpenClaw's tool-result context guard): when the whole
input exceeds its char budget, replace old tool results with a placeholder, oldest first,
until it fits again.

* Total budget = window x CHARS_PER_TOKEN_ESTIMATE (4) x CONTEXT_INPUT_HEADROOM_RATIO (0.75),
  never below 1024 chars.
* The input is measured as OpenClaw's ``estimateContextChars`` does: tool results count
  ``ceil(chars x 4/2)`` (they are denser: 2 chars/token against 4), other messages their chars,
  system messages too unless ``system_in_budget=False`` (OpenClaw keeps the system prompt outside the
  ``messages`` the guard measures; counting it is the default, measured in docs/strategies.md).
* Only results of whitelisted high-output tools are compacted (the design document's list names
  categories); Write/Create results are always kept because later steps build on them; the newest
  results are kept (the trailing results the model has not seen yet are never touched, and the walk
  stops as soon as enough is freed). Which results are eligible (``eligibility``):
  ``by_action`` (default): each call is put in a category by what it does (``tool_actions``: a
  ``str_replace_editor`` ``view`` is Read File, ``create`` Write; a shell command by its program;
  tau-bench's ``get_*`` Web Fetch, ``book_*`` Write), a tool it does not know is read by name as
  below, and one that matches nothing is compacted when ``compact_unknown`` (OpenClaw's guard
  compacts every result); ``by_name``: the tool's name matched literally against the lists (the
  seed's reading before real tools were mapped); ``all``: every result, as OpenClaw's code does.
* An older SWE-agent sends a command's output as the next user message; the importer marks it with its
  action (``transcripts.model.OBSERVATION_OF``) and it is a tool result here like any other: weighed at
  2 chars/token, put in a category by its action (``tool_actions.observation_call``), compacted, and
  kept when it is the newest output.
* The later OpenClaw variant (ctxbench/configs/strategy/five_layer_v2.yaml): headroom 0.8, the 3 most
  recent tool results protected, and MIN_COMPACTION_SAVINGS_RATIO 0.2: a pass runs only if it
  can free at least 20% of the budget, then frees at least that much (hysteresis), and skips
  results that would save less than twice the placeholder.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Annotated, Literal, get_args

from ctxbench.core import Param, StrategyContext
from ctxbench.layers.base import Layer, compacted
from ctxbench.layers.tool_actions import OTHER, action_category, observation_call
from ctxbench.layers.truncate_tool_result import char_budget, window_tokens
from ctxbench.tokens.estimators import message_chars
from ctxbench.transcripts.model import OBSERVATION_OF, Message, ToolCall, is_tool_result
from ctxbench.transcripts.running import REPLACED_LIMIT, DerivedList, RunningSum, noted_changes

COMPACTION_PLACEHOLDER = "[compacted: tool output removed to free context]"
DEFAULT_WHITELIST = ("Read File", "Bash", "Grep", "Glob", "Search Files", "Web Fetch", "Edit")
DEFAULT_KEEP = ("Write", "Create")
Eligibility = Literal["by_action", "by_name", "all"]
ELIGIBILITY: tuple[str, ...] = get_args(Eligibility)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_FILE_WORDS = ("file", "files")


def name_words(name: str) -> tuple[str, ...]:
    """``"Read File"``, ``"read_file"``, ``"ReadFile"`` -> ("read", "file")."""
    return tuple(w.lower() for w in _WORD.findall(name))


def tool_matches(tool: str, entry: str) -> bool:
    """Case-, space-, underscore- and camelCase-insensitive match of a tool name to a list entry:
    the entry's words appear as a run in the tool's words (``edit_file``, ``execute_bash`` match
    ``Edit``, ``Bash``), or the tool is the entry without its trailing "file(s)" (Claude Code's
    ``Read`` matches ``Read File``). ``web_search`` does not match ``Search Files``."""
    tool_w, entry_w = name_words(tool), name_words(entry)
    if not tool_w or not entry_w:
        return False
    n = len(entry_w)
    if any(tool_w[i : i + n] == entry_w for i in range(len(tool_w) - n + 1)):
        return True
    return len(entry_w) > 1 and entry_w[-1] in _FILE_WORDS and tool_w == entry_w[:-1]


Label = Callable[[str, "ToolCall | None"], str]


def name_label(name: str, call: ToolCall | None) -> str:
    """A result's tool name: its own ``name``, else its call's name."""
    return name or (call.name if call is not None else "")


def tool_names(messages: Sequence[Message], label: Label = name_label) -> dict[int, str]:
    """Index of each tool result -> ``label(its own name, its call)`` (by default the tool's name); an
    observation the importer marked is labelled by the call it answers (``observation_call``)."""
    by_call = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
    names = {}
    for i, m in enumerate(messages):
        if m.role == "tool":
            names[i] = label(m.name or "", by_call.get(m.tool_call_id or ""))
        elif (observed := observation_call(m)) is not None:
            names[i] = label("", observed)
    return names


def _naming(message: Message) -> tuple[object, ...]:
    """What ``tool_names`` reads from a message."""
    return (
        message.role,
        message.name,
        message.tool_call_id,
        tuple(message.tool_calls),
        message.metadata.get(OBSERVATION_OF),
    )


class CandidateResults:
    """The tool results of the replay's working context (ascending positions) and, among them, the
    compaction candidates (``candidate(message, tool name)``), kept from call to call: the list
    grows, and the layers replace a few results (compacted, truncated) without renaming them. A
    list that is neither the last one grown nor noted as derived from it (``DerivedList``), or
    that changes what names a result, is walked again in full (``tool_names``)."""

    def __init__(self, candidate: Callable[[Message, str], bool], label: Label = name_label) -> None:
        self.candidate = candidate
        self.label = label
        self.results: list[int] = []
        self.candidates: list[int] = []
        self._by_call: dict[str, ToolCall] = {}
        self._unnamed: set[str] = set()  # call ids that results were labelled without a call
        self._seen: Sequence[Message] = []
        self._len = 0

    def follow(self, messages: Sequence[Message]) -> None:
        seen = self._seen
        changed = noted_changes(seen, self._len, messages)
        if (
            changed is None
            or len(changed) > REPLACED_LIMIT
            or any(_naming(seen[i]) != _naming(messages[i]) for i in changed)
            or not self._extend(messages)
        ):
            self._walk(messages)
            return
        for i in changed:  # same name, new content: may no longer (or now) be a candidate
            if is_tool_result(messages[i]):
                self._recheck(messages, i)
        self.remember(messages)

    def remember(self, messages: Sequence[Message]) -> None:
        """``messages`` is the list followed last (with ``candidates`` already updated)."""
        self._seen, self._len = messages, len(messages)

    def _walk(self, messages: Sequence[Message]) -> None:
        names = tool_names(messages, self.label)
        self.results = list(names)
        self.candidates = [i for i in self.results if self.candidate(messages[i], names[i])]
        self._by_call = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
        by_call, by_name = self._by_call, self.label is name_label
        self._unnamed = {
            key
            for i in names
            if (key := messages[i].tool_call_id or "") not in by_call and not (by_name and messages[i].name)
        }
        self.remember(messages)

    def _extend(self, messages: Sequence[Message]) -> bool:
        """Walk the appended messages; False if one renames an earlier result (walk all again)."""
        by_call, unnamed = self._by_call, self._unnamed
        for i in range(self._len, len(messages)):
            message = messages[i]
            if message.role == "assistant":
                for c in message.tool_calls:
                    if c.id in unnamed or by_call.get(c.id, c) != c:
                        return False
                    by_call[c.id] = c
            elif (observed := observation_call(message)) is not None:
                self.results.append(i)
                if self.candidate(message, self.label("", observed)):
                    self.candidates.append(i)
            elif message.role == "tool":
                key = message.tool_call_id or ""
                name = self.label(message.name or "", by_call.get(key))
                # a call with this id arriving later would relabel it (its own name wins only by name)
                if key not in by_call and not (message.name and self.label is name_label):
                    unnamed.add(key)
                self.results.append(i)
                if self.candidate(message, name):
                    self.candidates.append(i)
        return True

    def _recheck(self, messages: Sequence[Message], i: int) -> None:
        message = messages[i]
        observed = observation_call(message)
        if observed is not None:
            name = self.label("", observed)
        else:
            name = self.label(message.name or "", self._by_call.get(message.tool_call_id or ""))
        at = bisect_left(self.candidates, i)
        present = at < len(self.candidates) and self.candidates[at] == i
        if self.candidate(message, name) != present:
            if present:
                del self.candidates[at]
            else:
                self.candidates.insert(at, i)


def estimate_chars(message: Message, chars_per_token: float = 4.0, tool_chars_per_token: float = 2.0) -> int:
    """OpenClaw's per-message char estimate: tool results (and observations sent as user messages)
    weighted by 4/2, others as they are."""
    if is_tool_result(message):
        chars = len(message.content)
        return max(chars, math.ceil(chars * chars_per_token / tool_chars_per_token))
    return message_chars(message)


class CompactOldToolResults(Layer):
    name = "compact_old_tool_results"

    def __init__(
        self,
        context_input_headroom_ratio: Annotated[
            float, Param("share of the window the whole input may fill", gt=0, le=1)
        ] = 0.75,
        chars_per_token: Annotated[
            float, Param("characters per token assumed for messages other than tool results", gt=0)
        ] = 4.0,
        tool_result_chars_per_token: Annotated[
            float, Param("characters per token assumed for tool results", gt=0)
        ] = 2.0,
        whitelist: Annotated[Sequence[str], Param("tools whose results may be compacted")] = DEFAULT_WHITELIST,
        keep_tools: Annotated[
            Sequence[str], Param("tools whose results are always kept (later steps build on them)")
        ] = DEFAULT_KEEP,
        protect_trailing_results: Annotated[
            bool, Param("never compact the trailing results the model has not seen yet")
        ] = True,
        protect_recent_results: Annotated[int, Param("the newest tool results never compacted", ge=0)] = 0,
        min_compaction_savings_ratio: Annotated[
            float, Param("run only when a pass frees this share of the budget (hysteresis)", ge=0, le=1)
        ] = 0.0,
        context_window: Annotated[
            int | None, Param("the window the budget is computed on (None: the model's)", gt=0)
        ] = None,
        eligibility: Annotated[
            Eligibility,
            Param("which results may go: by_action (what the call did), by_name (the tool's name) or all"),
        ] = "by_action",
        compact_unknown: Annotated[
            bool, Param("with by_action, compact a result whose call matches no category")
        ] = True,
        system_in_budget: Annotated[
            bool, Param("count the system prompt in the budget (OpenClaw's guard leaves it outside: false)")
        ] = True,
    ) -> None:
        if eligibility not in ELIGIBILITY:
            raise ValueError(f"eligibility must be one of {', '.join(ELIGIBILITY)}, got {eligibility!r}")
        self.eligibility = eligibility
        self.compact_unknown = bool(compact_unknown)
        self.system_in_budget = bool(system_in_budget)
        self.headroom = context_input_headroom_ratio
        self.chars_per_token = chars_per_token
        self.tool_chars_per_token = tool_result_chars_per_token
        self.whitelist = tuple(whitelist)
        self.keep_tools = tuple(keep_tools)
        self.protect_trailing = protect_trailing_results
        self.protect_recent = max(0, int(protect_recent_results))
        self.min_savings_ratio = min_compaction_savings_ratio
        self.context_window = context_window
        self._chars_key = f"openclaw_chars:{chars_per_token}:{tool_result_chars_per_token}:{self.system_in_budget}"
        self._eligible: dict[str, bool] = {}  # per tool name: matching words is the hot spot on long histories
        self._total = RunningSum(self.chars)  # the context's estimated chars, walked only where it changed
        self._placeholder = estimate_chars(
            Message("tool", COMPACTION_PLACEHOLDER), chars_per_token, tool_result_chars_per_token
        )
        self._min_each = 2 * len(COMPACTION_PLACEHOLDER) if min_compaction_savings_ratio > 0 else 1
        # The tool results and the candidates among them, walked only where the context changed.
        label = self.action_label if eligibility == "by_action" else name_label
        self._results = CandidateResults(self._is_candidate, label)

    def budget(self, ctx: StrategyContext) -> int:
        return char_budget(window_tokens(ctx, self.context_window), self.chars_per_token, self.headroom)

    def chars(self, message: Message) -> int:
        # Cached on the (immutable) message: the total is taken over the whole context every call.
        cached = message.token_cache.get(self._chars_key)
        if cached is None:
            if message.role == "system" and not self.system_in_budget:
                cached = 0  # OpenClaw passes the system prompt beside the messages its guard measures
            else:
                cached = estimate_chars(message, self.chars_per_token, self.tool_chars_per_token)
            message.token_cache[self._chars_key] = cached
        return cached

    @staticmethod
    def action_label(name: str, call: ToolCall | None) -> str:
        """``eligibility=by_action``: the category of what the call did (``tool_actions``), or the tool's
        name when it is not known by what it does."""
        if call is not None:
            return action_category(call.name, call.arguments) or call.name
        return action_category(name) or name

    def eligible(self, tool: str) -> bool:
        """Whether results labelled ``tool`` (a tool name, or with ``by_action`` a category) may be compacted."""
        known = self._eligible.get(tool)
        if known is None:
            if self.eligibility == "all":
                known = True
            elif self.eligibility == "by_action" and tool == OTHER:  # bookkeeping (think, finish, submit)
                known = False
            else:  # a category, or a name: the keep list (Write, Create) wins, then the whitelist
                keep = any(tool_matches(tool, k) for k in self.keep_tools)
                listed = any(tool_matches(tool, e) for e in self.whitelist)
                known = not keep and (listed or (self.eligibility == "by_action" and self.compact_unknown))
            self._eligible[tool] = known
        return known

    def _is_candidate(self, message: Message, tool: str) -> bool:
        """Compactable when nothing else protects it: a whitelisted result, not a placeholder
        already, that saves enough."""
        return (
            self.eligible(tool)
            and message.content != COMPACTION_PLACEHOLDER
            and self.chars(message) - self._placeholder >= self._min_each
        )

    def _protected(self, messages: Sequence[Message], results: list[int]) -> set[int]:
        protected = set(results[len(results) - self.protect_recent :]) if self.protect_recent else set()
        if self.protect_trailing:  # results after the last assistant message: not yet seen by the model
            i = len(messages)
            while i > 0 and is_tool_result(messages[i - 1]):
                i -= 1
                protected.add(i)
        return protected

    def apply(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        budget = self.budget(ctx)
        total = self._total(messages)
        found = self._results
        found.follow(messages)  # every call, so that it only walks what arrived since the last one
        if total <= budget:
            return messages
        protected = self._protected(messages, found.results)
        candidates = [i for i in found.candidates if i not in protected]  # oldest first
        needed = total - budget
        if self.min_savings_ratio > 0:
            min_pass = int(budget * self.min_savings_ratio)
            if sum(self.chars(messages[i]) - self._placeholder for i in candidates) < min_pass:
                ctx.emit({"type": "five_layer.compact", "skipped": "below_min_savings", "budget_chars": budget})
                return messages
            needed = max(needed, min_pass)
        out = list(messages)
        freed = 0
        done: list[int] = []
        for i in candidates:
            out[i] = compacted(messages[i], COMPACTION_PLACEHOLDER, self.name)
            freed += self.chars(messages[i]) - self._placeholder
            done.append(i)
            if freed >= needed:
                break
        if not done:
            return messages
        # A copy that says what changed: the followers (running sums, the request check) take it from the note.
        out = DerivedList(out, messages, done)
        for i in reversed(done):  # placeholders now: no longer candidates
            del found.candidates[bisect_left(found.candidates, i)]
        found.remember(out)
        ctx.emit(
            {
                "type": "five_layer.compact",
                "results": len(done),
                "chars_before": total,
                "chars_freed": freed,
                "budget_chars": budget,
                "under_budget": total - freed <= budget,
            }
        )
        return out
