"""Chat framing: the tokens a provider's chat template adds around each message and request.

Each template is written as the text pieces the real chat template renders around a
message's content; a tokenizer counts those pieces itself (special tokens count as one),
so the framing numbers come from the tokenizer, not from hand-typed constants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxbench.tokens import deepseek_dsml

if TYPE_CHECKING:
    from ctxbench.tokens.base import Tokenizer
    from ctxbench.transcripts.model import ToolCall


@dataclass(frozen=True)
class ChatTemplate:
    """Pieces of a chat template. ``roles[role]`` are the texts rendered around a message's
    content; ``tool_call`` the texts around each call's name and arguments;
    ``request`` what is rendered once per request (BOS, reply priming)."""

    roles: Mapping[str, tuple[str, ...]]
    tool_call: tuple[str, ...] = ()
    request: tuple[str, ...] = ()
    tool_name: bool = False  # whether a tool result's tool name appears in the prompt
    source: str = ""  # where the template comes from, for the docs and reports
    notes: tuple[str, ...] = field(default=())
    # A template that rewrites tool calls or tool schemas (DeepSeek V3.2's DSML) renders them whole:
    # a message's tool calls after its text, and the request's tools after the system prompt.
    tool_calls_text: Callable[[Sequence[ToolCall]], str] | None = None
    tools_text: Callable[[Sequence[dict[str, Any]]], str] | None = None
    reasoning_end: str = ""  # what closes a resent reasoning part (DeepSeek's thinking mode: </think>)
    # Count each message as one text, its pieces (``roles[role]`` = (before, after)) and content
    # together: where a piece ends or starts with punctuation, the split pattern joins it with the
    # content's first or last characters (DeepSeek: ``<result>`` + ``<returncode>`` is one pre-token).
    whole_messages: bool = False


def apply_template(tokenizer: Tokenizer, template: ChatTemplate) -> None:
    """Set a tokenizer's framing numbers by counting the template pieces with it."""

    def pieces(texts: tuple[str, ...]) -> int:
        return sum(tokenizer.count_template(t) for t in texts if t)

    tokenizer.role_overhead = {role: pieces(texts) for role, texts in template.roles.items()}
    tokenizer.per_message = tokenizer.role_overhead.get("user", 0)
    tokenizer.per_tool_call = pieces(template.tool_call)
    tokenizer.per_request = pieces(template.request)
    tokenizer.count_tool_name = template.tool_name
    if len(template.tool_call) == 3:
        tokenizer.tool_call_pieces = (template.tool_call[0], template.tool_call[1], template.tool_call[2])
    tokenizer.tool_calls_text = template.tool_calls_text
    tokenizer.whole_message_pieces = dict(template.roles) if template.whole_messages else None
    tokenizer.tools_text = template.tools_text
    tokenizer.reasoning_end = pieces((template.reasoning_end,))


# Llama 3.1 (Meta's prompt format): header per message, <|eot_id|> after it; tool results
# come back in the ``ipython`` role; a tool call is JSON {"name": ..., "parameters": ...}.
LLAMA3 = ChatTemplate(
    roles={
        role: (f"<|start_header_id|>{header}<|end_header_id|>\n\n", "<|eot_id|>")
        for role, header in (("system", "system"), ("user", "user"), ("assistant", "assistant"), ("tool", "ipython"))
    },
    tool_call=('{"name": "', '", "parameters": ', "}"),
    request=("<|begin_of_text|>", "<|start_header_id|>assistant<|end_header_id|>\n\n"),
    source="llama-models llama3 chat_format / Llama 3.1 prompt format",
)

# Qwen 2.5 / 3 ChatML (the tokenizer_config chat_template): tool results go back as a user
# turn wrapped in <tool_response>; tool calls as <tool_call> JSON inside the assistant turn.
QWEN = ChatTemplate(
    roles={
        "system": ("<|im_start|>system\n", "<|im_end|>\n"),
        "user": ("<|im_start|>user\n", "<|im_end|>\n"),
        "assistant": ("<|im_start|>assistant\n", "<|im_end|>\n"),
        "tool": ("<|im_start|>user\n<tool_response>\n", "\n</tool_response><|im_end|>\n"),
    },
    tool_call=('\n<tool_call>\n{"name": "', '", "arguments": ', "}\n</tool_call>"),
    request=("<|im_start|>assistant\n",),
    source="Qwen2.5/Qwen3 tokenizer_config.json chat_template (ChatML)",
)

# Mistral instruct v3 with Tekken: <s> once; [INST]..[/INST] around user turns; the system
# prompt is joined to the last user message with a blank line; assistant turns end with </s>.
MISTRAL_TEKKEN = ChatTemplate(
    roles={
        "system": ("\n\n",),
        "user": ("[INST]", "[/INST]"),
        "assistant": ("</s>",),
        "tool": ('[TOOL_RESULTS]{"content": ', "}[/TOOL_RESULTS]"),
    },
    tool_call=('[TOOL_CALLS][{"name": "', '", "arguments": ', "}]"),
    request=("<s>",),
    source="mistral-common InstructTokenizerV3 (tekken)",
)

# DeepSeek V3 chat template: system text right after BOS; <｜User｜>/<｜Assistant｜> markers;
# tool calls and outputs in their own special-token blocks.
DEEPSEEK_V3 = ChatTemplate(
    roles={
        "system": (),
        "user": ("<｜User｜>",),
        "assistant": ("<｜Assistant｜>", "<｜end▁of▁sentence｜>"),
        "tool": ("<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>", "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"),
    },
    tool_call=(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>",
        "\n```json\n",
        "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    ),
    request=("<｜begin▁of▁sentence｜>", "<｜Assistant｜>"),
    source="DeepSeek-V3 tokenizer_config.json chat_template",
)

# DeepSeek V3.2 as DeepSeek's API serves deepseek-chat and deepseek-reasoner (``deepseek_dsml``): the
# system text right after BOS with the tools block after it; a user turn ends by asking for the reply
# (<｜Assistant｜> and </think>, or <think> in thinking mode: one token either way); tool results sit
# in a <function_results> block that asks for the reply the same way. Only one result per block is
# framed exactly: a parallel call's results share one block (a few tokens fewer each, not modelled).
DEEPSEEK_V32 = ChatTemplate(
    roles={
        "system": ("", ""),
        "user": ("<｜User｜>", "<｜Assistant｜>" + deepseek_dsml.THINK_END),
        "assistant": ("", "<｜end▁of▁sentence｜>"),
        "tool": ("\n\n<function_results>\n<result>", "</result>\n</function_results>\n\n" + deepseek_dsml.THINK_END),
    },
    request=("<｜begin▁of▁sentence｜>",),
    tool_calls_text=deepseek_dsml.tool_calls_text,
    tools_text=deepseek_dsml.tools_text,
    reasoning_end=deepseek_dsml.THINK_END,
    whole_messages=True,
    source="DeepSeek-V3.2 encoding/encoding_dsv32.py (the API's deepseek-chat / deepseek-reasoner)",
)

# Legacy Claude text-completion format ("\n\nHuman: ... \n\nAssistant:"); tool results
# travel as user turns. Claude 3+ framing is not public: this is the closest public form.
CLAUDE_LEGACY = ChatTemplate(
    roles={
        "system": (),
        "user": ("\n\nHuman: ",),
        "assistant": ("\n\nAssistant: ",),
        "tool": ("\n\nHuman: ",),
    },
    tool_call=('{"name": "', '", "input": ', "}"),
    request=("\n\nAssistant:",),
    source="Anthropic legacy text completions prompt format",
)
