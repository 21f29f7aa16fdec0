"""Bronze + management + silver on real Spark and Delta, checked against the generator's manifest."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable
from small_landing import event, silver_count, write_events
from waiting import wait_until

from streamops.cli import main
from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import CONNECTORS, EmbeddedDelta, connector_for
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.lake_summary import summarize_lake
from streamops.pipeline.pipeline_events import Unmonitored
from streamops.pipeline.records.column_names import NESTED_SEPARATOR
from streamops.pipeline.registry.schema_compat import field_type
from streamops.pipeline.registry.schema_registry import SchemaRegistry
from streamops.pipeline.registry.silver_schemas import silver_schemas
from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
from streamops.pipeline.silver.silver_stream import SilverSettings

STAGE_TO_CHANGE_KIND = {
    "base": "new_event_type",
    "new_attribute_top": "added_fields",
    "new_attribute_nested": "added_fields",
    "numeric_widening": "widened",
    "incompatible_type": "incompatible",
}


def table_rows(path: Path) -> list[dict]:
    return read_delta(str(path)).to_pylist()


def supervisor(spark, lake: LakeLayout, landing: Path, connector=None, **silver) -> Supervisor:
    settings = PipelineSettings(
        lake=lake,
        input=LandingInput(landing, max_files_per_trigger=3),
        trigger_seconds=1.0,
        silver=SilverSettings(max_files_per_trigger=2, **silver),
    )
    return Supervisor(spark, settings, connector or EmbeddedDelta(), Unmonitored(), log=lambda line: None)


@pytest.fixture(scope="module", params=CONNECTORS)
def drained(spark, tmp_path_factory, request):
    """A drifting run generated once, drained through bronze and silver with --until-idle, on
    each Delta connector in turn."""
    root = tmp_path_factory.mktemp(f"drained_{request.param}")
    manifest = generate(
        GeneratorSettings(
            out=root / "landing", events=2000, event_types=12, drift=0.5, bad=0.01, seed=3, events_per_file=250
        )
    )
    lake = LakeLayout.at(root / "lake")
    connector = connector_for(request.param, spark)
    report = supervisor(spark, lake, root / "landing", connector, types_per_group=4).run_until_idle()
    return lake, manifest, report


def test_lake_holds_exactly_what_the_manifest_says(drained):
    lake, manifest, report = drained
    assert report.failures == {}
    summary = summarize_lake(lake)
    assert summary.bronze_rows == manifest["events_total"]
    assert summary.silver_rows == {t: v["events"] for t, v in manifest["event_types"].items()}
    quarantine = dict(manifest["expected_quarantine"])
    assert summary.quarantine_by_reason == {k: v for k, v in quarantine.items() if v}
    assert summary.bronze_rows + sum(manifest["expected_quarantine"].values()) == manifest["lines_total"]


def test_no_event_is_written_twice(drained):
    lake, manifest, _ = drained
    for event_type in manifest["event_types"]:
        ids = [r["event_id"] for r in table_rows(lake.silver(event_type))]
        assert len(ids) == len(set(ids)), event_type


def test_registry_has_one_row_per_variation_with_the_drift_kind(drained):
    lake, manifest, _ = drained
    registry = table_rows(lake.schema_registry)
    for event_type, expected in manifest["event_types"].items():
        rows = sorted((r for r in registry if r["event_type"] == event_type), key=lambda r: r["seen_order"])
        assert [sorted(r["variation_paths"]) for r in rows] == [v["paths"] for v in expected["variations"]]
        assert [r["change_kind"] for r in rows] == [
            STAGE_TO_CHANGE_KIND.get(v["stage"], "new_event_type") for v in expected["variations"]
        ]


def column_name(path: str) -> str:
    return path.replace(".", NESTED_SEPARATOR)


def new_leaf_columns(previous: list[str], current: list[str]) -> set[str]:
    """Columns a variation adds: its new non-object, non-array-element paths, flattened."""
    leaves = {p.rsplit(":", 1)[0] for p in set(current) - set(previous) if not p.endswith(":object")}
    return {column_name(p) for p in leaves if "[]" not in p}


def test_every_drift_kind_ends_in_the_right_silver_schema(drained):
    lake, manifest, _ = drained
    for event_type, expected in manifest["event_types"].items():
        schema = {f.name: f.type for f in DeltaTable(str(lake.silver(event_type))).schema().fields}
        previous: list[str] = []
        for variation in expected["variations"]:
            change = variation["change"]
            if variation["stage"] in ("new_attribute_top", "new_attribute_nested"):
                added = new_leaf_columns(previous, variation["paths"])
                assert added and added <= set(schema), (event_type, change, added)
            elif variation["stage"] in ("numeric_widening", "incompatible_type"):
                assert str(schema[column_name(change["path"])]) == 'PrimitiveType("long")', "keeps its type"
            previous = variation["paths"]
        assert not any(str(t).startswith("Struct") for t in schema.values()), "nested attributes are flat columns"


def test_values_a_column_cannot_hold_are_rescued_and_alerted(drained):
    lake, manifest, _ = drained
    per_type = Counter()
    for alert in table_rows(lake.schema_alerts):
        per_type[alert["event_type"]] += alert["rows_affected"]
        assert alert["action"] == "rescued"
        assert (alert["old_type"], alert["new_type"]) in (("long", "string"), ("long", "double"))
    expected = {t: v["rescued_rows"] for t, v in manifest["event_types"].items() if v["rescued_rows"]}
    assert dict(per_type) == expected
    for event_type, info in manifest["event_types"].items():
        stages = {v["stage"]: v["change"] for v in info["variations"]}
        rows = table_rows(lake.silver(event_type))
        rescued = [r for r in rows if r["_rescued_data"] is not None]
        assert len(rescued) == info["rescued_rows"], event_type
        if "incompatible_type" in stages:
            for row in rescued:
                data = json.loads(row["_rescued_data"])
                assert data["player"]["level"].startswith("L") and data["_file_path"] == row["_source_file"]
                assert row["player__level"] is None, "a value is in its column or rescued, never both"
        if "numeric_widening" in stages:
            metric = stages["numeric_widening"]["path"]
            assert all(isinstance(json.loads(r["_rescued_data"])[metric], float) for r in rescued)
    history = [h.get("operation") for t in manifest["event_types"] for h in DeltaTable(str(lake.silver(t))).history()]
    assert set(history) <= {"WRITE", "STREAMING UPDATE", "CREATE TABLE"}, (
        "appends and schema changes only, never a rewrite"
    )


def test_every_silver_row_traces_back_to_bronze(drained):
    lake, manifest, _ = drained
    bronze = {r["event_id"]: r for r in table_rows(lake.bronze_events)}
    event_type = next(iter(manifest["event_types"]))
    for row in table_rows(lake.silver(event_type)):
        origin = bronze[row["event_id"]]
        assert (row["_bronze_batch_id"], row["_source_file"]) == (origin["batch_id"], origin["source_file"])
    history = DeltaTable(str(lake.silver(event_type))).history()
    batches = [info for info in map(BatchCommitInfo.from_commit_info, history) if info is not None]
    assert batches and all(json.loads(info.source_end)["reservoirVersion"] >= 0 for info in batches)


def test_new_event_types_get_their_tables_while_the_pipeline_runs(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "1.ndjson", [event("a", i, n=i) for i in range(5)] + [event("b", i, s="x") for i in range(3)])
    running = supervisor(spark, lake, landing, types_per_group=2)
    runner = threading.Thread(target=running.run_for, args=(75,), daemon=True)
    runner.start()
    try:
        wait_until(lambda: silver_count(lake, "a") == 5 and silver_count(lake, "b") == 3, 90, "silver a and b", 0.5)
        bronze_query = running.supervised["bronze"].query
        write_events(
            landing, "2.ndjson", [event("c", i, flag=True) for i in range(4)] + [event("a", 9, n=9, extra="e")]
        )
        wait_until(lambda: silver_count(lake, "c") == 4 and silver_count(lake, "a") == 6, 90, "the new type c", 0.5)
        assert running.supervised["bronze"].query is bronze_query, "bronze was not restarted"
        assert "silver_g0002" in running.supervised, "c went to a new group, served by a new query"
        assert "extra" in {f.name for f in DeltaTable(str(lake.silver("a"))).schema().fields}
    finally:
        running.request_stop()
        runner.join(timeout=120)
    assert running.report.failures == {}


def test_fail_group_stops_only_the_group_with_the_incompatible_change(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "1.ndjson", [event("a", 0, level=1), event("b", 0, level=1)])
    report = supervisor(spark, lake, landing, types_per_group=1, on_incompatible="fail_group").run_until_idle()
    assert report.failures == {}
    write_events(landing, "2.ndjson", [event("a", 1, level="L1"), event("b", 1, level=2)])
    report = supervisor(spark, lake, landing, types_per_group=1, on_incompatible="fail_group").run_until_idle()
    assert list(report.failures) == ["silver_a"]
    assert "incompatible schema change" in report.failures["silver_a"][0]
    assert silver_count(lake, "a") == 1 and silver_count(lake, "b") == 2
    alert = table_rows(lake.schema_alerts)
    assert [(a["event_type"], a["field"], a["action"]) for a in alert] == [("a", "level", "group_failed")]


def test_quarantine_policy_quarantines_the_rows_a_table_cannot_hold(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "1.ndjson", [event("a", 0, level=1, score=2)])
    write_events(landing, "2.ndjson", [event("a", 1, level="L1", score=2), event("a", 2, level=3, score=2.5)])
    report = supervisor(spark, lake, landing, types_per_group=1, on_incompatible="quarantine").run_until_idle()
    assert report.failures == {}
    assert sorted(r["event_id"] for r in table_rows(lake.silver("a"))) == ["a-0"]
    quarantine = table_rows(lake.bronze_quarantine)
    quarantined = sorted((r["reason"], r["detail"]) for r in quarantine)
    assert quarantined == [
        ("incompatible_type", "level: long -> string"),
        ("incompatible_type", "score: long -> double"),
    ]
    assert {(r["stream"], r["batch_id"]) for r in quarantine} == {("silver_a", 0)}
    assert all(r["raw_bytes"] == r["raw_text"].encode() for r in quarantine), "the payload's bytes, as read"
    assert {a["action"] for a in table_rows(lake.schema_alerts)} == {"quarantined"}


def test_promoting_a_column_moves_its_rescued_values_back_and_keeps_the_wider_type(drained, tmp_path, capsys):
    lake, manifest, _ = drained
    event_type, metric = next(
        (t, v["change"]["path"])
        for t, info in sorted(manifest["event_types"].items())
        for v in info["variations"]
        if v["stage"] == "numeric_widening"
    )
    copy = LakeLayout.at(tmp_path / "lake")
    shutil.copytree(lake.root, copy.root)
    before = {r["event_id"]: r for r in table_rows(copy.silver(event_type))}
    command = [
        "lake",
        "promote",
        "--lake",
        str(copy.root),
        "--event-type",
        event_type,
        "--field",
        metric,
        "--to",
        "double",
        "--json",
    ]

    assert main(command) == 0
    assert json.loads(capsys.readouterr().out)["applied"] is False
    assert {r["event_id"]: r for r in table_rows(copy.silver(event_type))} == before, "without --yes nothing changes"

    assert main([*command, "--yes"]) == 0
    done = json.loads(capsys.readouterr().out)
    after = {r["event_id"]: r for r in table_rows(copy.silver(event_type))}
    assert set(after) == set(before)
    rescued = {i for i, r in before.items() if r["_rescued_data"] and metric in json.loads(r["_rescued_data"])}
    assert rescued and done["rescued_moved"] == len(rescued) and done["rows"] == len(before)
    for event_id, row in after.items():
        old = before[event_id]
        expected = json.loads(old["_rescued_data"])[metric] if event_id in rescued else old[metric]
        assert row[metric] == (None if expected is None else float(expected)) and isinstance(
            row[metric], (float, type(None))
        )
        assert row["_rescued_data"] is None or metric not in json.loads(row["_rescued_data"])

    registry = SchemaRegistry.load(copy.schema_registry)
    assert field_type(registry.applied_schema(event_type), metric) == "double"
    assert not any(
        c.path == metric for cs in silver_schemas(registry, [event_type])[event_type].unfit.values() for c in cs
    )

    assert main([*command, "--yes"]) == 0, "a second run finds the work done"
    again = json.loads(capsys.readouterr().out)
    assert (again["rows"], again["recorded"]) == (0, False)
    assert [r["change_kind"] for r in table_rows(copy.schema_registry)].count("promoted") == 1
