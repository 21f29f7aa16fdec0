"""Turns an attribute tree into one Python function that draws a whole event as a dict literal.

Generating a million events a minute leaves a few microseconds per event. Walking the tree or
calling one closure per field costs three times that, so each (event type, stage) gets its own
function, generated as source once (the technique `dataclasses` and `attrs` use) and then called
per event. Only literals produced here from the tree reach the source; values drawn at run time
never do.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from streamops.pipeline.generator.attribute_schema import (
    Choice,
    Flag,
    FloatRange,
    Ident,
    IntRange,
    Labelled,
    ListOf,
    Node,
    Obj,
    ValueSpec,
)

EventBuilder = Callable[..., dict[str, Any]]


def compile_builder(schema: Obj, rng: random.Random, leading_keys: tuple[str, ...] = ()) -> EventBuilder:
    """A function of `len(leading_keys)` arguments returning a new dict per call.

    The dict holds the leading keys (set to the arguments, in order) followed by the fields of
    `schema` with values drawn from `rng`.
    """
    constants: dict[str, Any] = {}
    params = [f"v{index}" for index in range(len(leading_keys))]
    items = [f"{key!r}: {param}" for key, param in zip(leading_keys, params)]
    items += [f"{name!r}: {_expression(child, constants)}" for name, child in schema.fields]
    source = f"def build({', '.join(params)}):\n    return {{{', '.join(items)}}}\n"
    namespace: dict[str, Any] = {"r": rng.random, "_round": round, "_int": int, "_range": range, **constants}
    exec(compile(source, "<generated event builder>", "exec"), namespace)
    return namespace["build"]


def _expression(node: Node, constants: dict[str, Any]) -> str:
    if isinstance(node, Obj):
        return "{" + ", ".join(f"{name!r}: {_expression(child, constants)}" for name, child in node.fields) + "}"
    if isinstance(node, ListOf):
        extra = node.max_len - node.min_len + 1
        return f"[{_expression(node.item, constants)} for _ in _range({node.min_len} + _int(r() * {extra}))]"
    return _scalar_expression(node.spec, constants)


def _constant(value: Any, constants: dict[str, Any]) -> str:
    name = f"c{len(constants)}"
    constants[name] = value
    return name


def _scalar_expression(spec: ValueSpec, constants: dict[str, Any]) -> str:
    if isinstance(spec, Choice):
        return f"{_constant(spec.values, constants)}[_int(r() * {len(spec.values)})]"
    if isinstance(spec, IntRange):
        return f"({spec.low} + _int(r() * {spec.high - spec.low}))"
    if isinstance(spec, FloatRange):
        return f"_round({float(spec.low)!r} + r() * {float(spec.high - spec.low)!r}, 2)"
    if isinstance(spec, Ident):
        width = len(str(spec.cardinality - 1))
        pattern = _constant(spec.prefix.replace("%", "%%") + f"%0{width}d", constants)
        return f"({pattern} % _int(r() * {spec.cardinality}))"
    if isinstance(spec, Flag):
        return f"(r() < {float(spec.p_true)!r})"
    if isinstance(spec, Labelled):
        pattern = _constant(spec.prefix.replace("%", "%%") + "%d", constants)
        return f"({pattern} % ({spec.low} + _int(r() * {spec.high - spec.low})))"
    raise TypeError(f"no expression for {spec!r}")
