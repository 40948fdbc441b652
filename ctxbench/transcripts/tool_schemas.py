"""The agent's tool schemas: part of every request the provider counts, absent from the messages.

Agents send their tool definitions (OpenAI ``tools`` / legacy ``functions``, Anthropic ``tools``)
with every request; the provider renders them into the prompt and counts them. A transcript that
records them (an OpenHands ``system`` event's ``tools``, a request log's top-level ``tools``) keeps
them in ``metadata["tools"]`` as recorded, and the replay counts them in every request: without
them OpenHands prompts were 25% short of what the provider reported (docs/fidelity.md).

How a provider renders them is its own (OpenAI: a TypeScript-like namespace; Llama, Qwen and
DeepSeek chat templates: each tool's JSON). The count here is of each tool's JSON, one per line,
as ``tojson`` in a chat template writes it; the remaining per-request constant is what
``ctxbench calibrate --against provider`` fits as the overhead. An agent that sent no native
``tools`` but described them in its prompt records how in ``metadata["tools_rendering"]``
(OpenHands' mock function calling: ``ctxbench.transcripts.openhands_fncall``); the text is then
what that agent added to every request.
"""

from __future__ import annotations

import json
from typing import Any

from ctxbench.transcripts.model import Message, Transcript
from ctxbench.transcripts.rendering import RENDERERS

TOOLS_KEY = "tools"
RENDERING_KEY = "tools_rendering"  # absent: native tools (each tool's JSON)


def valid_tools(raw: Any) -> tuple[list[dict[str, Any]], int]:
    """The tool definitions in ``raw`` (a list of objects) and how many entries were not objects."""
    if not isinstance(raw, list):
        return [], 0 if raw is None else 1
    tools = [t for t in raw if isinstance(t, dict)]
    return tools, len(raw) - len(tools)


def tool_schemas(transcript: Transcript) -> list[dict[str, Any]]:
    """The transcript's recorded tool definitions ([] when the source did not record them)."""
    return valid_tools(transcript.metadata.get(TOOLS_KEY))[0]


def tools_rendering(transcript: Transcript) -> str | None:
    """How the agent sent its tools: None for native ``tools``, else a name from
    ``ctxbench.transcripts.rendering.RENDERERS`` (an unknown name reads as native)."""
    how = transcript.metadata.get(RENDERING_KEY)
    return how if how in RENDERERS else None


def tools_text(transcript: Transcript) -> str:
    """The tool definitions as one text ("" without tools): each tool's JSON on its own line, or
    what the agent's prompt rendering added to every request (``tools_rendering``)."""
    tools = tool_schemas(transcript)
    if not tools:
        return ""
    how = tools_rendering(transcript)
    if how is not None:
        return RENDERERS[how].request_text(tools)
    return "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)


def tools_message(transcript: Transcript) -> Message | None:
    """The tool definitions as a system message, for what sizes whole requests by their messages
    (estimators that count the tools); None without tools."""
    text = tools_text(transcript)
    return Message("system", text) if text else None
