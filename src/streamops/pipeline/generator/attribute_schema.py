"""The shape of an event's attributes, kept as data so it can be both drawn from and described.

One tree serves two purposes that must never disagree: `value_builder` compiles it into a
function that draws events, and the manifest lists its `path:kind` strings as the ground truth
of what the events look like. Values are random; presence of fields and their JSON kinds are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Union

JsonKind = Literal["object", "array", "string", "bool", "integer", "float"]


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of values (all of one JSON kind)."""

    values: tuple[Any, ...]

    @property
    def kind(self) -> JsonKind:
        return _kind_of(self.values[0])


@dataclass(frozen=True)
class IntRange:
    """An integer in [low, high)."""

    low: int
    high: int
    kind: JsonKind = "integer"


@dataclass(frozen=True)
class FloatRange:
    """A float in [low, high) rounded to two decimals; orjson always writes it with a fraction."""

    low: float
    high: float
    kind: JsonKind = "float"


@dataclass(frozen=True)
class Ident:
    """An identifier string: `prefix` plus a zero-padded number below `cardinality`."""

    prefix: str
    cardinality: int
    kind: JsonKind = "string"


@dataclass(frozen=True)
class Flag:
    """A boolean that is true with probability `p_true`."""

    p_true: float
    kind: JsonKind = "bool"


@dataclass(frozen=True)
class Labelled:
    """A number written as a label string (`"L5"`): what an incompatible producer change sends."""

    prefix: str
    low: int
    high: int
    kind: JsonKind = "string"


ValueSpec = Union[Choice, IntRange, FloatRange, Ident, Flag, Labelled]


@dataclass(frozen=True)
class Scalar:
    spec: ValueSpec


@dataclass(frozen=True)
class Obj:
    """A JSON object whose keys are always all present, in this order."""

    fields: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class ListOf:
    """A non-empty JSON array of `item`s (an empty one would hide the element kind)."""

    item: Union[Scalar, Obj]
    min_len: int = 1
    max_len: int = 3


Node = Union[Scalar, Obj, ListOf]


def obj(**fields: Node) -> Obj:
    return Obj(tuple(fields.items()))


def _kind_of(value: Any) -> JsonKind:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise TypeError(f"no JSON scalar kind for {value!r}")


def node_kind(node: Node) -> JsonKind:
    if isinstance(node, Obj):
        return "object"
    if isinstance(node, ListOf):
        return "array"
    return node.spec.kind


def paths(node: Obj, prefix: str = "") -> list[str]:
    """Sorted `path:kind` strings: dotted paths, `[]` for array elements."""
    found: list[str] = []
    _collect(node, prefix, found)
    return sorted(found)


def _collect(node: Node, path: str, found: list[str]) -> None:
    if path:
        found.append(f"{path}:{node_kind(node)}")
    if isinstance(node, Obj):
        for name, child in node.fields:
            _collect(child, f"{path}.{name}" if path else name, found)
    elif isinstance(node, ListOf):
        _collect(node.item, f"{path}[]", found)


def field_at(node: Obj, path: str) -> Node:
    """The node at a dotted path of objects (KeyError when absent)."""
    current: Node = node
    for part in path.split("."):
        if not isinstance(current, Obj):
            raise KeyError(path)
        current = dict(current.fields)[part]
    return current


def with_field(node: Obj, path: str, value: Node) -> Obj:
    """A copy of `node` with the field at a dotted path replaced, or appended when new."""
    head, _, rest = path.partition(".")
    fields = dict(node.fields)
    if rest:
        child = fields[head]
        if not isinstance(child, Obj):
            raise KeyError(path)
        value = with_field(child, rest, value)
    fields[head] = value
    return Obj(tuple(fields.items()))
