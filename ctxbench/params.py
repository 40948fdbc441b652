"""Parameters as their classes declare them, read in one place.

A layer, strategy or estimator declares each parameter once, in its signature:
``keep: Annotated[int, Param("newest messages kept", ge=1)] = 20`` (``ctxbench.core.Param``; a
dataclass the same way, on its fields). This module reads those declarations for
``ctxbench.validation`` (is a configured value of the declared type, in the declared range?) and
for ``ctxbench ls`` (type, default, range, what it is), so neither guesses from key names. Types
are checked strictly (``"5"`` is not an integer, ``true`` is not a number), except that a whole
float (``2.0``, as an override may give it) is accepted for an integer: scalars here, any other
type (``Sequence[str]``, a mapping, a class) by pydantic's strict validators.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast, get_args, get_origin

from ctxbench.core import Param


@dataclass(frozen=True)
class Declared:
    """One parameter: its name, type (without the declaration), declaration and default."""

    name: str
    type: Any
    param: Param | None
    default: Any = inspect.Parameter.empty  # empty: required

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True)
class Problem:
    """A value that does not fit: where (config path), the value, and what is allowed."""

    path: str
    value: Any
    text: str  # "out of range, allowed (0, 1]", "must be an integer in [0, inf)", ...


def _hints(obj: Any) -> dict[str, Any]:
    """Annotations with their ``Annotated`` extras; {} when they cannot be resolved."""
    target = obj if dataclasses.is_dataclass(obj) or not isinstance(obj, type) else obj.__init__  # type: ignore[misc]
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # noqa: BLE001 - a name only imported under TYPE_CHECKING: read the others one by one
        pass
    namespace = {**vars(sys.modules.get(getattr(obj, "__module__", ""), typing)), "Annotated": Annotated}
    out: dict[str, Any] = {}
    for name, annotation in getattr(target, "__annotations__", {}).items():
        try:
            out[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation  # noqa: S307
        except Exception:  # noqa: BLE001 - this one stays unread (listed, not checked)
            continue
    return out


@functools.cache
def declarations(obj: Any) -> dict[str, Declared] | None:
    """Every parameter of a class (its ``__init__``, or its fields for a dataclass) or function,
    with what its annotation declares; None when it has no readable signature."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    hints = _hints(obj)
    out: dict[str, Declared] = {}
    for p in signature.parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        hint = hints.get(p.name, p.annotation)
        declared: Param | None = None
        if get_origin(hint) is Annotated:
            declared = next((m for m in hint.__metadata__ if isinstance(m, Param)), None)
            hint = hint.__origin__
        out[p.name] = Declared(p.name, hint, declared, p.default)
    return out


def accepts_any_keyword(obj: Any) -> bool:
    try:
        return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return True


def range_text(param: Param | None) -> str:
    """``(0, 1]``, ``[0, inf)``, ... ; "" without bounds."""
    if param is None or all(b is None for b in (param.ge, param.gt, param.le, param.lt)):
        return ""
    low = param.gt if param.gt is not None else param.ge
    high = param.lt if param.lt is not None else param.le
    left = "(" if param.gt is not None or low is None else "["
    right = ")" if param.lt is not None or high is None else "]"
    return f"{left}{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}{right}"


def type_text(tp: Any) -> str:
    """A type as ``ls`` and the errors say it: ``int``, ``float | None``, ``Sequence[str]``."""
    if isinstance(tp, str):
        return tp
    if tp is inspect.Parameter.empty:
        return ""
    args = get_args(tp)
    if get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in args)
    if _is_union(tp):
        return " | ".join("None" if a is type(None) else type_text(a) for a in args)
    name = getattr(get_origin(tp) or tp, "__name__", str(tp).replace("typing.", ""))
    return f"{name}[{', '.join('...' if a is Ellipsis else type_text(a) for a in args)}]" if args else name


def _kind(tp: Any) -> str:
    """What a value must be, in words."""
    options = [a for a in get_args(tp) if a is not type(None)] if _is_union(tp) else [tp]
    words = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
    if len(options) == 1 and options[0] in words:
        none = " or null" if len(options) < len(get_args(tp)) else ""
        return words[options[0]] + none
    return type_text(tp)


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def _members(tp: Any) -> tuple[Any, ...]:
    return get_args(tp) if _is_union(tp) else (tp,)


@functools.cache
def _adapter(tp: Any, low_high: tuple[float | None, ...]) -> Any:
    """A strict pydantic validator of ``tp`` with the declared bounds; None if pydantic cannot build one."""
    import annotated_types
    from pydantic import ConfigDict, TypeAdapter

    ge, gt, le, lt = low_high
    bounds = any(b is not None for b in low_high)
    bounded = Annotated[tp, annotated_types.Interval(ge=ge, gt=gt, le=le, lt=lt)] if bounds else tp
    try:
        return TypeAdapter(cast(Any, bounded), config=ConfigDict(strict=True, arbitrary_types_allowed=True))
    except Exception:  # noqa: BLE001 - a type pydantic cannot check (an unresolved name): no type check
        return None


_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}


