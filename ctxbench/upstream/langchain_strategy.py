"""``strategy=langchain_middleware``: LangChain's own context middleware (``langchain==1.5.0``,
``langchain.agents.middleware``), driven by the replay through the hooks a LangChain agent calls.

* ``kind=summarization``: ``SummarizationMiddleware.before_model``. Once LangChain's approximate
  token count reaches ``trigger`` (a share of the prompt budget, given to LangChain as the model
  profile's ``max_input_tokens``), everything but the last ``keep_messages`` messages (never
  splitting a tool call from its result) is replaced by one human message holding a summary. The
  agent state itself is rewritten (``RemoveMessage(REMOVE_ALL_MESSAGES)``), so to the replay this
  is a **rewrite**. The chat model that writes the summary is a small ``BaseChatModel`` whose
  ``_generate`` is ctxbench's summariser (cassettes, faults and the offline extractive summariser
  work the same), behind LangChain's own retry (``with_retry``) and prompt.
* ``kind=context_editing``: ``ContextEditingMiddleware.wrap_model_call`` with its
  ``ClearToolUsesEdit`` (LangChain's model-agnostic copy of Anthropic's ``clear_tool_uses``): it
  edits a deep copy of the request's messages and leaves the state alone, so it is a **view**.

As in a LangChain agent, a leading system prompt is not part of the state the middleware sees
(``create_agent(system_prompt=...)``): it is sent first on every call and never summarised.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from ctxbench.core import ContextOverflowError, Param, Strategy, StrategyContext
from ctxbench.transcripts.model import Message, ToolCall
from ctxbench.upstream import UpstreamMissing

VERSION = "1.5.0"
INSTALL = "pip install langchain==1.5.0 (scripts/setup.sh installs it)"
KINDS = ("summarization", "context_editing")


def load_langchain() -> Any:
    try:
        from importlib import metadata

        version = metadata.version("langchain")
        import langchain.agents.middleware as middleware
    except Exception as exc:  # noqa: BLE001 - any import failure means: not usable here
        raise UpstreamMissing(f"langchain is not installed or does not import ({exc}): {INSTALL}") from None
    if version != VERSION:
        raise UpstreamMissing(f"langchain {version} is installed; the adapter is checked against {VERSION}: {INSTALL}")
    return middleware


def _summary_model(strategy: LangchainMiddleware, max_input_tokens: int) -> Any:
    """LangChain's chat model whose ``_generate`` is ctxbench's summariser (made lazily: the base
    class comes from the optional package)."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ReplaySummariser(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "ctxbench-summariser"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
            from ctxbench.core import SummaryRequest

            ctx = strategy.ctx
            if ctx is None or ctx.summariser is None:
                raise RuntimeError("no summariser configured for LangChain's SummarizationMiddleware")
            prompt = messages[-1].text if messages else ""
            # LangChain's prompt puts the history between a <messages> marker and its end tag (the
            # marker is part of its documented contract); the rest is the instructions.
            instructions, marker, rest = prompt.partition("<messages>")
            source = rest.replace("Messages to summarize:", "", 1).rsplit("</messages>", 1)[0].strip()
            request = SummaryRequest(
                instructions=instructions.strip() if marker else prompt,
                source_text=source if marker else prompt,
                sections=tuple(re.findall(r"^## (.+)$", instructions, flags=re.M)),
                max_tokens=2000,
                purpose="langchain_summary",
            )
            text = ctx.summariser.summarise(request)
            ctx.emit({"type": "compaction.summary", "layer": "langchain_summarization", "source_chars": len(source)})
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    return ReplaySummariser(profile={"max_input_tokens": max_input_tokens})


