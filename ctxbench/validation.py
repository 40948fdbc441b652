"""Config validation before any work: impossible values, unknown keys, folders outside the results.

``ctxbench run`` calls :func:`validate_run_config` before it reads the dataset. Each problem is one
line naming the key a user would set (``strategy.params.warning_threshold``, not the layer key it
is interpolated into), the value and what is allowed; unknown keys get a "did you mean".

Every ``_target_`` object of the config (the strategy, its layers, steps and budget, an estimator)
is checked against what its class declares (``ctxbench.params``: the type and default in the
signature, the range and description in its ``Param``), the same declarations ``ctxbench ls``
shows, so a plugin's layer gets the same checks as a shipped one. Unknown keys are found two
ways: a ``strategy.params`` key that nothing in the strategy config interpolates, and a key of a
``_target_`` object that its class does not take. The settings groups are checked against the
classes they configure the same way (``model``: ``ModelSpec`` and its ``CacheRules``; each LLM role:
``RoleConfig``; ``llm.faults``: ``FaultConfig``; ``judge.checkpoints``: ``CheckpointPolicy``), and
the judge's own keys against ``_JUDGE_KEYS``: no range is inferred from a key's name.
:func:`window_warnings` compares the model's window with each transcript's system prompt once the
dataset is read.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard, cast

from omegaconf import DictConfig, OmegaConf

from ctxbench import params
from ctxbench.core import Param
from ctxbench.errors import ConfigError

_PARAM_REF = re.compile(r"\$\{strategy\.params\.([A-Za-z0-9_]+)\}")
_NUMBER = "a number"


# --- the judge group's own keys ---------------------------------------------------------------------------
# ctxbench.build reads these one by one (no class takes them whole), so they are declared here, the
# way a class declares its parameters; the judge's checkpoints and repeat are classes' (below).
_JUDGE_KEYS: dict[str, tuple[Any, Param]] = {
    "kind": (str, Param("the judge: deterministic, llm, or a plugin's judge by name")),
    "extract_probes": (bool, Param("transcripts without planted probes get extracted ones")),
    "max_extracted_probes": (int, Param("probes extracted per transcript, at most", ge=0)),
    "write_probes": (bool, Param("an LLM (llm.prober, else llm.judge) writes the probes instead")),
    "controls": (bool, Param("grade known answers (gold, a plausible wrong one, UNKNOWN) per checkpoint")),
    "max_false_positive_rate": (float, Param("a judge above this on the controls is untrusted", ge=0, le=1)),
    "max_context_chars": (int | None, Param("cut the rendered context to its last N characters", ge=0)),
    "beside": (list[str], Param("judges run beside it on the same context, for agreement")),
}


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- walking the strategy config ------------------------------------------------------------------------


def _pairs(raw: Any, resolved: Any, path: str) -> Iterator[tuple[str, str, Any, Any]]:
    """(config path, key, raw value, resolved value) of every leaf."""
    if isinstance(resolved, dict):
        for key, value in resolved.items():
            sub_raw = raw.get(key) if isinstance(raw, dict) else None
            yield from _pairs(sub_raw, value, f"{path}.{key}")
            if not isinstance(value, dict | list):
                yield f"{path}.{key}", str(key), sub_raw, value
    elif isinstance(resolved, list):
        for i, value in enumerate(resolved):
            sub_raw = raw[i] if isinstance(raw, list) and i < len(raw) else None
            yield from _pairs(sub_raw, value, f"{path}.{i}")
            if not isinstance(value, dict | list):
                yield f"{path}.{i}", str(i), sub_raw, value


def _user_name(path: str, raw: Any) -> str:
    """The key a user sets: ``strategy.params.x`` when the value is interpolated from it."""
    match = _PARAM_REF.fullmatch(raw.strip()) if isinstance(raw, str) else None
    return f"strategy.params.{match.group(1)}" if match else path


def _targets(resolved: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(resolved, dict):
        if isinstance(resolved.get("_target_"), str):
            yield path, resolved
        for key, value in resolved.items():
            yield from _targets(value, f"{path}.{key}")
    elif isinstance(resolved, list):
        for i, value in enumerate(resolved):
            yield from _targets(value, f"{path}.{i}")


def _target_object(target: str) -> Any:
    """The class or function a ``_target_`` names; None if it cannot be imported (reported when built)."""
    from hydra.utils import get_object

    try:
        return get_object(target)
    except Exception:  # noqa: BLE001 - an unknown target is reported when the strategy is built
        return None


def _did_you_mean(word: str, candidates: set[str]) -> str:
    close = difflib.get_close_matches(word, sorted(candidates), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""


# Keys of a strategy config that are ctxbench's, not the strategy class's (see ctxbench.build).
_STRATEGY_META = {"name", "estimator", "description", "params"}


def _mapping(node: DictConfig, resolve: bool) -> dict[str, Any]:
    """``OmegaConf.to_container`` of a DictConfig, which is a dict (the stub returns the union for any node)."""
    return cast(dict[str, Any], OmegaConf.to_container(node, resolve=resolve))


def strategy_problems(strategy: DictConfig) -> list[str]:
    """Every problem of a strategy config (ranges, ordering, unknown keys, folders), one line each."""
    from ctxbench.registry import expand_targets

    raw = _mapping(strategy, resolve=False)
    try:
        resolved = _mapping(strategy, resolve=True)
    except Exception as exc:  # noqa: BLE001 - an interpolation to a missing key
        return [f"strategy: {' '.join(str(exc).split())}"]
    problems: dict[str, str] = {}
    raw_at = {path: raw_value for path, _, raw_value, _ in _pairs(raw, resolved, "strategy")}
    referenced = set(_PARAM_REF.findall(str(raw)))
    try:
        expanded = expand_targets({k: v for k, v in resolved.items() if k not in _STRATEGY_META})
    except ConfigError as exc:
        _check_order(resolved, raw, problems)
        return [*problems.values(), f"strategy: {exc}"]
    signature_names = _declared_problems(expanded, "strategy", problems, raw_at)
    if isinstance(resolved.get("estimator"), dict):  # the strategy's own estimator (a meta key above)
        try:
            _declared_problems(expand_targets(resolved["estimator"]), "strategy.estimator", problems, raw_at)
        except ConfigError as exc:
            problems.setdefault("strategy.estimator", f"strategy.estimator: {exc}")
    _check_order(resolved, raw, problems)  # after the ranges: a value out of range is named once
    # A key another strategy uses is fine (an experiment sets it for every strategy of a sweep).
    known = referenced | shipped_param_keys()
    raw_params = resolved.get("params")
    given = raw_params if isinstance(raw_params, dict) else {}
    for key in given:
        if key not in known:
            hint = _did_you_mean(key, known | signature_names)
            problems.setdefault(
                f"strategy.params.{key}",
                f"strategy.params.{key}: unknown key, no strategy uses it{hint}",
            )
    return list(problems.values())


@functools.cache
def shipped_param_keys() -> frozenset[str]:
    """Every ``strategy.params`` key a packaged strategy config declares or interpolates."""
    folder = Path(__file__).resolve().parent / "configs" / "strategy"
    keys: set[str] = set()
    for path in folder.glob("*.yaml"):
        text = path.read_text("utf-8")
        keys.update(_PARAM_REF.findall(text))
        config = OmegaConf.load(path)
        assert isinstance(config, DictConfig), f"{path}: a strategy config is a mapping"
        params = config.get("params")
        if params is not None:
            keys.update(str(k) for k in params)
    return frozenset(keys)


def _declared_problems(expanded: Any, prefix: str, problems: dict[str, str], raw_at: dict[str, Any]) -> set[str]:
    """Every ``_target_`` object against its class's declarations: values of the declared type and
    range, no key the class does not take. Returns every parameter name seen (for "did you mean")."""
    seen: set[str] = set()
    for path, node in _targets(expanded, prefix):
        obj = _target_object(node["_target_"])
        declared = params.declarations(obj) if obj is not None else None
        if declared is None:
            continue
        seen |= set(declared)
        cls = node["_target_"].rsplit(".", 1)[-1]
        meta = _STRATEGY_META if path == "strategy" else set()
        for found in params.node_problems(obj, node, path, skip=meta.__contains__):
            if isinstance(found, params.Problem):
                name = _user_name(found.path, raw_at.get(found.path))
                problems.setdefault(name, f"{name}={found.value!r}: {found.text}")
            else:
                where, key, accepted = found
                problems.setdefault(
                    where, f"{where}: unknown key, {cls} takes no {key!r}{_did_you_mean(key, accepted)}"
                )
    return seen


def group_problems(cfg: DictConfig, group: str) -> list[str]:
    """Ranges (and, for ``_target_`` objects, unknown keys) of one more config group: estimator, judge, llm."""
    from ctxbench.registry import expand_targets

    node = cfg.get(group)
    if node is None:
        return []
    try:
        resolved = OmegaConf.to_container(node, resolve=True)
    except Exception as exc:  # noqa: BLE001 - an interpolation to a missing key
        return [f"{group}: {' '.join(str(exc).split())}"]
    problems: dict[str, str] = {}
    if not (isinstance(resolved, dict) and "_target_" in resolved):  # a settings group, not a class's parameters
        _settings_problems(resolved, group, problems)
    low, high = (resolved.get("min_cpt"), resolved.get("max_cpt")) if isinstance(resolved, dict) else (None, None)
    if _is_number(low) and _is_number(high) and low > high:
        problems.setdefault(f"{group}.min_cpt", f"{group}.min_cpt={low!r} must not exceed {group}.max_cpt={high!r}")
    try:
        _declared_problems(expand_targets(resolved), group, problems, {})
    except ConfigError as exc:
        problems.setdefault(group, f"{group}: {exc}")
    return list(problems.values())


def _settings_classes(node: Any, group: str) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """(path, class, mapping) of each part of a settings group that a class declares: the model
    (``ModelSpec``, its ``cache``: ``CacheRules``), each LLM role (``RoleConfig``) and the faults
    (``FaultConfig``), the judge's checkpoints (``CheckpointPolicy``)."""
    from ctxbench.core import ModelSpec
    from ctxbench.llm.client import RoleConfig
    from ctxbench.llm.faults import FaultConfig
    from ctxbench.probes.checkpoints import CheckpointPolicy
    from ctxbench.replay.prefix_cache import CacheRules

    if not isinstance(node, dict):
        return
    if group == "model":
        yield "model", ModelSpec, node
        if isinstance(node.get("cache"), dict):
            yield "model.cache", CacheRules, node["cache"]
    elif group == "llm":
        for key, value in node.items():
            if isinstance(value, dict):
                yield f"llm.{key}", FaultConfig if key == "faults" else RoleConfig, value
    elif group == "judge":
        if isinstance(node.get("checkpoints"), dict):
            yield "judge.checkpoints", CheckpointPolicy, node["checkpoints"]
        if isinstance(node.get("repeat"), dict):  # what the repeat judge changes of llm.judge
            yield "judge.repeat", RoleConfig, node["repeat"]


