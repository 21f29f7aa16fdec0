"""With `--violations`, the rows breaking each rule are exactly the manifest's counts: judged by
rules written here from the lines on disk, not by the generator's own bookkeeping."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from datetime import datetime, timezone

import pytest
from landing_oracle import GeneratedRun, read_lines

from streamops.cli import main
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.expectations.rules import ExpectationSet
from streamops.pipeline.expectations.rules_file import load_expectations
from streamops.pipeline.generator.landing_writer import MANIFEST_NAME
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.generator.violations import (
    RULES_FILE_NAME,
    VIOLATION_KINDS,
    VIOLATION_RULES,
    violation_count,
)
from streamops.pipeline.registry.schema_variation import variation_hash, variation_paths

YEAR_2090 = datetime(2090, 1, 1, tzinfo=timezone.utc)
ROW_RULES = {
    "player_id_present": lambda event: event["player"]["id"] is not None,
    "session_seq_not_negative": lambda event: event["context"]["session"]["seq"] >= 0,
    "event_time_before_2090": lambda event: datetime.fromisoformat(event["event_time"]) < YEAR_2090,
}
"""The oracle's reading of the `expect` rules (the unique rule is counted per file below)."""
DROP_RULES = {"player_id_present", "event_time_before_2090"}


@pytest.fixture(scope="module")
def violated(tmp_path_factory) -> GeneratedRun:
    out = tmp_path_factory.mktemp("violated")
    manifest = generate(
        GeneratorSettings(
            out=out,
            events=6_000,
            event_types=12,
            titles=40,
            drift=0.5,
            bad=0.01,
            violations=0.04,
            seed=17,
            events_per_file=1_000,
        )
    )
    return GeneratedRun(out, manifest, read_lines(out, manifest))


def failures(run: GeneratedRun) -> tuple[dict[str, Counter], Counter]:
    """Per table, the rows failing each rule; per table, the rows failing a drop rule."""
    failed: dict[str, Counter] = defaultdict(Counter)
    dropped: Counter = Counter()
    ids_per_file: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for line, event in run.events():
        table = event["event_type"]
        broken = {name for name, holds in ROW_RULES.items() if not holds(event)}
        failed[table].update(broken)
        dropped[table] += bool(broken & DROP_RULES)
        ids_per_file[(line.file, table)][event["event_id"]] += 1
    for (_, table), ids in ids_per_file.items():
        failed[table]["one_row_per_event_id"] += sum(count - 1 for count in ids.values())
    return failed, dropped


def test_rows_failing_each_rule_are_the_manifest_counts(violated):
    manifest = violated.manifest
    failed, dropped = failures(violated)
    expected = manifest["violations"]
    assert set(expected) == set(manifest["event_types"])
    for table, rules in expected.items():
        assert set(rules) == {rule.name for rule in VIOLATION_RULES}
        assert rules == {name: failed[table][name] for name in rules}, table
    assert manifest["violations_dropped"] == {table: dropped[table] for table in expected}
    totals = Counter()
    for rules in expected.values():
        totals.update(rules)
    assert all(totals[rule.name] > 0 for rule in VIOLATION_RULES)
    assert (
        totals["player_id_present"]
        == manifest["violation_kinds"]["null_player_id"]
        + (manifest["violation_kinds"]["null_player_id_and_future_event_time"])
    )


def test_violations_are_valid_events_planned_in_their_share(violated):
    manifest = violated.manifest
    kinds = manifest["violation_kinds"]
    assert set(kinds) == set(VIOLATION_KINDS) and all(count > 0 for count in kinds.values())
    planned = violation_count(6_000 - manifest["bad_total"], 0.04)
    assert planned - 20 <= sum(kinds.values()) <= planned  # a repeated id needs an earlier event in its file
    assert manifest["events_total"] == sum(1 for _ in violated.events())
    assert manifest["parameters"]["violations"] == 0.04


def test_a_repeated_id_repeats_a_clean_event_of_its_file_and_type(violated):
    first_seen: dict[str, tuple[str, str, dict]] = {}
    repeats = 0
    for line, event in violated.events():
        key = event["event_id"]
        if key in first_seen:
            file, table, original = first_seen[key]
            assert (file, table) == (line.file, event["event_type"])
            assert all(holds(original) for holds in ROW_RULES.values())
            repeats += 1
        else:
            first_seen[key] = (line.file, event["event_type"], event)
    assert repeats == sum(rules["one_row_per_event_id"] for rules in violated.manifest["violations"].values())


def test_bronze_sees_the_null_player_id_variations_the_manifest_lists(violated):
    seen: dict[str, Counter] = defaultdict(Counter)
    for _, event in violated.events():
        seen[event["event_type"]][variation_hash(variation_paths(event))] += 1
    nulled = 0
    for table, entry in violated.manifest["event_types"].items():
        variations = entry["variations"]
        assert dict(seen[table]) == {variation_hash(v["paths"]): v["events"] for v in variations}, table
        assert [v["first_event_ordinal"] for v in variations] == sorted(v["first_event_ordinal"] for v in variations)
        nulled += sum(v["events"] for v in variations if v["nulled"] == "player.id")
    assert nulled == sum(rules["player_id_present"] for rules in violated.manifest["violations"].values())


def test_the_rules_file_holds_the_rules_the_manifest_counts(violated):
    assert violated.manifest["expectations_file"] == RULES_FILE_NAME
    assert load_expectations(violated.out / RULES_FILE_NAME) == ExpectationSet(default=VIOLATION_RULES)
    assert {rule.action for rule in VIOLATION_RULES} == {"warn", "drop"}


def test_a_clean_load_breaks_no_rule_and_writes_no_rules_file(generated):
    failed, dropped = failures(generated)
    assert sum(sum(rules.values()) for rules in failed.values()) == 0 and sum(dropped.values()) == 0
    manifest = generated.manifest
    assert manifest["violations"] == {} and manifest["violations_dropped"] == {}
    assert set(manifest["violation_kinds"].values()) == {0}
    assert manifest["expectations_file"] is None and not (generated.out / RULES_FILE_NAME).exists()
    assert all(v["nulled"] is None for entry in manifest["event_types"].values() for v in entry["variations"])


def test_same_seed_gives_the_same_violations(tmp_path):
    settings = dict(events=1_500, event_types=5, violations=0.05, seed=4, events_per_file=500)
    first = generate(GeneratorSettings(out=tmp_path / "a", **settings))
    second = generate(GeneratorSettings(out=tmp_path / "b", **settings))
    assert first == second
    for name in (MANIFEST_NAME, RULES_FILE_NAME, *(f["name"] for f in first["files"])):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize("ratio", [-0.1, 1.5])
def test_violations_outside_zero_to_one_are_refused(tmp_path, ratio):
    with pytest.raises(PipelineConfigError, match="--violations is a fraction"):
        GeneratorSettings(out=tmp_path, events=10, violations=ratio)


def test_the_command_writes_the_rules_and_summarises_them(tmp_path, capsys):
    args = ["generate", "--out", str(tmp_path), "--events", "600", "--event-types", "4", "--violations", "0.05"]
    assert main(args) == 0
    out = capsys.readouterr().out
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    for rule in VIOLATION_RULES:
        failing = sum(rules[rule.name] for rules in manifest["violations"].values())
        assert re.search(rf"^{rule.name} +{rule.action} +{failing}$", out, re.MULTILINE), rule.name
    assert f"rules: {tmp_path / RULES_FILE_NAME}" in out
