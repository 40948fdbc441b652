"""Short names for ctxbench's building blocks, and the way third parties add their own.

Six kinds: ``layer``, ``strategy``, ``estimator``, ``judge``, ``tokenizer``, ``importer``. Each
built-in has a short name (``drop_rounds``, ``layered``, ``ema``, ...). A config may write a short
name as ``_target_`` (``_target_: drop_rounds``); ``expand_targets`` turns it into the class path
before Hydra instantiates it. ``ctxbench ls [kind]`` lists everything with its parameters and
defaults, read from the class signature.

Third-party packages add entries through entry points, as pytest and inspect_ai plugins do: in
their pyproject.toml, ``[project.entry-points."ctxbench.layers"] my_layer = "my_pkg.layers:MyLayer"``
(groups ``ctxbench.layers``, ``ctxbench.strategies``, ``ctxbench.estimators``, ``ctxbench.judges``,
``ctxbench.tokenizers`` (a factory returning a Tokenizer), ``ctxbench.importers`` (a
``parse(source, ctx)`` function)). See docs/extending.md.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from ctxbench.errors import ConfigError

KINDS = ("layer", "strategy", "estimator", "judge", "tokenizer", "importer")
GROUPS = {kind: f"ctxbench.{'strategies' if kind == 'strategy' else kind + 's'}" for kind in KINDS}

# Built-ins by short name: "module:attribute". Tokenizers and importers come from their own tables.
BUILTIN: dict[str, dict[str, str]] = {
    "layer": {
        "truncate_tool_result": "ctxbench.layers.truncate_tool_result:TruncateToolResult",
        "compact_old_tool_results": "ctxbench.layers.compact_old_tool_results:CompactOldToolResults",
        "prune_history": "ctxbench.layers.prune_history:PruneHistory",
        "chunked_summary": "ctxbench.layers.chunked_summary:ChunkedSummary",
        "degraded_summary": "ctxbench.layers.degraded_summary:DegradedSummary",
        "fit_tool_results": "ctxbench.layers.fit_tool_results:FitToolResults",
        "observation_micro": "ctxbench.layers.observation_micro:ObservationMicroCompact",
        "drop_rounds": "ctxbench.layers.drop_rounds:SessionMemoryCompact",
        "llm_full_compression": "ctxbench.layers.llm_full_compression:FullContextCompression",
        "reactive_keep_last_rounds": "ctxbench.layers.reactive_keep_last_rounds:ReactiveKeepLastRounds",
        "snapshots": "ctxbench.layers.snapshots:ToolResultSnapshots",
        "mask_observations": "ctxbench.layers.mask_observations:MaskObservations",
        "clear_tool_uses": "ctxbench.layers.clear_tool_uses:ClearToolUses",
        "amortized_forgetting": "ctxbench.layers.amortized_forgetting:AmortizedForgetting",
        "anchored_summary": "ctxbench.layers.anchored_summary:AnchoredSummary",
    },
    "strategy": {
        "layered": "ctxbench.strategies.pipeline:LayeredStrategy",
        "none": "ctxbench.strategies.none:FullHistory",
        "sliding_window": "ctxbench.strategies.sliding_window:SlidingWindow",
    },
    "estimator": {
        "exact": "ctxbench.tokens.estimators:ExactEstimator",
        "ratio": "ctxbench.tokens.estimators:FixedRatioEstimator",
        "ema": "ctxbench.tokens.estimators:EmaEstimator",
        "anchored": "ctxbench.tokens.estimators:AnchoredEstimator",
        "dbgpt": "ctxbench.tokens.dbgpt:DbgptEstimator",
    },
    "judge": {
        "deterministic": "ctxbench.judges.deterministic:DeterministicJudge",
        "llm": "ctxbench.judges.llm:LLMJudge",
    },
}


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    target: str  # "module:attribute"
    origin: str  # "ctxbench" or the distribution that declared the entry point

    @property
    def dotted(self) -> str:
        """The target as Hydra's ``_target_`` wants it: ``module.attribute``."""
        return self.target.replace(":", ".")

    def load(self) -> Any:
        module, _, attribute = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attribute.split(".") if attribute else ():
            obj = getattr(obj, part)
        return obj


@dataclass(frozen=True)
class ParamRow:
    """A parameter as ``ctxbench ls`` shows it: from the signature and its declaration (``ctxbench.core.Param``)."""

    name: str
    annotation: str
    default: str | None  # None: required
    allowed: str = ""  # the declared range, "(0, 1]"
    about: str = ""  # the declared one-line description

    def __str__(self) -> str:
        text = f"{self.name}: {self.annotation}" if self.annotation else self.name
        text = text if self.default is None else f"{text} = {self.default}"
        text += f", in {self.allowed}" if self.allowed else ""
        return f"{text} -- {self.about}" if self.about else text


