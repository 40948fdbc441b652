"""The canonical transcript model: messages, tool calls, probes, transcripts.

Messages are immutable: a compaction layer that shortens a message makes a new one with
``message.replace(content=...)``. That keeps per-message token counts valid for the
lifetime of a message object (see ``ctxbench.tokens.counting``), which is what makes a
replay cost O(total text) instead of O(calls x context).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
ProbeKind = Literal["recall", "artifact", "continuation", "decision"]
PROBE_KINDS: tuple[str, ...] = ("recall", "artifact", "continuation", "decision")


def json_strings(value: Any) -> list[str]:
    """The leaves of a parsed JSON value as text, in order (None dropped): what a tool call's
    arguments or a snapshot record say, without JSON's quoting and escapes."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return [str(value)] if value is not None else []


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call an assistant message makes; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(id=str(data["id"]), name=str(data.get("name") or ""), arguments=str(data.get("arguments") or ""))


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message in provider-neutral form.

    ``tool_call_id`` links a ``tool`` message to the ``ToolCall`` it answers; ``name`` is
    the tool's name on tool results. ``metadata`` holds what importers keep from the
    source (e.g. ``usage`` with the provider's reported ``prompt_tokens`` on assistant
    messages) and what layers add (``snapshot`` path, ``compacted_by``).
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    pinned: bool = False
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    # Token counts keyed by counter name; never copied by ``replace`` (init=False),
    # so a changed message is always counted afresh.
    token_cache: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    # Set by ``with_appended``: the message whose content this one's content starts with.
    appended_to: Message | None = field(default=None, init=False, repr=False, compare=False)
    # Set by ``replace``: the first message of the chain this one was derived from (a transcript
    # message, for a layer's cut or masked copy): what a recorded context marks a copy against.
    origin: Message | None = field(default=None, init=False, repr=False, compare=False)

    def replace(self, **changes: Any) -> Message:
        """A copy with ``changes`` (``dataclasses.replace``'s rules: only init fields; the token
        cache starts empty). Built slot by slot: a DB-GPT replay makes about a thousand copies
        (pointers, progress blocks, cut observations) and ``dataclasses.replace`` takes 3x longer."""
        copy = object.__new__(type(self))
        for name in _COPIED_FIELDS:
            _set(copy, name, changes.pop(name) if name in changes else getattr(self, name))
        if changes:
            raise TypeError(f"Message.replace: not a field set at init: {', '.join(sorted(changes))}")
        _set(copy, "token_cache", {})
        _set(copy, "appended_to", None)
        _set(copy, "origin", self.origin if self.origin is not None else self)
        return copy

    def with_appended(self, suffix: str, **changes: Any) -> Message:
        """This message with ``suffix`` after its content. Tokenizers that can count the new
        text from this message's count and its last line do so instead of counting it all."""
        grown = self.replace(content=self.content + suffix, **changes)
        _set(grown, "appended_to", self)
        return grown

    @property
    def char_count(self) -> int:
        """Characters the provider sees: content plus tool-call names and arguments."""
        return len(self.content) + sum(len(c.name) + len(c.arguments) for c in self.tool_calls)

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "content": self.content,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "pinned": self.pinned,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        content = data.get("content")
        if not isinstance(content, str):
            raise ValueError(f"content must be text, got {type(content).__name__}")
        return cls(
            role=role,
            content=content,
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            pinned=bool(data.get("pinned", False)),
            metadata=dict(data.get("metadata") or {}),
        )


_set = object.__setattr__  # how a frozen dataclass sets its own fields
_COPIED_FIELDS = tuple(f.name for f in dataclasses.fields(Message) if f.init)
# Message.replace sets these itself: a new field that is not set at init must be added there.
_FRESH_FIELDS = ("token_cache", "appended_to", "origin")
assert {f.name for f in dataclasses.fields(Message) if not f.init} == set(_FRESH_FIELDS)

# An agent that sends its tools' output as user messages (SWE-agent before function calling: its
# ``history`` holds the action in the assistant message and the output in the next user message) has
# the importer mark each such message with the action it answers: metadata[OBSERVATION_OF] = "open f.py".
OBSERVATION_OF = "observation_of"


def is_tool_result(message: Message) -> bool:
    """A tool's output: a ``tool`` message, or a user message the importer marked as the observation
    of an action (``OBSERVATION_OF``)."""
    return message.role == "tool" or (message.role == "user" and OBSERVATION_OF in message.metadata)


@dataclass(frozen=True, slots=True)
class Probe:
    """A question about a fact stated once in the transcript, with its gold answer.

    ``message_index`` is the index of the message that states the fact; ``needed_at`` the
    index of the message where the agent needs it again (if known). ``answer`` is the
    exact gold value; ``aliases`` are other accepted spellings. Extracted probes also carry
    ``label`` (what kind of fact: task, file_edited, command...) and ``span``: the gold's char
    span in the stating message's probe text (``ctxbench.probes.actions.probe_text``).
    """

    id: str
    question: str
    answer: str
    kind: ProbeKind = "recall"
    message_index: int = 0
    needed_at: int | None = None
    aliases: tuple[str, ...] = ()
    source: str = "planted"
    label: str | None = None
    span: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.label is not None:
            extra["label"] = self.label
        if self.span is not None:
            extra["span"] = list(self.span)
        return {
            "id": self.id,
            "question": self.question,
            "answer": self.answer,
            "kind": self.kind,
            "message_index": self.message_index,
            "needed_at": self.needed_at,
            "aliases": list(self.aliases),
            "source": self.source,
            **extra,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Probe:
        kind = data.get("kind", "recall")
        if kind not in PROBE_KINDS:
            raise ValueError(f"unknown probe kind {kind!r}")
        return cls(
            id=str(data["id"]),
            question=str(data["question"]),
            answer=str(data["answer"]),
            kind=kind,
            message_index=int(data.get("message_index", 0)),
            needed_at=data.get("needed_at"),
            aliases=tuple(data.get("aliases") or ()),
            source=str(data.get("source", "planted")),
            label=data.get("label"),
            span=tuple(data["span"]) if data.get("span") else None,  # type: ignore[arg-type]
        )


@dataclass(slots=True)
class Transcript:
    """A recorded agent conversation: messages in order, probes, and where it came from."""

    id: str
    messages: list[Message]
    probes: list[Probe] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def call_indices(self) -> list[int]:
        """Indices of assistant messages: each one is a recorded LLM call."""
        return [i for i, m in enumerate(self.messages) if m.role == "assistant"]

    @property
    def char_count(self) -> int:
        return sum(m.char_count for m in self.messages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "format": "ctxbench.transcript/1",
            "source": self.source,
            "metadata": self.metadata,
            "messages": [m.to_dict() for m in self.messages],
            "probes": [p.to_dict() for p in self.probes],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transcript:
        return cls(
            id=str(data["id"]),
            messages=[Message.from_dict(m) for m in data.get("messages") or ()],
            probes=[Probe.from_dict(p) for p in data.get("probes") or ()],
            source=dict(data.get("source") or {}),
            metadata=dict(data.get("metadata") or {}),
        )