def _settings_problems(node: Any, group: str, problems: dict[str, str]) -> None:
    """A settings group's values against what declares them: the classes above, and the judge's own
    keys (``_JUDGE_KEYS``). Unknown keys are the builder's to report (``RoleConfig.from_dict``, ...)."""
    for path, cls, mapping in _settings_classes(node, group):
        for found in params.node_problems(cls, mapping, path):
            if isinstance(found, params.Problem):
                problems.setdefault(found.path, f"{found.path}={found.value!r}: {found.text}")
    if group == "judge" and isinstance(node, dict):
        for key, (tp, declared) in _JUDGE_KEYS.items():
            if key in node:
                for found in params.value_problems(f"judge.{key}", tp, declared, node[key]):
                    problems.setdefault(found.path, f"{found.path}={found.value!r}: {found.text}")


def _check_order(resolved: dict[str, Any], raw: dict[str, Any], problems: dict[str, str]) -> None:
    """DB-GPT's states: warning < error <= critical <= 1 (each already checked to be in (0, 1]).

    ``critical`` may equal ``error``: no layer keys on it (it is only reported), and the shipped
    threshold sweep sets error to 0.95, the default critical."""
    thresholds = resolved.get("thresholds")
    if not isinstance(thresholds, dict):
        return
    raw_given = raw.get("thresholds")
    raw_thresholds = raw_given if isinstance(raw_given, dict) else {}
    named = {
        level: (_user_name(f"strategy.thresholds.{level}", raw_thresholds.get(level)), thresholds.get(level))
        for level in ("warning", "error", "critical")
    }
    levels = [(level, name, value) for level, (name, value) in named.items() if _is_number(value)]
    if len(levels) < 2 or any(name in problems for _, name, _ in levels):
        return
    for (_, low_name, low), (high_level, high_name, high) in zip(levels, levels[1:], strict=False):
        if low > high or (low == high and high_level != "critical"):
            relation = "at most" if high_level == "critical" else "below"
            problems.setdefault(
                f"order:{low_name}",
                f"{low_name}={low!r} must be {relation} {high_name}={high!r} (warning < error <= critical <= 1)",
            )