def _importer_entries() -> Iterator[Entry]:
    from ctxbench.transcripts.formats import PARSERS

    for name, parse in PARSERS.items():
        yield Entry("importer", name, f"{parse.__module__}:{parse.__name__}", "ctxbench")


def _plugin_entries(kind: str) -> Iterator[Entry]:
    for point in entry_points(group=GROUPS[kind]):
        origin = point.dist.name if point.dist is not None else "entry point"
        yield Entry(kind, point.name, point.value, origin)


@cache
def install_plugins() -> None:
    """Tokenizer and importer plugins join the tables those subsystems look names up in
    (``get_tokenizer`` and ``ctxbench import --format``). Called once; cheap afterwards."""
    from ctxbench.tokens.tokenizers import available_tokenizers, register_tokenizer
    from ctxbench.transcripts.formats import install_plugin_parsers

    for entry in _plugin_entries("tokenizer"):
        if entry.name not in available_tokenizers():
            register_tokenizer(entry.name, entry.load())
    install_plugin_parsers()


def entries(kind: str) -> list[Entry]:
    """Every entry of ``kind``: ctxbench's own, then those of installed plugins."""
    if kind not in KINDS:
        raise ConfigError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    if kind == "tokenizer":
        install_plugins()
        from ctxbench.tokens.tokenizers import available_tokenizers

        plugins = {e.name: e for e in _plugin_entries(kind)}
        factory = "ctxbench.tokens.tokenizers:get_tokenizer"
        return [plugins.get(n) or Entry(kind, n, factory, "ctxbench") for n in available_tokenizers()]
    if kind == "importer":
        install_plugins()
        plugins = {e.name: e for e in _plugin_entries(kind)}
        return [plugins.get(e.name) or e for e in _importer_entries()]  # a plugin's parser is in PARSERS too
    own = [Entry(kind, name, target, "ctxbench") for name, target in BUILTIN[kind].items()]
    return own + [e for e in _plugin_entries(kind) if e.name not in BUILTIN[kind]]


def lookup(kind: str, name: str) -> Entry:
    """The entry called ``name``; a ConfigError with the close names when there is none."""
    found = {e.name: e for e in entries(kind)}
    if name in found:
        return found[name]
    import difflib

    close = difflib.get_close_matches(name, list(found), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(found))}"
    raise ConfigError(f"no {kind} named {name!r}{hint} (`ctxbench ls {kind}` lists them)")


def expand_targets(config: Any, kinds: tuple[str, ...] = ("strategy", "layer", "estimator", "judge")) -> Any:
    """A copy of a plain config in which every short ``_target_`` (no dot) is a class path."""
    if isinstance(config, list):
        return [expand_targets(item, kinds) for item in config]
    if not isinstance(config, dict):
        return config
    out = {key: expand_targets(value, kinds) for key, value in config.items()}
    target = out.get("_target_")
    if isinstance(target, str) and "." not in target:
        matches = [e for kind in kinds for e in entries(kind) if e.name == target]
        if not matches:
            names = sorted({e.name for kind in kinds for e in entries(kind)})
            import difflib

            close = difflib.get_close_matches(target, names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"_target_ {target!r} is neither a class path nor a short name{hint} (`ctxbench ls`)")
        out["_target_"] = matches[0].dotted
    return out


def parameters(obj: Callable[..., Any]) -> list[ParamRow]:
    """The parameters of a class (its ``__init__``) or function as ``ls`` shows them: type and
    default from the signature, range and description from each one's declaration."""
    from ctxbench.params import declarations, range_text, type_text

    out = []
    for declared in (declarations(obj) or {}).values():
        default = None if declared.required else repr(declared.default)
        if default is not None and len(default) > 60:  # e.g. a long tuple of patterns
            default = default[:57] + "..."
        about = declared.param.about if declared.param is not None else ""
        out.append(ParamRow(declared.name, type_text(declared.type), default, range_text(declared.param), about))
    return out


def summary(obj: Any, paragraph: bool = False) -> str:
    """The first line of an object's docstring, else of its module's (``paragraph``: the whole
    first paragraph, in one line)."""
    own = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__  # not the base class's
    doc = inspect.cleandoc(own or "") or inspect.getdoc(inspect.getmodule(obj)) or ""
    if not doc.strip():
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split()) if paragraph else doc.strip().splitlines()[0]
