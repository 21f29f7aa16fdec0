"""Event types, their base shapes, and the compiled builders that draw them."""

from __future__ import annotations

import random

import orjson
from landing_oracle import path_kinds

from streamops.core.lake_layout import is_valid_event_type
from streamops.pipeline.generator.attribute_schema import (
    Choice,
    Flag,
    FloatRange,
    Ident,
    IntRange,
    Labelled,
    ListOf,
    Scalar,
    field_at,
    obj,
    paths,
    with_field,
)
from streamops.pipeline.generator.drift_plan import ASSIGNMENT_ORDER, drifting_type_count, plan_drift
from streamops.pipeline.generator.event_catalog import (
    INCOMPATIBLE_PATH,
    MAX_EVENT_TYPES,
    build_catalog,
    event_type_names,
)
from streamops.pipeline.generator.value_builder import compile_builder


def test_a_thousand_distinct_safe_realistic_names():
    names = event_type_names(1_000)
    assert MAX_EVENT_TYPES >= 1_000
    assert len(set(names)) == 1_000 and all(is_valid_event_type(name) for name in names)
    assert names[:4] == ("session_start", "session_end", "match_start", "match_end")
    assert event_type_names(300) == names[:300]


def test_every_type_can_widen_and_break_a_numeric_field():
    for spec in build_catalog(200, seed=4):
        assert isinstance(field_at(spec.base, spec.metric_path).spec, IntRange)
        assert isinstance(field_at(spec.base, INCOMPATIBLE_PATH).spec, IntRange)


def test_compiled_builder_draws_exactly_the_described_shape():
    schema = obj(
        name=Scalar(Ident("p%", 1_000)),
        level=Scalar(IntRange(1, 3)),
        score=Scalar(FloatRange(0, 2)),
        label=Scalar(Labelled("L", 1, 5)),
        ok=Scalar(Flag(0.5)),
        nested=obj(kind=Scalar(Choice(("a", "b")))),
        tags=ListOf(Scalar(Choice(("x", "y"))), 1, 4),
        items=ListOf(obj(sku=Scalar(Ident("s", 10)), qty=Scalar(IntRange(1, 2))), 1, 3),
    )
    build = compile_builder(schema, random.Random(1), ("event_type",))
    expected = sorted(["event_type:string", *paths(schema)])
    for _ in range(300):
        event = build("t")
        assert list(event)[:2] == ["event_type", "name"] and event["event_type"] == "t"
        assert path_kinds(orjson.loads(orjson.dumps(event))) == expected
        assert event["name"].startswith("p%") and len(event["name"]) == 5
        assert event["label"][0] == "L" and 1 <= int(event["label"][1:]) < 5
        assert b'"score":' in orjson.dumps(event) and isinstance(event["score"], float)


def test_with_field_adds_and_replaces_without_touching_the_original():
    base = obj(player=obj(level=Scalar(IntRange(1, 9))))
    changed = with_field(
        with_field(base, "player.guild", Scalar(Ident("g", 9))), "player.level", Scalar(FloatRange(1, 9))
    )
    assert paths(base) == ["player.level:integer", "player:object"]
    assert paths(changed) == ["player.guild:string", "player.level:float", "player:object"]


def test_drift_count_and_assignment():
    assert drifting_type_count(300, 0.1) == 30
    assert drifting_type_count(300, 0.0) == 0
    assert drifting_type_count(20, 0.01) == 5
    assert drifting_type_count(3, 0.5) == 3
    catalog = build_catalog(3, seed=1)
    steps = plan_drift(catalog, 1.0, 1_000, random.Random(0))
    assert sorted(step.kind for step in steps.values()) == sorted(ASSIGNMENT_ORDER[:3])
