"""Which event types change during a run, how, and from which line on.

Drift is planned before the first line is written, so every schema variation the pipeline will
meet is known in advance and recorded in the manifest as ground truth.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal, get_args

from streamops.pipeline.generator.attribute_schema import (
    Choice,
    Flag,
    FloatRange,
    Ident,
    IntRange,
    Labelled,
    Node,
    Obj,
    Scalar,
    field_at,
    obj,
    with_field,
)
from streamops.pipeline.generator.event_catalog import INCOMPATIBLE_PATH, EventTypeSpec

DriftKind = Literal[
    "new_attribute_top",
    "new_attribute_nested",
    "new_event_type",
    "numeric_widening",
    "incompatible_type",
]
DRIFT_KINDS: tuple[DriftKind, ...] = get_args(DriftKind)

ASSIGNMENT_ORDER: tuple[DriftKind, ...] = (
    "new_attribute_top",
    "new_attribute_nested",
    "numeric_widening",
    "incompatible_type",
    "new_event_type",
)
"""Kinds are dealt to drifting types in this order; `new_event_type` comes last so at least one
type is live from the first line whatever `--drift` says."""

DRIFT_FRACTIONS = (0.25, 0.5, 0.75)
"""Changes happen after this fraction of the run's lines, dealt round-robin to drifting types."""

NEW_TOP_ATTRIBUTES: tuple[tuple[str, Node], ...] = (
    ("has_plugins", Scalar(Flag(0.3))),
    ("ab_test_group", Scalar(Choice(("control", "variant_a", "variant_b")))),
    ("consent", obj(analytics=Scalar(Flag(0.8)), marketing=Scalar(Flag(0.4)))),
    ("referrer", Scalar(Choice(("organic", "friend", "streamer", "ad_campaign")))),
)
NEW_NESTED_ATTRIBUTES: tuple[tuple[str, Node], ...] = (
    ("context.device.gpu", Scalar(Choice(("rtx-4070", "rx-7800", "arc-a770", "m3", "adreno-750")))),
    ("context.device.ram_mb", Scalar(IntRange(2_048, 65_536))),
    ("context.session.is_resumed", Scalar(Flag(0.2))),
    ("player.guild_id", Scalar(Ident("g", 100_000))),
)


@dataclass(frozen=True)
class DriftStep:
    """One change to one event type: from line `at_ordinal` on, its events take the new shape.

    `path` is the attribute added or whose kind changed (None for `new_event_type`).
    """

    event_type: str
    kind: DriftKind
    at_ordinal: int
    path: str | None


@dataclass(frozen=True)
class Stage:
    """A span of a type's life with one fixed attribute shape: one schema variation."""

    name: str
    schema: Obj
    starts_at: int
    step: DriftStep | None


def drifting_type_count(type_count: int, ratio: float) -> int:
    """round(K * ratio), raised so each drift kind occurs once when it can, never above K."""
    if ratio <= 0:
        return 0
    return min(type_count, max(round(type_count * ratio), len(DRIFT_KINDS)))


def plan_drift(
    catalog: tuple[EventTypeSpec, ...], ratio: float, total_lines: int, rng: random.Random
) -> dict[str, DriftStep]:
    """One drift step for each of the drifting types, keyed by event type."""
    chosen = rng.sample(catalog, drifting_type_count(len(catalog), ratio))
    steps: dict[str, DriftStep] = {}
    for index, spec in enumerate(chosen):
        kind = ASSIGNMENT_ORDER[index % len(ASSIGNMENT_ORDER)]
        at_ordinal = int(total_lines * DRIFT_FRACTIONS[index % len(DRIFT_FRACTIONS)])
        steps[spec.name] = DriftStep(spec.name, kind, at_ordinal, _changed_path(spec, kind, rng))
    return steps


def _changed_path(spec: EventTypeSpec, kind: DriftKind, rng: random.Random) -> str | None:
    if kind == "new_attribute_top":
        return rng.choice(_absent(spec.base, NEW_TOP_ATTRIBUTES))
    if kind == "new_attribute_nested":
        return rng.choice(_absent(spec.base, NEW_NESTED_ATTRIBUTES))
    if kind == "numeric_widening":
        return spec.metric_path
    if kind == "incompatible_type":
        return INCOMPATIBLE_PATH
    return None


def _absent(schema: Obj, candidates: tuple[tuple[str, Node], ...]) -> list[str]:
    names = []
    for path, _ in candidates:
        try:
            field_at(schema, path)
        except KeyError:
            names.append(path)
    return names


def stages(spec: EventTypeSpec, step: DriftStep | None) -> tuple[Stage, ...]:
    """The type's stages in order; a `new_event_type` type has one stage starting mid-run."""
    if step is None:
        return (Stage("base", spec.base, 0, None),)
    if step.path is None:  # new_event_type: the type starts late, its shape does not change
        return (Stage("base", spec.base, step.at_ordinal, step),)
    changed = with_field(spec.base, step.path, _changed_node(spec.base, step.kind, step.path))
    return (Stage("base", spec.base, 0, None), Stage(step.kind, changed, step.at_ordinal, step))


def _changed_node(schema: Obj, kind: DriftKind, path: str) -> Node:
    if kind == "new_attribute_top":
        return dict(NEW_TOP_ATTRIBUTES)[path]
    if kind == "new_attribute_nested":
        return dict(NEW_NESTED_ATTRIBUTES)[path]
    before = field_at(schema, path)
    if not (isinstance(before, Scalar) and isinstance(before.spec, IntRange)):
        raise ValueError(f"{kind} needs an integer field, `{path}` is {before}")
    if kind == "numeric_widening":
        return Scalar(FloatRange(before.spec.low, before.spec.high))
    return Scalar(Labelled("L", before.spec.low, before.spec.high))
