"""How an agent sent its messages when it did not send them as recorded: one renderer per source.

Most agents send each message as the transcript records it (the provider's chat template frames
it). An agent that wrote its tool calls into the prompt (OpenHands' mock function calling,
``metadata["tools_rendering"]``) sent some messages as other text. A renderer says, per message,
what went to the provider instead (``SentAs``) and what every request added (``request_text``);
counting that text is the tokenizer's job (``ctxbench.tokens.counting``), which knows no source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.transcripts import openhands_fncall
from ctxbench.transcripts.model import Message


@dataclass(frozen=True)
class SentAs:
    """One message as the agent sent it: in ``role``, ``prefix`` before its content (a line of its
    own), or ``text`` instead of its content and tool calls (``text`` starts with the content when
    the content was kept)."""

    role: str
    prefix: str = ""
    text: str | None = None


@dataclass(frozen=True)
class Renderer:
    message: Callable[[Message], SentAs | None]  # None: the message went as recorded
    request_text: Callable[[Sequence[dict[str, Any]]], str]  # what every request added (the tools)


def _openhands_message(message: Message) -> SentAs | None:
    if message.role == "tool":  # a user message after "EXECUTION RESULT of [name]:"
        return SentAs("user", prefix=openhands_fncall.tool_result_prefix(message))
    if message.role == "assistant" and message.tool_calls:  # the calls written after the text
        return SentAs("assistant", text=openhands_fncall.assistant_text(message))
    return None


def _openhands_request(how: str) -> Callable[[Sequence[dict[str, Any]]], str]:
    def request_text(tools: Sequence[dict[str, Any]]) -> str:
        return openhands_fncall.request_text(list(tools), how)

    return request_text


RENDERERS: dict[str, Renderer] = {
    how: Renderer(_openhands_message, _openhands_request(how)) for how in openhands_fncall.RENDERINGS
}
