"""The schema-variation signature of one JSON event.

As in the seed: every attribute path, recursively, sorted, hashed. We extend each path with
its JSON kind (object, array, string, bool, integer, float; nulls ignored) so that a type
change is a new variation too: the seed's name-only hash misses `level: 5` becoming
`level: "L5"`, and integer versus float is kept apart so int-to-float widening is seen.

Paths are dotted; array elements are `[]`:
    {"a": {"b": 1}, "tags": ["x"], "items": [{"id": 2}]}
    -> a:object, a.b:integer, items:array, items[]:object, items[].id:integer, tags:array,
       tags[]:string

Hashing every event this way in Python costs ~10 µs. Events of one variation share a
*shape* (their key order and value types), and a shape key built from C-level builtins
(`tuple(dict)`, `type`) costs ~3 µs, so `VariationCache` computes the signature once per
shape. The shape key determines the signature exactly, so the cache never changes a result.
The same holds for the rules judged per shape (`shape_verdict`): numbers out of range (their
`OutOfRange` marker is a value type), repeated keys (the `DUPLICATE_KEYS` marker is a key) and
keys that cannot become columns are all properties of the shape.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from streamops.pipeline.records.column_names import unusable_key
from streamops.pipeline.records.strict_json import DUPLICATE_KEYS, OutOfRange

_DICT = dict
_LIST = list
_KINDS: dict[type, str] = {str: "string", bool: "bool", int: "integer", float: "float"}


def variation_paths(event: dict[str, Any]) -> list[str]:
    """Sorted `path:kind` strings of every non-null attribute of `event`."""
    paths: set[str] = set()
    _collect(event, "", paths)
    return sorted(paths)


def _collect(obj: dict[str, Any], prefix: str, out: set[str]) -> None:
    for key, value in obj.items():
        _collect_value(prefix + key, value, out)


def _collect_value(path: str, value: Any, out: set[str]) -> None:
    if value is None:
        return
    kind = type(value)
    if kind is _DICT:
        out.add(path + ":object")
        _collect(value, path + ".", out)
    elif kind is _LIST:
        out.add(path + ":array")
        for element in value:
            _collect_value(path + "[]", element, out)
    else:
        out.add(f"{path}:{_KINDS.get(kind, 'string')}")


def variation_hash(paths: list[str]) -> str:
    """16 hex chars of SHA-256 over the sorted paths: short, stable across runs and machines."""
    return hashlib.sha256("\n".join(paths).encode("utf-8")).hexdigest()[:16]


def shape_key(obj: dict[str, Any]) -> tuple[Any, ...]:
    """Keys in order with each value's type, nested shapes inline: equal keys, equal signature."""
    out: list[Any] = []
    append = out.append
    for key, value in obj.items():
        kind = type(value)
        append(key)
        if kind is _DICT:
            append(shape_key(value))
        elif kind is _LIST:
            append(tuple([shape_key(x) if type(x) is _DICT else _list_shape(x) for x in value]))
        else:
            append(kind)
    return tuple(out)


def _list_shape(value: Any) -> Any:
    if type(value) is _LIST:
        return tuple([shape_key(x) if type(x) is _DICT else _list_shape(x) for x in value])
    return type(value)


@dataclass(frozen=True)
class Variation:
    """What one shape is: its variation hash, or why events of this shape cannot be stored."""

    hash: str | None
    reason: str | None = None
    detail: str | None = None


def shape_verdict(event: dict[str, Any]) -> Variation:
    """Judge a shape once: numbers out of range, repeated keys, keys that cannot be columns."""
    out_of_range = _out_of_range_path(event, "")
    if out_of_range is not None:
        return Variation(None, "number_out_of_range", f"`{out_of_range[:80]}` does not fit a 64-bit integer or double")
    duplicate = _first_duplicate(event)
    if duplicate is not None:
        return Variation(None, "duplicate_key", f"key {duplicate[:80]!r} appears twice in one object")
    unusable = unusable_key(event)
    if unusable is not None:
        return Variation(None, "unusable_key", unusable[:200])
    return Variation(variation_hash(variation_paths(event)))


def _out_of_range_path(value: Any, path: str) -> str | None:
    """The path of the first number out of range (part of the shape, so the same for every event)."""
    if type(value) is OutOfRange:
        return path or "(top level)"
    if type(value) is _DICT:
        children = [(f"{path}.{k}" if path else k, v) for k, v in value.items() if type(k) is str]
    elif type(value) is _LIST:
        children = [(path + "[]", v) for v in value]
    else:
        return None
    for child_path, child in children:
        found = _out_of_range_path(child, child_path)
        if found is not None:
            return found
    return None


def _first_duplicate(value: Any) -> str | None:
    if type(value) is _DICT:
        if DUPLICATE_KEYS in value:
            return value[DUPLICATE_KEYS]
        children = value.values()
    elif type(value) is _LIST:
        children = value
    else:
        return None
    for child in children:
        found = _first_duplicate(child)
        if found is not None:
            return found
    return None


class VariationCache:
    """Verdict per shape, for the life of one Python worker (shapes are few, events many)."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._by_shape: dict[tuple[Any, ...], Variation] = {}
        self._max_entries = max_entries

    def variation(self, event: dict[str, Any]) -> Variation:
        key = shape_key(event)
        found = self._by_shape.get(key)
        if found is None:
            found = shape_verdict(event)
            if len(self._by_shape) >= self._max_entries:
                self._by_shape.clear()
            self._by_shape[key] = found
        return found
