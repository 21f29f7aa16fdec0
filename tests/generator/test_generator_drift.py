"""Every valid event has exactly the structure of the variation the manifest assigns it."""

from __future__ import annotations

import re
from collections import defaultdict

from landing_oracle import path_kinds

from streamops.pipeline.generator.drift_plan import DRIFT_FRACTIONS, DRIFT_KINDS


def value_at(event, path):
    for part in path.split("."):
        if not isinstance(event, dict) or part not in event:
            return None
        event = event[part]
    return event


def by_type(generated):
    grouped = defaultdict(list)
    for line, event in generated.events():
        grouped[event["event_type"]].append((line, event))
    return grouped


def variation_at(entry, ordinal):
    current = None
    for variation in entry["variations"]:
        if variation["first_event_ordinal"] <= ordinal:
            current = variation
    return current


def test_every_drift_kind_happened_in_the_run(generated):
    drift = generated.manifest["drift"]
    assert set(drift) == set(DRIFT_KINDS)
    assert all(len(types) == 2 for types in drift.values())  # 25 types * 0.4 = 10, two per kind


def test_structure_matches_the_manifest_variation_of_each_event(generated):
    manifest = generated.manifest
    counts = defaultdict(int)
    firsts = {}
    for line, event in generated.events():
        entry = manifest["event_types"][event["event_type"]]
        variation = variation_at(entry, line.ordinal)
        assert variation is not None, (event["event_type"], line.ordinal)
        assert path_kinds(event) == variation["paths"], (event["event_type"], line.ordinal)
        key = (event["event_type"], variation["stage"])
        counts[key] += 1
        firsts.setdefault(key, line.ordinal)
        firsts.setdefault(event["event_type"], line.file)
    for name, entry in manifest["event_types"].items():
        assert entry["first_file"] == firsts[name]
        assert sum(v["events"] for v in entry["variations"]) == entry["events"]
        for variation in entry["variations"]:
            assert counts[(name, variation["stage"])] == variation["events"]
            assert firsts[(name, variation["stage"])] == variation["first_event_ordinal"]
        assert len(entry["variations"]) == 1 + sum(k != "new_event_type" for k in entry["drift"])


def test_drift_lands_at_planned_points_and_is_visible_immediately(generated):
    points = {int(6_000 * fraction) for fraction in DRIFT_FRACTIONS}
    for entry in generated.manifest["event_types"].values():
        for variation in entry["variations"]:
            change = variation["change"]
            if change is None:
                assert variation["stage"] == "base" and variation["first_event_ordinal"] < 6_000 * 0.25
                continue
            assert change["at_ordinal"] in points
            assert change["at_ordinal"] <= variation["first_event_ordinal"] <= change["at_ordinal"] + 20


def test_new_event_types_emit_nothing_before_their_start(generated):
    grouped = by_type(generated)
    for name in generated.manifest["drift"]["new_event_type"]:
        (variation,) = generated.manifest["event_types"][name]["variations"]
        start = variation["change"]["at_ordinal"]
        assert start > 0
        assert min(line.ordinal for line, _ in grouped[name]) >= start


def test_new_attributes_are_absent_before_and_present_after(generated):
    grouped = by_type(generated)
    for kind in ("new_attribute_top", "new_attribute_nested"):
        for name in generated.manifest["drift"][kind]:
            change = generated.manifest["event_types"][name]["variations"][1]["change"]
            assert (kind == "new_attribute_top") == ("." not in change["path"])
            for line, event in grouped[name]:
                present = value_at(event, change["path"]) is not None
                assert present == (line.ordinal >= change["at_ordinal"])


def test_widened_fields_are_integers_then_floats(generated):
    grouped = by_type(generated)
    for name in generated.manifest["drift"]["numeric_widening"]:
        change = generated.manifest["event_types"][name]["variations"][1]["change"]
        kinds = {
            (line.ordinal >= change["at_ordinal"], type(value_at(event, change["path"])))
            for line, event in grouped[name]
        }
        assert kinds == {(False, int), (True, float)}


def test_incompatible_rows_count_the_string_values(generated):
    grouped = by_type(generated)
    total = 0
    for name in generated.manifest["drift"]["incompatible_type"]:
        entry = generated.manifest["event_types"][name]
        change = entry["variations"][1]["change"]
        strings = 0
        for line, event in grouped[name]:
            value = value_at(event, change["path"])
            if line.ordinal >= change["at_ordinal"]:
                assert isinstance(value, str) and re.fullmatch(r"L\d+", value)
                strings += 1
            else:
                assert isinstance(value, int) and not isinstance(value, bool)
        assert strings == entry["incompatible_rows"] > 0
        total += strings
    assert generated.manifest["incompatible_rows_total"] == total
    undrifted = set(generated.manifest["event_types"]) - set(generated.manifest["drift"]["incompatible_type"])
    assert all(generated.manifest["event_types"][name]["incompatible_rows"] == 0 for name in undrifted)


def test_structure_is_fixed_per_type_and_stage_even_for_arrays(generated):
    shapes = defaultdict(set)
    for line, event in generated.events():
        stage = variation_at(generated.manifest["event_types"][event["event_type"]], line.ordinal)["stage"]
        shapes[(event["event_type"], stage)].add(tuple(path_kinds(event)))
        for value in event.values():
            if isinstance(value, list):
                assert value, "empty arrays would hide the element kind"
    assert all(len(variants) == 1 for variants in shapes.values())
