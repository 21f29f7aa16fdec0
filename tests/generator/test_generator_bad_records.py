"""Every bad line is the kind the manifest counts it as, and nothing else is bad."""

from __future__ import annotations

import json
from collections import Counter

import orjson
import pytest
from landing_oracle import classify, depth

from streamops.core.lake_layout import is_valid_event_type
from streamops.pipeline.generator.bad_records import BAD_KINDS, QUARANTINE_REASON_OF, bad_record_count
from streamops.pipeline.records.record_rules import MAX_DEPTH, MAX_RECORD_BYTES, QUARANTINE_REASONS


def lines_of(generated, kind):
    return [line.raw for line in generated.lines if classify(line.raw) == kind]


def test_each_bad_kind_appears_with_its_manifest_count(generated):
    counted = Counter(classify(line.raw) for line in generated.lines)
    manifest = generated.manifest
    assert {kind: counted.get(kind, 0) for kind in BAD_KINDS} == manifest["bad"]
    assert counted[None] == manifest["events_total"]
    assert all(count > 0 for count in manifest["bad"].values())
    assert manifest["bad"]["too_large"] == 1
    assert sum(manifest["bad"].values()) == round(6_000 * 0.02)


def test_expected_quarantine_is_keyed_by_bronze_reasons(generated):
    bad, expected = generated.manifest["bad"], generated.manifest["expected_quarantine"]
    assert set(expected) <= set(QUARANTINE_REASONS)
    assert expected["not_an_object"] == bad["json_array"] + bad["json_scalar"]
    assert sum(expected.values()) == sum(bad.values())
    for kind, count in bad.items():
        if kind not in ("json_array", "json_scalar"):
            assert expected[QUARANTINE_REASON_OF[kind]] == count


def test_malformed_lines_fail_both_parsers_but_are_text(generated):
    for raw in lines_of(generated, "malformed_json"):
        raw.decode("utf-8")
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(raw)


def test_arrays_and_scalars_parse_as_non_objects(generated):
    arrays = [orjson.loads(raw) for raw in lines_of(generated, "json_array")]
    scalars = [orjson.loads(raw) for raw in lines_of(generated, "json_scalar")]
    assert arrays and all(isinstance(value, list) for value in arrays)
    assert scalars and all(not isinstance(value, (dict, list)) for value in scalars)


def test_invalid_utf8_lines_are_exactly_those_failing_strict_decoding(generated):
    failing = []
    for line in generated.lines:
        try:
            line.raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            failing.append(line.raw)
    assert len(failing) == generated.manifest["bad"]["invalid_utf8"]
    for raw in failing:
        text = raw.decode("utf-8", errors="replace")
        assert text.startswith("{") and text.endswith("}") and "\ufffd" in text


def test_missing_and_invalid_event_types(generated):
    for raw in lines_of(generated, "missing_event_type"):
        event = json.loads(raw)
        assert event.get("event_type") is None and "event_id" in event
    invalid = [json.loads(raw)["event_type"] for raw in lines_of(generated, "invalid_event_type")]
    assert invalid and not any(is_valid_event_type(name) for name in invalid)


def test_the_one_too_large_line_is_otherwise_a_valid_event(generated):
    (raw,) = lines_of(generated, "too_large")
    assert len(raw) > MAX_RECORD_BYTES
    event = json.loads(raw)
    assert is_valid_event_type(event["event_type"]) and event["event_type"] in generated.manifest["event_types"]


def test_too_deep_lines_are_valid_events_nested_past_the_limit(generated):
    deep = lines_of(generated, "too_deep")
    assert len(deep) == generated.manifest["bad"]["too_deep"]
    for raw in deep:
        event = json.loads(raw)
        assert is_valid_event_type(event["event_type"])
        assert depth(event) >= MAX_DEPTH + 10
        assert len(raw) < MAX_RECORD_BYTES


def test_empty_lines_are_blank(generated):
    blanks = lines_of(generated, "empty_line")
    assert blanks and all(raw.strip(b" \t") == b"" for raw in blanks)


def test_every_kind_appears_once_even_at_tiny_ratios_and_never_more_lines_than_asked():
    assert bad_record_count(1_000, 0.0) == 0
    assert bad_record_count(1_000, 0.0001) == len(BAD_KINDS)
    assert bad_record_count(1_000, 0.05) == 50
    assert bad_record_count(4, 0.5) == 4


def test_bad_kinds_map_onto_record_rules_reasons():
    assert set(QUARANTINE_REASON_OF) == set(BAD_KINDS)
    # a tombstone is a Kafka record without a value: no line of a file is one (tests/test_kafka_*.py)
    assert set(QUARANTINE_REASON_OF.values()) == set(QUARANTINE_REASONS) - {
        "incompatible_type",
        "unprocessable",
        "tombstone",
    }
