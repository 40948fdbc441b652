"""DeepSeek V3.2's request rendering: tool schemas, tool calls (DSML) and tool results.

DeepSeek's API (``deepseek-chat`` and ``deepseek-reasoner``, V3.2) renders a chat request with the
encoding DeepSeek published beside the V3.2 weights (``encoding/encoding_dsv32.py``), not with V3's
Jinja chat template: the tools become a "## Tools" block after the system prompt, each tool call an
``<｜DSML｜invoke>`` block whose string parameters are written as they are (not JSON-escaped), the
tool results ``<result>`` elements of a ``<function_results>`` block, and every turn the model is
asked to answer ends with ``</think>`` (chat mode) or ``<think>`` (thinking mode), one special
token either way. Counted this way, the prompts of the mini-swe-agent DeepSeek runs in the dev set
are what DeepSeek billed, to the token, on every call (docs/fidelity.md).

The texts here are the template's; ``framing.DEEPSEEK_V32`` holds the per-message pieces.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxbench.transcripts.model import ToolCall

DSML = "｜DSML｜"  # one special token in the V3.2 tokenizer
THINK_END = "</think>"

TOOLS_BLOCK = """## Tools

You have access to a set of tools you can use to answer the user's question.
You can invoke functions by writing a "<{d}function_calls>" block like the following as part of your reply to the user:
<{d}function_calls>
<{d}invoke name="$FUNCTION_NAME">
<{d}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{d}parameter>
...
</{d}invoke>
<{d}invoke name="$FUNCTION_NAME2">
...
</{d}invoke>
</{d}function_calls>

String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects \
should use JSON format. The "string" attribute should be set to "true" for string type parameters and "false" for \
other types (numbers, booleans, arrays, objects).

If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking \
block. Here is an example:

<{d}function_calls>
...
</{d}function_calls>

<function_results>
...
</function_results>

<think>...thinking about results</think>

Here are the functions available in JSONSchema format:
<functions>
{schemas}
</functions>
"""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def tools_text(tools: Sequence[dict[str, Any]]) -> str:
    """What a request's tools add after the system prompt (OpenAI ``tools`` entries, each
    ``{"type": "function", "function": {...}}``; a bare function object is taken as it is)."""
    functions = [t.get("function", t) if isinstance(t, dict) else t for t in tools]
    return "\n\n" + TOOLS_BLOCK.format(d=DSML, schemas="\n".join(_json(f) for f in functions))


def _parameters(arguments: str) -> str:
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        parsed = {"arguments": arguments}  # what the encoding does with arguments that are not an object
    return "\n".join(
        f'<{DSML}parameter name="{key}" string="{"true" if isinstance(value, str) else "false"}">'
        f"{value if isinstance(value, str) else _json(value)}</{DSML}parameter>"
        for key, value in parsed.items()
    )


def tool_calls_text(calls: Sequence[ToolCall]) -> str:
    """An assistant message's tool calls as they follow its text in the prompt."""
    invokes = "\n".join(f'<{DSML}invoke name="{c.name}">\n{_parameters(c.arguments)}\n</{DSML}invoke>' for c in calls)
    return f"\n\n<{DSML}function_calls>\n{invokes}\n</{DSML}function_calls>"