class LangchainMiddleware(Strategy):
    def __init__(
        self,
        kind: Annotated[str, Param("LangChain's middleware: summarization or context_editing")] = "summarization",
        trigger: Annotated[float, Param("share of the prompt budget at which it acts", gt=0, le=1)] = 0.8,
        keep_messages: Annotated[int, Param("messages the summarization keeps", ge=0)] = 20,
        trim_tokens_to_summarize: Annotated[
            int | None, Param("tokens of history handed to the summary (None: all)", ge=0)
        ] = 4000,
        clear_keep: Annotated[int, Param("the newest tool uses context editing keeps", ge=0)] = 3,
        clear_at_least: Annotated[int, Param("clear only when this many tokens are freed", ge=0)] = 0,
        clear_tool_inputs: Annotated[bool, Param("also clear call arguments")] = False,
        exclude_tools: Annotated[list[str] | tuple[str, ...], Param("tools whose results are never cleared")] = (),
        placeholder: Annotated[str, Param("the text that replaces a cleared result")] = "[cleared]",
        name: Annotated[str, Param("the strategy's name in results")] = "langchain_middleware",
    ):
        if kind not in KINDS:
            from ctxbench.errors import ConfigError

            raise ConfigError(f"strategy.params.kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.middleware_module = load_langchain()
        self.kind = kind
        # SummarizationMiddleware rewrites the agent state; ContextEditingMiddleware edits a copy per call.
        self.compaction = "rewrite" if kind == "summarization" else "view"
        self.trigger = float(trigger)
        self.keep_messages = int(keep_messages)
        self.trim_tokens_to_summarize = trim_tokens_to_summarize
        self.clear = {
            "keep": int(clear_keep),
            "clear_at_least": int(clear_at_least),
            "clear_tool_inputs": bool(clear_tool_inputs),
            "exclude_tools": tuple(exclude_tools or ()),
            "placeholder": placeholder,
        }
        self.name = name
        self.max_retries = 0
        self.layer = f"langchain_{kind}"
        self.ctx: StrategyContext | None = None
        self.middleware: Any = None
        self.model: Any = None
        self._lc: dict[int, tuple[Message, Any]] = {}  # replayed message -> its LangChain message
        self._back: dict[str, Message] = {}  # LangChain message id (+ content) -> replayed message
        self._ids = 0

    # --- the middleware -----------------------------------------------------------------
    def _middleware(self, ctx: StrategyContext) -> Any:
        self.ctx = ctx
        if self.middleware is not None:
            return self.middleware
        mw = self.middleware_module
        budget = ctx.model.prompt_budget
        self.model = _summary_model(self, budget)
        if self.kind == "summarization":
            self.middleware = mw.SummarizationMiddleware(
                model=self.model,
                trigger=("fraction", self.trigger),
                keep=("messages", self.keep_messages),
                trim_tokens_to_summarize=self.trim_tokens_to_summarize,
            )
        else:
            edit = mw.ClearToolUsesEdit(trigger=max(1, int(self.trigger * budget)), **self.clear)
            self.middleware = mw.ContextEditingMiddleware(edits=[edit])
        return self.middleware

    # --- conversions ------------------------------------------------------------------
    def _to_lc(self, message: Message) -> Any:
        hit = self._lc.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

        self._ids += 1
        mid = f"ctxbench-{self._ids}"
        lc: Any
        if message.role == "system":
            lc = SystemMessage(id=mid, content=message.content)
        elif message.role == "assistant":
            calls = [{"id": c.id, "name": c.name, "args": _arguments(c)} for c in message.tool_calls]
            lc = AIMessage(id=mid, content=message.content, tool_calls=calls)
        elif message.role == "tool":
            lc = ToolMessage(
                id=mid, content=message.content, tool_call_id=message.tool_call_id or "", name=message.name
            )
        else:
            lc = HumanMessage(id=mid, content=message.content)
        self._lc[id(message)] = (message, lc)
        self._back[mid] = message
        return lc

    def _from_lc(self, lc: Any) -> Message:
        original = self._back.get(lc.id or "")
        if original is not None and _same(original, lc):
            return original
        key = f"{lc.id}:{lc.text}:{json.dumps(getattr(lc, 'tool_calls', None) or [], sort_keys=True, default=str)}"
        hit = self._back.get(key)
        if hit is None:
            role = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}[lc.type]
            base = original or Message(role=role, content="")  # type: ignore[arg-type]
            calls = (
                tuple(ToolCall(c["id"] or "", c["name"], json.dumps(c["args"])) for c in lc.tool_calls)
                if role == "assistant"
                else base.tool_calls
            )
            extra = {"tool_call_id": lc.tool_call_id, "name": lc.name} if role == "tool" else {}
            hit = base.replace(
                content=lc.text, tool_calls=calls, metadata={**base.metadata, "compacted_by": [self.layer]}, **extra
            )
            self._back[key] = hit
        return hit

    # --- the replay hooks -------------------------------------------------------------
    def before_call(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        middleware = self._middleware(ctx)
        lead = 0
        while lead < len(messages) and messages[lead].role == "system":
            lead += 1
        system, rest = messages[:lead], messages[lead:]
        chats = [self._to_lc(m) for m in rest]
        try:
            out = self._summarize(middleware, chats) if self.kind == "summarization" else self._edit(middleware, chats)
        except Exception as exc:  # noqa: BLE001 - the summary failed after LangChain's retries: the agent run stops
            ctx.emit({"type": "compaction.failure", "layer": self.layer, "error": f"{type(exc).__name__}: {exc}"[:300]})
            return messages
        if out is None:
            return messages
        compacted = [*system, *(self._from_lc(c) for c in out)]
        if len(compacted) == len(messages) and all(a is b for a, b in zip(compacted, messages)):
            return messages
        ctx.mark_layer(self.layer)
        return compacted

    def _summarize(self, middleware: Any, chats: list[Any]) -> list[Any] | None:
        from langgraph.graph.message import REMOVE_ALL_MESSAGES

        update = middleware.before_model({"messages": chats}, None)
        if not update:
            return None
        out = list(update["messages"])
        if not out or getattr(out[0], "id", None) != REMOVE_ALL_MESSAGES:
            raise RuntimeError(f"unexpected state update from SummarizationMiddleware: {out[:1]!r}")
        return out[1:]

    def _edit(self, middleware: Any, chats: list[Any]) -> list[Any] | None:
        from langchain.agents.middleware.types import ModelRequest

        if not chats:
            return None
        sent: list[Any] = []

        def handler(request: Any) -> Any:
            sent.extend(request.messages)
            return None

        middleware.wrap_model_call(ModelRequest(model=self.model, messages=chats, state={"messages": chats}), handler)
        return sent

    def on_overflow(
        self, messages: list[Message], error: ContextOverflowError, ctx: StrategyContext, attempt: int
    ) -> list[Message] | None:
        return None  # neither middleware reacts to a rejected prompt


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except (ValueError, TypeError):
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


def _same(message: Message, lc: Any) -> bool:
    if lc.text != message.content:
        return False
    calls = getattr(lc, "tool_calls", None) or []
    return len(calls) == len(message.tool_calls) and all(
        c["args"] == _arguments(o) for c, o in zip(calls, message.tool_calls)
    )
