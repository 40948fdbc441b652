"""``strategy=inspect_compaction``: inspect_ai's compaction (``inspect-ai==0.3.285``, the public
``inspect_ai.model`` API: ``compaction()``, ``CompactionEdit``, ``CompactionTrim``,
``CompactionSummary``, ``CompactionAuto``), driven by the replay.

Before every call the agent hands inspect's ``Compact`` handler its whole history
(``compact_input``) and sends what comes back; after the call ``record_output`` calibrates the
handler's token estimate with the provider's reported prompt tokens (here the simulated
provider's count). The handler keeps its compacted input between calls, so to the replay this is
a per-call view of a growing history with the handler's own state. The target model is a small
``ModelAPI`` whose ``generate`` is ctxbench's summariser (cassettes, faults and the offline
extractive summariser work the same) and whose token counting is inspect's default estimate.
The threshold is a ratio of the model's prompt budget, given to inspect in tokens.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from ctxbench.core import ContextOverflowError, Param, Strategy, StrategyContext
from ctxbench.transcripts.model import Message, ToolCall
from ctxbench.upstream import UpstreamMissing

VERSION = "0.3.285"
INSTALL = "bash scripts/setup.sh installs inspect-ai==0.3.285 and the packages inspect_ai.model imports"
KINDS = ("edit", "trim", "summary", "auto")


def load_inspect() -> Any:
    from importlib import metadata

    try:
        version = metadata.version("inspect-ai")
    except metadata.PackageNotFoundError:
        raise UpstreamMissing(f"inspect_ai is not installed: {INSTALL}") from None
    try:
        import inspect_ai.model as model
    except ImportError as exc:
        # Installed, but a package it imports is not: name that one, not the wheel setup already put in.
        name = getattr(exc, "name", None) or str(exc)
        raise UpstreamMissing(
            f"inspect-ai {version} is installed but `import inspect_ai.model` fails: {exc}; "
            f"install {name!r} at the version scripts/setup.sh pins (it lists what inspect_ai.model needs)"
        ) from None
    if version != VERSION:
        raise UpstreamMissing(f"inspect-ai {version} is installed; the adapter is checked against {VERSION}: {INSTALL}")
    return model


class _SummariserAPI:
    """Builds inspect's ``ModelAPI`` backed by ctxbench's summariser (made lazily: the base class
    comes from the optional package)."""

    @staticmethod
    def make(model_name: str, strategy: InspectCompaction) -> Any:
        from inspect_ai.model import ModelAPI, ModelOutput, modelapi

        class SummariserAPI(ModelAPI):
            async def generate(self, input, tools, tool_choice, config):  # type: ignore[no-untyped-def]
                from ctxbench.llm.base import SummaryRequest

                ctx = strategy.ctx
                texts = [f"[{m.role}]: {m.text}" for m in input]
                instructions = input[-1].text if input else ""
                request = SummaryRequest(
                    instructions=instructions,
                    source_text="\n".join(texts[:-1]),
                    sections=(),
                    max_tokens=config.max_tokens or 2000,
                    purpose="inspect_summary",
                )
                if ctx is None or ctx.summariser is None:
                    raise RuntimeError("no summariser configured for inspect's CompactionSummary")
                text = ctx.summariser.summarise(request)
                ctx.emit(
                    {"type": "compaction.summary", "layer": "inspect_summary", "source_chars": len(request.source_text)}
                )
                return ModelOutput.from_content(model=self.model_name, content=text)

        # Registered through inspect's public decorator: its Model reads the provider's registry name.
        return modelapi(name="ctxbench")(SummariserAPI)(model_name=model_name)


class InspectCompaction(Strategy):
    compaction = "view"

    def __init__(
        self,
        kind: Annotated[str, Param("inspect_ai's compaction: auto, edit, trim or summary")] = "auto",
        threshold: Annotated[float, Param("share of the prompt budget at which inspect_ai compacts", gt=0, le=1)] = 0.9,
        name: Annotated[str, Param("the strategy's name in results")] = "inspect_compaction",
        **options: Any,
    ):
        if kind not in KINDS:
            from ctxbench.errors import ConfigError

            raise ConfigError(f"strategy.params.kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.inspect = load_inspect()
        self.kind = kind
        self.threshold = float(threshold)
        self.options = {k: v for k, v in options.items() if v is not None}
        self.name = name
        self.max_retries = 0
        self.ctx: StrategyContext | None = None
        self.handler: Any = None
        self.model: Any = None
        self._chat: dict[int, tuple[Message, Any]] = {}  # replayed message -> its ChatMessage (stable ids)
        self._back: dict[str, Message] = {}  # ChatMessage id -> replayed message
        self._last_input: list[Any] = []

    # --- conversions ------------------------------------------------------------------
    def _to_chat(self, message: Message, index: int) -> Any:
        hit = self._chat.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
        from inspect_ai.tool import ToolCall as InspectToolCall

        mid = f"m{index}-{len(self._chat)}"
        chat: Any
        if message.role == "system":
            chat = ChatMessageSystem(id=mid, content=message.content)
        elif message.role == "assistant":
            calls = [InspectToolCall(id=c.id, function=c.name, arguments=_arguments(c)) for c in message.tool_calls]
            chat = ChatMessageAssistant(id=mid, content=message.content, tool_calls=calls or None)
        elif message.role == "tool":
            chat = ChatMessageTool(
                id=mid, content=message.content, tool_call_id=message.tool_call_id, function=message.name
            )
        else:
            chat = ChatMessageUser(id=mid, content=message.content)
        self._chat[id(message)] = (message, chat)
        self._back[mid] = message
        return chat

    def _from_chat(self, chat: Any) -> Message:
        original = self._back.get(chat.id or "")
        if original is not None and _same(original, chat):
            return original
        key = f"{chat.id}:{chat.text}:{len(getattr(chat, 'tool_calls', None) or [])}"
        hit = self._back.get(key)
        if hit is None:
            calls = tuple(
                ToolCall(c.id, c.function, json.dumps(c.arguments)) for c in (getattr(chat, "tool_calls", None) or [])
            )
            role = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}[chat.role]
            base = original or Message(role=role, content="")  # type: ignore[arg-type]
            extra = {"tool_call_id": chat.tool_call_id, "name": chat.function} if role == "tool" else {}
            hit = base.replace(
                content=chat.text,
                tool_calls=calls if role == "assistant" else base.tool_calls,
                metadata={**base.metadata, "compacted_by": [f"inspect_{self.kind}"]},
                **extra,
            )
            self._back[key] = hit
        return hit

    # --- the handler ------------------------------------------------------------------
    def _handler(self, ctx: StrategyContext) -> Any:
        self.ctx = ctx
        if self.handler is not None:
            return self.handler
        inspect = self.inspect
        from inspect_ai.model import GenerateConfig, Model

        self.model = Model(_SummariserAPI.make(ctx.model.name, self), GenerateConfig())
        threshold = max(1, int(self.threshold * ctx.model.prompt_budget))
        classes = {
            "edit": inspect.CompactionEdit,
            "trim": inspect.CompactionTrim,
            "summary": inspect.CompactionSummary,
            "auto": inspect.CompactionAuto,
        }
        kwargs: dict[str, Any] = {"threshold": threshold, **self.options}
        if self.kind == "summary":
            kwargs["model"] = self.model
        strategy = classes[self.kind](**kwargs)
        # inspect keeps the prefix in every compacted input: the system prompt and the task.
        messages = ctx.transcript.messages
        first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        prefix = [self._to_chat(m, i) for i, m in enumerate(messages) if m.role == "system" or i == first_user]
        self.handler = inspect.compaction(strategy, prefix=prefix, tools=None, model=self.model)
        return self.handler

    def before_call(self, messages: list[Message], ctx: StrategyContext) -> list[Message]:
        handler = self._handler(ctx)
        chats = [self._to_chat(m, i) for i, m in enumerate(messages)]
        before = len(self._back)
        try:
            compacted, _summary = asyncio.run(handler.compact_input(chats))
        except RuntimeError as exc:  # "Compaction insufficient": an agent run would stop here
            ctx.emit({"type": "compaction.failure", "layer": f"inspect_{self.kind}", "error": str(exc)[:300]})
            self._last_input = chats
            return messages
        self._last_input = list(compacted)
        out = [self._from_chat(c) for c in compacted]
        same = len(out) == len(messages) and all(a is b for a, b in zip(out, messages))
        if not same and (len(self._back) > before or len(out) < len(messages)):
            ctx.mark_layer(f"inspect_{self.kind}")
        return messages if same else out

    def on_overflow(
        self, messages: list[Message], error: ContextOverflowError, ctx: StrategyContext, attempt: int
    ) -> list[Message] | None:
        return None

    def after_call(self, messages: list[Message], prompt_tokens: int, ctx: StrategyContext) -> None:
        from inspect_ai.model import ModelOutput, ModelUsage

        output = ModelOutput.from_content(model=ctx.model.name, content="")
        output.usage = ModelUsage(input_tokens=prompt_tokens, output_tokens=0, total_tokens=prompt_tokens)
        asyncio.run(self.handler.record_output(self._last_input, output))
        ctx.estimator.observe(messages, prompt_tokens)


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except (ValueError, TypeError):
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


def _same(message: Message, chat: Any) -> bool:
    if chat.text != message.content:
        return False
    calls = getattr(chat, "tool_calls", None) or []
    return len(calls) == len(message.tool_calls) and all(
        c.arguments == _arguments(o) for c, o in zip(calls, message.tool_calls)
    )