def value_problems(path: str, tp: Any, param: Param | None, value: Any) -> list[Problem]:
    """Why ``value`` does not fit the declared type and range ([] when it does). Items of a
    mapping or list are checked one by one, so a problem names its key (``thresholds.warning``)."""
    if param is None or (isinstance(value, Mapping) and "_target_" in value):
        return []  # an object Hydra builds is checked against its own class's declarations
    if param.folder and isinstance(value, str) and escapes(value):
        return [Problem(path, value, "a folder here must stay inside the cell (a relative path without '..')")]
    for member in _members(tp):  # a mapping or list is checked item by item
        origin, args = get_origin(member), get_args(member)
        if isinstance(value, Mapping) and origin in (dict, Mapping) and len(args) == 2:
            return [p for key, item in value.items() for p in value_problems(f"{path}.{key}", args[1], param, item)]
        if isinstance(value, list) and origin in (list, tuple, Sequence) and args:
            return [p for i, item in enumerate(value) for p in value_problems(f"{path}.{i}", args[0], param, item)]
    if isinstance(value, float) and value.is_integer() and int in _members(tp) and float not in _members(tp):
        value = int(value)  # an override's 2.0 for a count
    allowed = range_text(param)
    wrong_type = Problem(path, value, f"must be {_kind(tp)}{f' in {allowed}' if allowed else ''}")
    fits = _scalar_fits(tp, value)
    if fits is None:  # not a plain scalar type: pydantic checks it
        return _pydantic_problems(path, tp, param, value, wrong_type)
    if not fits or _nan(value):
        return [wrong_type]
    if isinstance(value, int | float) and not isinstance(value, bool) and not _within(value, param):
        return [Problem(path, value, f"out of range, allowed {allowed}")]
    return []


_SCALARS = (bool, int, float, str)


def _scalar_fits(tp: Any, value: Any) -> bool | None:
    """Whether ``value`` is of a type made of scalars (``int``, ``float | None``, a ``Literal``),
    strictly as pydantic's strict mode has it (``True`` is no int, an int is a float); None for any
    other type. Checked here because building a pydantic validator per parameter costs more than
    the whole check of a config."""
    members = _members(tp)
    if not all(m is type(None) or m in _SCALARS or get_origin(m) is Literal for m in members):
        return None
    for member in members:
        if member is type(None) and value is None:
            return True
        if get_origin(member) is Literal and value in get_args(member) and type(value) in map(type, get_args(member)):
            return True
        if member is bool and isinstance(value, bool):
            return True
        if member is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if member is float and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if member is str and isinstance(value, str):
            return True
    return False


def _within(value: float, param: Param) -> bool:
    return (
        (param.ge is None or value >= param.ge)
        and (param.gt is None or value > param.gt)
        and (param.le is None or value <= param.le)
        and (param.lt is None or value < param.lt)
    )


def _pydantic_problems(path: str, tp: Any, param: Param, value: Any, wrong_type: Problem) -> list[Problem]:
    adapter = _adapter(tp, (param.ge, param.gt, param.le, param.lt))
    if adapter is None:
        return []
    from pydantic import ValidationError

    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        errors = exc.errors()
        if errors and all(e["type"] in _RANGE_ERRORS for e in errors) and not _nan(value):
            return [Problem(path, value, f"out of range, allowed {range_text(param)}")]
        return [wrong_type]
    return []


def escapes(folder: str) -> bool:
    """True when a relative folder leaves its base (absolute, or through ``..``)."""
    normal = os.path.normpath(folder)
    return os.path.isabs(folder) or normal == ".." or normal.startswith(".." + os.sep)


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def nested_class(tp: Any) -> Any:
    """The dataclass whose fields a mapping (or each mapping of a list) configures, if the type
    names one (``Budget | Mapping[str, Any] | None``, ``Sequence[Step | Mapping[str, Any]]``)."""
    for member in _members(tp):
        origin = get_origin(member)
        if origin in (list, tuple, Sequence) and get_args(member):
            found = nested_class(get_args(member)[0])
            if found is not None:
                return found
        elif isinstance(member, type) and dataclasses.is_dataclass(member):
            return member
    return None


def node_problems(
    obj: Any, node: Mapping[str, Any], path: str, skip: Callable[[str], bool] = lambda key: False
) -> Iterator[Problem | tuple[str, str, set[str]]]:
    """Problems of one configured object: each value against its declaration, nested dataclass
    mappings (a strategy's steps, its budget) the same way; an unknown key is yielded as
    ``(path, key, accepted names)`` for the caller's "did you mean"."""
    declared = declarations(obj)
    if declared is None:
        return
    open_ended = accepts_any_keyword(obj)
    for key, value in node.items():
        if key.startswith("_") or skip(key):
            continue
        where = f"{path}.{key}"
        found = declared.get(key)
        if found is None:
            if not open_ended:
                yield (where, key, set(declared))
            continue
        yield from value_problems(where, found.type, found.param, value)
        inner = nested_class(found.type)
        if inner is None:
            continue
        if isinstance(value, Mapping) and "_target_" not in value:
            yield from node_problems(inner, value, where, skip=lambda k: k == "layer")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping) and "_target_" not in item:
                    yield from node_problems(inner, item, f"{where}.{i}", skip=lambda k: k == "layer")


def describe(declared: Declared) -> str:
    """``keep: int = 20, in [1, inf): newest messages kept`` (``ctxbench ls``)."""
    text = declared.name
    shown = type_text(declared.type)
    if shown:
        text += f": {shown}"
    if not declared.required:
        default = repr(declared.default)
        text += f" = {default if len(default) <= 60 else default[:57] + '...'}"
    if declared.param is not None:
        allowed = range_text(declared.param)
        text += f", in {allowed}" if allowed else ""
        text += f" -- {declared.param.about}"
    return text


def undeclared(obj: Any) -> list[str]:
    """Parameters without a ``Param`` (the shipped parts have none; a test says so)."""
    return [d.name for d in (declarations(obj) or {}).values() if d.param is None]
