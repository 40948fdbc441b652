"""Turn a resolved Hydra config into the objects a replay needs: one place per decision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from ctxbench.core import ModelSpec, SnapshotSource, Strategy
from ctxbench.errors import ConfigError
from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes.boilerplate import Boilerplate
from ctxbench.probes.checkpoints import CheckpointPolicy, ProbeObserver
from ctxbench.probes.extract import extract_probes
from ctxbench.registry import expand_targets
from ctxbench.replay.provider import model_from_config
from ctxbench.tokens.estimators import Estimator
from ctxbench.transcripts.model import Probe, Transcript

# Keys of a strategy config that are ctxbench's, not the class's arguments (`params` holds
# strategy-level settings that the layer configs interpolate, e.g. the seed's TOML keys).
STRATEGY_META_KEYS = ("name", "estimator", "description", "params")


def to_plain(cfg: Any) -> Any:
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg


def build_model(cfg: DictConfig) -> ModelSpec:
    data = to_plain(cfg.model)
    try:
        model = model_from_config(data)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"model config: {exc}") from None
    if model.prompt_budget <= 0:
        raise ConfigError(f"model {model.name}: reserved_output_tokens must be below context_window")
    return model


def strategy_name(cfg: DictConfig) -> str:
    return str(cfg.strategy.get("name") or cfg.strategy.get("_target_", "strategy").rsplit(".", 1)[-1])


def strategy_config(cfg: DictConfig, resolved: dict[str, Any] | None = None) -> dict[str, Any]:
    """What ``build_strategy`` instantiates: the strategy's config, resolved, its short target
    names expanded (the same for every cell of a job: ``build_strategy`` takes it computed once).
    ``resolved``: the job's whole config resolved already (``run_app.resolved_config``), whose
    strategy is taken when nothing in it is left to resolve; resolving five_layer's config again
    cost 9 ms a job."""
    plain = resolved.get("strategy") if resolved is not None else None
    if not isinstance(plain, dict) or _unresolved(plain):
        plain = to_plain(cfg.strategy)
    data = {k: v for k, v in plain.items() if k not in STRATEGY_META_KEYS}  # expand_targets copies it
    if "_target_" not in data:
        raise ConfigError(f"strategy {strategy_name(cfg)!r}: config has no _target_")
    return expand_targets(data)  # short names (`_target_: drop_rounds`, see ctxbench ls) to class paths


def plain_section(cfg: DictConfig, resolved: dict[str, Any] | None, key: str) -> Any:
    """The config's section ``key`` as plain data: the job's resolved config's (``resolved``, shared:
    read it, never change it) when nothing in it is left to resolve, else resolved from ``cfg``
    (omegaconf's conversion: 0.05-0.09 ms a section, for every cell)."""
    plain = resolved.get(key) if resolved is not None else None
    if plain is None or _unresolved(plain):
        return to_plain(cfg.get(key))
    return plain


def _unresolved(value: Any) -> bool:
    """Whether a plain config holds an interpolation (``resolved_config`` keeps one it cannot resolve)."""
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(_unresolved(v) for v in value.values())
    if isinstance(value, list):
        return any(_unresolved(v) for v in value)
    return False


# Hydra's conversion (plain dicts and lists for the objects built), put in the config itself: given
# to ``instantiate`` as an argument, it is merged into Hydra's copy of the config, and the merge
# copies the config again (DB-GPT's strategy 4.26 -> 2.8 ms a cell, its estimator 0.89 -> 0.63 ms).
CONVERT_ALL = {"_convert_": "all"}


def config_node(config: dict[str, Any]) -> DictConfig:
    """A plain config as the node Hydra's ``instantiate`` makes of it (its targets are strings), made
    once for the cells of a job: ``instantiate`` copies a node before it resolves and reads it, and
    making the node was a third of building a layered strategy (3-4 ms a cell)."""
    return OmegaConf.structured({**config, **CONVERT_ALL}, flags={"allow_objects": True})


class _HydraOnly(Exception):
    """A config that only Hydra's ``instantiate`` builds as it should (see ``_instantiated``)."""


_HYDRA_KEYS = frozenset({"_partial_", "_args_", "_recursive_"})
_SCALARS = (str, int, float, bool, type(None))
_CLASSES: dict[str, Any] = {}  # class path -> the class (Hydra's _locate imports and walks it each time)


def _instantiated(value: Any) -> Any:
    """``instantiate(value)`` with ``_convert_: all`` for a plain config (dicts, lists, scalars and
    ``_target_`` class paths): each target called with its arguments built first, the other dicts
    and lists new plain ones. Hydra copies the config node before and while it reads it (most of
    building a layered strategy: DB-GPT's, 5.4 ms a cell with a prepared node). Raises
    ``_HydraOnly`` for what it does not read the same way (``_partial_``, ``_args_``,
    ``_recursive_``, another ``_convert_``, objects in the config)."""
    kind = type(value)
    if kind is dict:
        if not _HYDRA_KEYS.isdisjoint(value) or value.get("_convert_", "all") != "all":
            raise _HydraOnly
        args = {k: _instantiated(v) for k, v in value.items() if k != "_target_" and k != "_convert_"}
        target = value.get("_target_")
        if target is None:
            return args
        if type(target) is not str:
            raise _HydraOnly
        built = _CLASSES.get(target)
        if built is None:
            from hydra._internal.utils import _locate

            built = _CLASSES[target] = _locate(target)
        return built(**args)
    if kind is list:
        return [_instantiated(v) for v in value]
    if kind in _SCALARS:
        return value
    raise _HydraOnly


def _built(data: dict[str, Any]) -> Any:
    """``instantiate({**data, **CONVERT_ALL})``, without Hydra where ``_instantiated`` can; any failure
    is Hydra's to report (its errors, its wording)."""
    try:
        return _instantiated(data)
    except Exception:  # noqa: BLE001 - built again by Hydra, which raises what it raises
        return instantiate({**data, **CONVERT_ALL})


def build_strategy(cfg: DictConfig, config: dict[str, Any] | DictConfig | None = None) -> Strategy:
    """A fresh strategy object (one per transcript: strategies keep per-conversation state);
    ``config``: ``strategy_config(cfg)``, if computed already, or its ``config_node``."""
    if not isinstance(config, DictConfig):  # a plain config: built without copying it (``_built``)
        try:
            strategy = _built(config if config is not None else strategy_config(cfg))
        except Exception as exc:  # Hydra wraps import and argument errors in its own types
            raise ConfigError(f"strategy {strategy_name(cfg)!r}: {exc}") from None
        strategy.name = strategy_name(cfg)
        return strategy  # type: ignore[no-any-return]
    data: Any = config  # Hydra copies it: the node is left as it was
    convert = {} if config.get("_convert_") == "all" else CONVERT_ALL  # a config_node has it
    try:
        strategy = instantiate(data, **convert)
    except Exception as exc:  # Hydra wraps import and argument errors in its own types
        raise ConfigError(f"strategy {strategy_name(cfg)!r}: {exc}") from None
    strategy.name = strategy_name(cfg)
    return strategy


def estimator_config(cfg: DictConfig, resolved: dict[str, Any] | None = None) -> dict[str, Any]:
    """The estimator the run uses: the estimator group if set, else the strategy's own,
    else the model's exact tokenizer. ``resolved``: the job's config resolved (``plain_section``)."""
    if resolved is None:
        chosen = to_plain(cfg.get("estimator")) or to_plain(cfg.strategy.get("estimator")) or {}
    else:  # read from the resolved config, never changed (build_estimator's expand_targets copies it)
        strategy = plain_section(cfg, resolved, "strategy") or {}
        chosen = plain_section(cfg, resolved, "estimator") or strategy.get("estimator") or {}
    if not chosen:
        model = cfg.model if resolved is None else plain_section(cfg, resolved, "model")
        chosen = {"_target_": "ctxbench.tokens.estimators.ExactEstimator", "tokenizer": model["tokenizer"]}
    return chosen  # type: ignore[no-any-return]


def build_estimator(cfg: DictConfig, config: dict[str, Any] | None = None) -> Estimator:
    """The run's estimator; ``config``: ``estimator_config(cfg)``, if computed already."""
    data = config if config is not None else estimator_config(cfg)
    try:
        estimator = _built(expand_targets(data))  # expand_targets copies the config
    except Exception as exc:
        raise ConfigError(f"estimator: {exc}") from None
    if not isinstance(estimator, Estimator):
        raise ConfigError(f"estimator {type(estimator).__name__} is not a ctxbench Estimator")
    return estimator


def build_summariser(cfg: DictConfig, workdir: Path, stream: str = "", llm_cfg: dict[str, Any] | None = None) -> Any:
    """The summariser LLM-summary layers call (None until ctxbench.llm provides one); ``stream``
    (the transcript's id) keys its injected faults, so each transcript fails at its own calls.
    ``llm_cfg``: the ``llm`` section as plain data, if known (``plain_section``)."""
    try:
        from ctxbench.llm import build_summariser as build
    except ImportError:
        return None
    return build((llm_cfg if llm_cfg is not None else to_plain(cfg.get("llm"))) or {}, workdir, stream)


def build_probe_observer(
    cfg: DictConfig,
    transcript: Transcript,
    workdir: Path | None = None,
    snapshots: SnapshotSource | None = None,
    boilerplate: Boilerplate | None = None,
    judge_cfg: dict[str, Any] | None = None,
) -> ProbeObserver | None:
    """Probes for the transcript (planted, else extracted, skipping the dataset's framework
    boilerplate) judged at the configured checkpoints; ``snapshots``: the strategy's
    (``strategy.snapshots(workdir)``), for "recoverable" verdicts. ``judge_cfg``: the ``judge``
    section as plain data, if known (``plain_section``)."""
    judge_cfg = (judge_cfg if judge_cfg is not None else to_plain(cfg.get("judge"))) or {}
    if not judge_cfg:
        return None
    probes = transcript.probes
    if not probes and judge_cfg.get("write_probes", False):
        probes = written_probes(cfg, judge_cfg, transcript, workdir)
    elif not probes and judge_cfg.get("extract_probes", True):
        probes = extract_probes(transcript, judge_cfg.get("max_extracted_probes", 16), boilerplate)
    if not probes:
        return None
    return ProbeObserver(
        probes,
        build_judge(cfg, judge_cfg, workdir, snapshots, stream=transcript.id),
        CheckpointPolicy(**judge_cfg.get("checkpoints", {})),
    )


def written_probes(
    cfg: DictConfig, judge_cfg: dict[str, Any], transcript: Transcript, workdir: Path | None
) -> list[Probe]:
    """Probes an LLM writes (``judge.write_probes: true``) with the ``llm.prober`` role (default:
    the ``llm.judge`` settings), recorded in and replayed from its cassette like every role."""
    from ctxbench.llm import build_client
    from ctxbench.probes.written import write_probes

    llm = to_plain(cfg.get("llm")) or {}
    role = llm.get("prober") or llm.get("judge")
    if not isinstance(role, dict):
        raise ConfigError("judge.write_probes needs llm.prober (or llm.judge) model settings (e.g. llm=local)")
    client = build_client(role, workdir, role="prober", stream=transcript.id)
    probes, _ = write_probes(transcript, client, judge_cfg.get("max_extracted_probes", 16))
    return probes


def build_judge(
    cfg: DictConfig,
    judge_cfg: dict[str, Any],
    workdir: Path | None,
    snapshots: SnapshotSource | None = None,
    stream: str = "",
) -> Any:
    """The configured judge; ``stream`` (the transcript's id) keys its LLM clients' injected faults."""
    kind = judge_cfg.get("kind", "deterministic")
    if kind == "deterministic":
        return DeterministicJudge(snapshots)
    if kind != "llm":  # a judge registered by name (a plugin's entry point; see docs/extending.md)
        from ctxbench.registry import lookup

        judge_class = lookup("judge", str(kind)).load()
        try:
            return judge_class(**(judge_cfg.get("params") or {}))
        except TypeError as exc:
            raise ConfigError(f"judge.kind {kind!r}: judge.params do not fit {judge_class.__name__} ({exc})") from None
    from ctxbench.judges.agreement import JudgePanel
    from ctxbench.judges.llm import LLMJudge
    from ctxbench.llm import build_client

    llm = to_plain(cfg.get("llm")) or {}
    if not isinstance(llm.get("answerer"), dict) or not isinstance(llm.get("judge"), dict):
        raise ConfigError("judge=llm needs llm.answerer and llm.judge model settings (e.g. llm=local or llm=openai)")
    answerer = build_client(llm["answerer"], workdir, role="answerer", stream=stream)
    grader = build_client(llm["judge"], workdir, role="judge", stream=stream)
    max_chars = judge_cfg.get("max_context_chars")
    beside: dict[str, Any] = {}
    for name in judge_cfg.get("beside") or ():
        if name == "deterministic":
            beside[name] = DeterministicJudge(snapshots)
        elif name == "repeat":
            # A real second opinion: the judge's settings with the configured differences (seed and
            # temperature, or another model), recorded in a cassette of its own.
            repeat = judge_cfg.get("repeat") or {}
            if not isinstance(repeat, dict) or not repeat:
                raise ConfigError("judge.repeat: give what the repeat judge changes, e.g. {temperature: 0.7}")
            params = {**(llm["judge"].get("params") or {}), **(repeat.get("params") or {})}
            repeat_cfg = {**llm["judge"], **repeat, "params": params}
            again = build_client(repeat_cfg, workdir, role="judge", cassette_name="judge_repeat", stream=stream)
            beside[name] = LLMJudge(answerer, again, max_context_chars=max_chars, controls=False)
        else:
            raise ConfigError(f"judge.beside: unknown judge {name!r}; use 'deterministic' or 'repeat'")
    primary = LLMJudge(answerer, grader, max_context_chars=max_chars, controls=bool(judge_cfg.get("controls", True)))
    return JudgePanel(primary, beside) if beside else primary


def judge_usage(judge: Any) -> list[dict[str, Any]]:
    """Usage records of the LLM clients behind a judge (empty for the deterministic judge)."""
    judges = [getattr(judge, "primary", judge), *getattr(judge, "beside", {}).values()]
    clients = {id(c): c for j in judges for c in (getattr(j, "answerer", None), getattr(j, "grader", None)) if c}
    return [u for c in clients.values() for u in getattr(c, "usage", [])]
