"""Thresholds whose every use is recorded, so the cells of a sweep that make the same decisions can
share one replay (issue 24; ``ctxbench.cell_reuse`` does the sharing).

During a recorded replay a sweepable parameter's value reaches the strategy as a ``Tracked``: a
comparison with a number (or another ``Tracked``) answers as the float would and records its
outcome; anything else (arithmetic, ``float()``, formatting, hashing, equality) also answers as
the float would but marks the cell *tainted*, and a tainted cell is never shared. So a strategy
need not declare anything to stay correct: only a cell whose parameters were compared and nothing
more is shared, with every setting that gives each recorded comparison the same outcome.

Names of levels (a ``context.status`` event's ``state``) are labels, not decisions: ``LevelNames``
names a ratio by the levels it reached, and with tracked levels gives a ``DeferredName`` that the
cell resolves for its own setting when it writes its rows (``resolve_names``), and another setting
resolves for its own when it copies the cell. A ``DeferredName`` used for anything but being
carried into a row taints the cell as well.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A recorded comparison: (parameter, operator, the other side, outcome); the other side is a
# number or, as ("param", name), another parameter.
Comparison = tuple[str, str, Any, bool]
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass
class Recording:
    """What one cell's replay did with its tracked parameters."""

    values: dict[str, float]
    comparisons: set[Comparison] = field(default_factory=set)
    tainted: list[str] = field(default_factory=list)  # why the cell cannot be shared (first few)

    def taint(self, why: str) -> None:
        if len(self.tainted) < 5:
            self.tainted.append(why)

    def conditions(self) -> dict[str, Any]:
        """The recorded comparisons as what another setting must meet to give each the same
        outcome: per parameter the interval of its values (``[low, low_open, high, high_open]``,
        None for no bound), and the comparisons of two parameters as they were."""
        bounds: dict[str, list[Any]] = {name: [None, False, None, False] for name in self.values}
        relations = []
        for name, op, other, outcome in sorted(self.comparisons, key=repr):
            if isinstance(other, tuple):
                relations.append([name, op, other[1], outcome])
                continue
            # value OP other == outcome, as a bound on value: (is it a low bound, is it open).
            low, open_ = {
                (">=", True): (True, False),
                (">=", False): (False, True),
                (">", True): (True, True),
                (">", False): (False, False),
                ("<=", True): (False, False),
                ("<=", False): (True, True),
                ("<", True): (False, True),
                ("<", False): (True, False),
            }[op, outcome]
            bound = bounds[name]
            if low and (bound[0] is None or other > bound[0] or (other == bound[0] and open_)):
                bound[0], bound[1] = other, open_
            if not low and (bound[2] is None or other < bound[2] or (other == bound[2] and open_)):
                bound[2], bound[3] = other, open_
        return {"bounds": bounds, "relations": relations}


def meets(conditions: Mapping[str, Any], values: Mapping[str, float]) -> bool:
    """Would ``values`` give every comparison ``conditions`` (``Recording.conditions``) records the
    same outcome? Every bounded parameter must be in ``values``."""
    for name, (low, low_open, high, high_open) in conditions["bounds"].items():
        if name not in values:
            return False
        value = values[name]
        if low is not None and (value < low or (low_open and value == low)):
            return False
        if high is not None and (value > high or (high_open and value == high)):
            return False
    for name, op, other, outcome in conditions["relations"]:
        if name not in values or other not in values or _OPS[op](values[name], values[other]) != outcome:
            return False
    return True


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class Tracked:
    """A sweepable parameter's value during a recorded replay (see the module's docstring)."""

    __slots__ = ("name", "value", "recording")

    def __init__(self, name: str, value: float, recording: Recording) -> None:
        self.name, self.value, self.recording = name, float(value), recording

    def _compare(self, op: str, other: Any) -> bool:
        if isinstance(other, Tracked) and other.recording is self.recording:
            outcome = _OPS[op](self.value, other.value)
            self.recording.comparisons.add((self.name, op, ("param", other.name), outcome))
            return outcome
        if not _number(other):
            self.recording.taint(f"{self.name} compared with a {type(other).__name__}")
            return bool(_OPS[op](self.value, other.value if isinstance(other, Tracked) else other))
        outcome = _OPS[op](self.value, other)
        self.recording.comparisons.add((self.name, op, float(other), outcome))
        return outcome

    # Python reflects `number < tracked` to `tracked > number`: both directions are recorded.
    def __lt__(self, other: Any) -> bool:
        return self._compare("<", other)

    def __le__(self, other: Any) -> bool:
        return self._compare("<=", other)

    def __gt__(self, other: Any) -> bool:
        return self._compare(">", other)

    def __ge__(self, other: Any) -> bool:
        return self._compare(">=", other)

    def _used(self, how: str) -> float:
        self.recording.taint(f"{self.name} used in {how}")
        return self.value

    def __eq__(self, other: object) -> bool:
        return self._used("==") == (other.value if isinstance(other, Tracked) else other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._used("hash"))

    def __bool__(self) -> bool:
        return bool(self._used("bool"))

    def __float__(self) -> float:
        return self._used("float()")

    def __int__(self) -> int:
        return int(self._used("int()"))

    def __index__(self) -> int:
        raise TypeError(f"{self.name}: a float threshold is not an index")

    def __round__(self, ndigits: int | None = None) -> float:
        return round(self._used("round()"), ndigits)

    def __str__(self) -> str:
        return str(self._used("str()"))

    def __repr__(self) -> str:
        return repr(self._used("repr()"))

    def __format__(self, spec: str) -> str:
        return format(self._used("format()"), spec)

    def __neg__(self) -> float:
        return -self._used("arithmetic")

    def __abs__(self) -> float:
        return abs(self._used("arithmetic"))

    def __add__(self, other: Any) -> Any:
        return self._used("arithmetic") + _plain(other)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self._used("arithmetic") - _plain(other)

    def __rsub__(self, other: Any) -> Any:
        return _plain(other) - self._used("arithmetic")

    def __mul__(self, other: Any) -> Any:
        return self._used("arithmetic") * _plain(other)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        return self._used("arithmetic") / _plain(other)

    def __rtruediv__(self, other: Any) -> Any:
        return _plain(other) / self._used("arithmetic")

    def __copy__(self) -> Tracked:
        return self  # a config copied before it is built still records into the same cell

    def __deepcopy__(self, memo: dict[int, Any]) -> Tracked:
        return self

    def __reduce__(self) -> Any:
        return (float, (self._used("pickling"),))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # a library probing for a protocol (attrs, dataclasses): not a use
            raise AttributeError(name)
        return getattr(self._used(f".{name}"), name)