def run_problems(cfg: DictConfig, original_cwd: str | Path | None = None) -> list[str]:
    """Every problem of a ``ctxbench run`` config, one line each (empty: the config can run)."""
    problems = strategy_problems(cfg.strategy)
    for group in ("estimator", "judge", "llm"):
        problems += group_problems(cfg, group)
    model = _mapping(cfg.model, resolve=True) if "model" in cfg else {}
    found: dict[str, str] = {}
    _settings_problems(model, "model", found)
    window, reserved = model.get("context_window"), model.get("reserved_output_tokens")
    if not found and _is_number(window) and _is_number(reserved) and reserved >= window:
        found["model"] = (
            f"model.reserved_output_tokens={reserved!r} must be below model.context_window={window!r} "
            "(no room left for the prompt)"
        )
    problems += found.values()
    dataset = cfg.get("dataset") or {}
    limit = dataset.get("limit")
    if limit is not None and (not _is_number(limit) or isinstance(limit, float) or limit < 0):
        problems.append(f"dataset.limit={limit!r}: must be null (all) or an integer >= 0")
    problems += _output_problems(cfg, original_cwd)
    return problems


def _output_problems(cfg: DictConfig, original_cwd: str | Path | None) -> list[str]:
    """``output.name`` stays a folder inside ``output.root``. (Cassette folders are not confined: a
    user names them on purpose, to share recorded exchanges between a record run and a replay run.)"""
    output = cfg.get("output") or {}
    problem = output_name_problem(output.get("name", ""))
    return [problem] if problem else []


def output_name_problem(name: Any) -> str | None:
    """Why ``output.name`` cannot be a folder inside ``output.root``, or None."""
    name = str(name)
    if not name or params.escapes(name) or name in (".", ""):
        return f"output.name={name!r}: must be a folder name inside output.root (no '..', not absolute)"
    return None


def validate_run_config(cfg: DictConfig, original_cwd: str | Path | None = None) -> None:
    """``ConfigError`` listing every problem (one line each) before any work is done."""
    problems = run_problems(cfg, original_cwd)
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))


def window_warnings(transcripts: list[Any], counter: Any, context_window: int, reserved: int) -> list[str]:
    """One line per transcript whose system prompt alone leaves no room in the window."""
    out = []
    for transcript in transcripts:
        system = [m for m in transcript.messages[:3] if m.role == "system"]
        if not system:
            continue
        tokens = sum(counter.message(m) for m in system)
        if tokens + reserved >= context_window:
            out.append(
                f"model.context_window={context_window} is too small for transcript {transcript.id!r}: its system "
                f"prompt is {tokens:,} tokens, plus {reserved:,} reserved for output: every call will overflow"
            )
    return out