def _plain(value: Any) -> Any:
    return value._used("arithmetic") if isinstance(value, Tracked) else value


def name_level(ratio: float, levels: Sequence[tuple[str, float]], above: str, below: str) -> str:
    """``above`` from a ratio of 1, else the name of the highest level the ratio reached (the
    levels in ascending order, ties in their given order), else ``below``."""
    if ratio >= 1.0:
        return above
    state = below
    for name, start in sorted(levels, key=lambda kv: kv[1]):
        if ratio >= start:
            state = name
    return state


class LevelNames:
    """Names a ratio by the levels it reached (a strategy's warning, error, critical): a plain
    name, or a ``DeferredName`` when a level is tracked."""

    def __init__(self, levels: Mapping[str, Any], above: str = "overflow", below: str = "normal") -> None:
        self.levels = list(levels.items())
        self.above, self.below = above, below
        tracked = [v for _, v in self.levels if isinstance(v, Tracked)]
        self.recording = tracked[0].recording if tracked else None
        # The levels as given, a tracked one by its parameter's name: how another setting names a ratio.
        self.spec = [(n, v.name if isinstance(v, Tracked) else v) for n, v in self.levels]
        self._plain = None if tracked else sorted(self.levels, key=lambda kv: kv[1])

    def name(self, ratio: float) -> str:
        if ratio >= 1.0:
            return self.above
        if self._plain is None:  # stands in for the name until the cell resolves it (resolve_names)
            return DeferredName(float(ratio), self)  # type: ignore[return-value]
        state = self.below
        for name, start in self._plain:
            if ratio >= start:
                state = name
        return state

    def resolve(self, ratio: float, values: Mapping[str, float]) -> str:
        levels = [(n, values[v] if isinstance(v, str) else v) for n, v in self.spec]
        return name_level(ratio, levels, self.above, self.below)


class DeferredName:
    """A level's name not yet known: the ratio and the levels it is named by."""

    __slots__ = ("ratio", "names")

    def __init__(self, ratio: float, names: LevelNames) -> None:
        self.ratio, self.names = ratio, names

    def _used(self, how: str) -> str:
        assert self.names.recording is not None
        self.names.recording.taint(f"a level's name used in {how}")
        return self.names.resolve(self.ratio, self.names.recording.values)

    def __eq__(self, other: object) -> bool:
        return self._used("==") == other

    def __ne__(self, other: object) -> bool:
        return self._used("!=") != other

    def __hash__(self) -> int:
        return hash(self._used("hash"))

    def __bool__(self) -> bool:
        return bool(self._used("bool"))

    def __str__(self) -> str:
        return self._used("str()")

    def __repr__(self) -> str:
        return repr(self._used("repr()"))

    def __format__(self, spec: str) -> str:
        return format(self._used("format()"), spec)

    def __copy__(self) -> DeferredName:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> DeferredName:
        return self

    def __reduce__(self) -> Any:
        return (str, (self._used("pickling"),))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._used(f".{name}"), name)


def resolve_names(files: Mapping[str, list[dict[str, Any]]], values: Mapping[str, float]) -> dict[str, Any] | None:
    """Replace every ``DeferredName`` found as the value of a row's top-level key by its name for
    ``values``. Returns where each was (file, row, key, ratio, the name given) and how to name it
    for another setting (``rename``), or
    None when they came from more than one set of levels. One left deeper in a row, or in another
    file, makes writing that row fail (it is no JSON): never a wrong name."""
    places: list[list[Any]] = []
    names: LevelNames | None = None
    mixed = False
    for file, rows in files.items():
        for i, row in enumerate(rows):
            for key, value in row.items():
                if type(value) is DeferredName:
                    row[key] = value.names.resolve(value.ratio, values)
                    places.append([file, i, key, value.ratio, row[key]])
                    mixed = mixed or (names is not None and value.names is not names)
                    names = value.names
    if mixed:
        return None
    levels = {"spec": names.spec, "above": names.above, "below": names.below} if names else None
    return {"places": places, "levels": levels}


def rename(names: Mapping[str, Any], ratio: float, values: Mapping[str, float]) -> str:
    """The name ``resolve_names`` recorded at a place, for the setting ``values``."""
    levels = [(n, values[v] if isinstance(v, str) else v) for n, v in names["spec"]]
    return name_level(ratio, levels, names["above"], names["below"])
