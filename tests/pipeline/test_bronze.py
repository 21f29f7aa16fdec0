"""The bronze stream on real Spark, real files and real Delta tables."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.errors import StreamingQueryException

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.bronze_stream import QUARANTINE_ROUTE, BronzeBatchWriter, BronzeSettings, start_bronze
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.delta_connector.write_plan import WritePlan
from streamops.pipeline.pipeline_events import Unmonitored
from streamops.pipeline.records.record_rules import MAX_DEPTH, MAX_RECORD_BYTES
from streamops.pipeline.registry.schema_registry import REGISTRY_STAGE, Registration, SchemaRegistry


def event(event_type: str, i: int, **attributes) -> bytes:
    body = {"event_type": event_type, "event_id": f"{event_type}-{i}", "event_time": "2026-11-22T10:00:00.500Z"}
    body.update(attributes)
    return json.dumps(body).encode()


def write_file(landing: Path, name: str, lines: list[bytes]) -> None:
    """Files get increasing modification times: the file source takes the oldest first."""
    landing.mkdir(parents=True, exist_ok=True)
    path = landing / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    stamp = 1_700_000_000 + len(list(landing.iterdir()))
    os.utime(path, (stamp, stamp))


def run_bronze(spark, lake: LakeLayout, landing: Path, connector=None) -> None:
    settings = BronzeSettings(LandingInput(landing, max_files_per_trigger=1), available_now=True)
    writer = BronzeBatchWriter(
        lake, connector or EmbeddedDelta(), SchemaRegistry.load(lake.schema_registry), Unmonitored(), settings
    )
    query = start_bronze(spark, lake, writer)
    try:
        query.awaitTermination(180)
    finally:
        query.stop()


def rows(table: Path) -> list[dict]:
    return read_delta(str(table)).to_pylist()


BAD_LINES = {
    "empty_line": b"   ",
    "malformed_json": b'{"event_type": "a", "x": ',
    "not_an_object": b"[1, 2, 3]",
    "missing_event_type": b'{"event_id": "x", "player": {"id": 1}}',
    "invalid_event_type": b'{"event_type": "../../etc/passwd"}',
    "invalid_utf8": b'{"event_type": "a", "name": "\xff\xfe"}',
    "too_large": b'{"event_type": "a", "blob": "' + b"x" * MAX_RECORD_BYTES + b'"}',
    "too_deep": b'{"event_type": "a", "d": ' + b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5) + b"}",
    "number_out_of_range": b'{"event_type": "a", "n": 18446744073709551616}',
    "duplicate_key": b'{"event_type": "a", "n": 1, "n": 2}',
    "unusable_key": b'{"event_type": "a", "Name": 1, "name": 2}',
}


def test_every_line_lands_in_bronze_or_quarantine_with_its_reason(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    good = [event("match_start", i, player={"id": i}) for i in range(5)]
    write_file(landing, "a.ndjson", good[:3] + list(BAD_LINES.values()) + good[3:])
    write_file(landing, "b.ndjson", [b'"just a string"', b"", event("item_buy", 0, price=3)])
    run_bronze(spark, lake, landing)

    bronze = rows(lake.bronze_events)
    quarantine = rows(lake.bronze_quarantine)
    assert len(bronze) + len(quarantine) == len(good) + len(BAD_LINES) + 3
    assert sorted(r["event_id"] for r in bronze) == sorted([f"match_start-{i}" for i in range(5)] + ["item_buy-0"])
    reasons = sorted(r["reason"] for r in quarantine)
    assert reasons == sorted(list(BAD_LINES) + ["not_an_object", "empty_line"])
    invalid = next(r for r in quarantine if r["reason"] == "invalid_utf8")
    assert invalid["raw_bytes"] == BAD_LINES["invalid_utf8"], "raw bytes are kept exactly"
    deep = next(r for r in quarantine if r["reason"] == "too_deep")
    assert f"> limit {MAX_DEPTH}" in deep["detail"]
    assert all(r["source_file"].endswith(".ndjson") for r in bronze + quarantine)
    first = next(r for r in bronze if r["event_id"] == "match_start-0")
    assert json.loads(first["payload"]) == json.loads(good[0])
    assert first["event_time"].isoformat() == "2026-11-22T10:00:00.500000+00:00"


def test_registry_versions_follow_the_drift(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_file(landing, "1.ndjson", [event("a", 0, score=1, p={"id": 1}), event("a", 1, score=2, p={"id": 2})])
    write_file(landing, "2.ndjson", [event("a", 2, score=3, p={"id": 3, "guild": "g"}), event("b", 0, x=True)])
    write_file(landing, "3.ndjson", [event("a", 3, score=3.5, p={"id": 4})])
    write_file(landing, "4.ndjson", [event("a", 4, score=1, p={"id": 1}, extra=None), event("a", 5, p={"id": 9})])
    write_file(landing, "5.ndjson", [event("a", 6, score="high", p={"id": 5})])
    run_bronze(spark, lake, landing)

    registry = sorted(rows(lake.schema_registry), key=lambda r: (r["event_type"], r["schema_version"], r["batch_id"]))
    summary = [(r["event_type"], r["batch_id"], r["schema_version"], r["change_kind"]) for r in registry]
    assert summary == [
        ("a", 0, 1, "new_event_type"),
        ("a", 1, 2, "added_fields"),
        ("a", 2, 3, "widened"),
        ("a", 3, 3, "unchanged"),
        ("a", 4, 4, "incompatible"),
        ("b", 1, 1, "new_event_type"),
    ]
    latest = json.loads(registry[-2]["schema_json"])
    types = {f["name"]: f["type"] for f in latest["fields"]}
    assert types["score"] == "string", "superset by Spark inference: number + string = string"
    assert {f["name"] for f in types["p"]["fields"]} == {"id", "guild"}
    first_a = registry[0]
    assert json.loads(first_a["prototype"])["event_id"] == "a-0", "prototype is the first message seen"
    assert "p.id:integer" in first_a["variation_paths"]
    assert first_a["first_bronze_version"] == 1
    incompatible = registry[4]
    assert json.loads(incompatible["changed_fields"]) == [
        {"path": "score", "old_type": "long", "new_type": "string"}
    ], "a widening never changes the applied type: score stays long"


class CrashBeforeBronze(EmbeddedDelta):
    """Fails the batch after the registry and quarantine commits, before the bronze commit: the
    real write job runs with the bronze table left out of its plan."""

    def write_routes(self, df, plan: WritePlan, before_commit=None):
        quarantine_only = replace(
            plan, tables={QUARANTINE_ROUTE: plan.tables[QUARANTINE_ROUTE]}, commit_stages=((QUARANTINE_ROUTE,),)
        )
        super().write_routes(df, quarantine_only, before_commit)
        raise RuntimeError("simulated crash before the bronze commit")


def test_batch_replayed_after_crash_before_bronze_commit_duplicates_nothing(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_file(landing, "1.ndjson", [event("a", i, v=i) for i in range(4)] + [b"{oops", event("b", 0, w="x")])
    with pytest.raises(StreamingQueryException, match="simulated crash"):
        run_bronze(spark, lake, landing, connector=CrashBeforeBronze())
    assert len(rows(lake.schema_registry)) == 2, "the registry committed before the crash"
    assert rows(lake.bronze_events) == []
    assert [r["reason"] for r in rows(lake.bronze_quarantine)] == ["malformed_json"], "quarantine committed"

    run_bronze(spark, lake, landing)
    registry = rows(lake.schema_registry)
    assert sorted((r["event_type"], r["schema_version"]) for r in registry) == [("a", 1), ("b", 1)]
    assert sorted(r["event_id"] for r in rows(lake.bronze_events)) == ["a-0", "a-1", "a-2", "a-3", "b-0"]
    assert [r["reason"] for r in rows(lake.bronze_quarantine)] == ["malformed_json"]
    history = DeltaTable(str(lake.bronze_events)).history()
    assert [h.get("streamops.batchId") for h in history if "streamops.batchId" in h] == [0]


class RejectingRegistry(SchemaRegistry):
    """Rejects every variation of type `b`, as the registry rejects one whose prototype, inference
    or Arrow schema fails; the other variations register as usual."""

    def register(self, spark, connector, new, bronze_version, commit):
        kept = [v for v in new if v.event_type != "b"]
        registration = super().register(spark, connector, kept, bronze_version, commit)
        refused = {(v.event_type, v.variation_hash): "prototype refused" for v in new if v.event_type == "b"}
        return Registration(registration.entries, {**registration.rejected, **refused})


def test_lines_of_a_rejected_variation_are_quarantined_and_the_first_attempts_files_removed(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_file(landing, "1.ndjson", [event("a", i, v=i) for i in range(3)] + [event("b", i, w="x") for i in range(2)])
    registry = RejectingRegistry.load(lake.schema_registry)
    settings = BronzeSettings(LandingInput(landing), available_now=True)
    writer = BronzeBatchWriter(lake, EmbeddedDelta(), registry, Unmonitored(), settings)
    query = start_bronze(spark, lake, writer)
    try:
        query.awaitTermination(180)
    finally:
        query.stop()
    assert sorted(r["event_id"] for r in rows(lake.bronze_events)) == ["a-0", "a-1", "a-2"]
    quarantine = rows(lake.bronze_quarantine)
    assert [(q["reason"], q["detail"]) for q in quarantine] == [
        ("unprocessable", f"stage {REGISTRY_STAGE}: prototype refused")
    ] * 2
    assert sorted(json.loads(q["raw_bytes"])["event_id"] for q in quarantine) == ["b-0", "b-1"]
    assert [r["event_type"] for r in rows(lake.schema_registry)] == ["a"]
    for table in (lake.bronze_events, lake.bronze_quarantine):
        committed = {Path(uri).name for uri in DeltaTable(str(table)).file_uris()}
        assert {f.name for f in Path(table).glob("*.parquet")} == committed, "the first attempt's files are deleted"


def test_restart_continues_from_the_checkpoint(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_file(landing, "1.ndjson", [event("a", 0), event("a", 1)])
    started = datetime.now(timezone.utc)
    run_bronze(spark, lake, landing)
    between = datetime.now(timezone.utc)
    write_file(landing, "2.ndjson", [event("a", 2), b"[]"])
    run_bronze(spark, lake, landing)
    bronze = rows(lake.bronze_events)
    assert sorted(r["event_id"] for r in bronze) == ["a-0", "a-1", "a-2"]
    assert sorted({r["batch_id"] for r in bronze}) == [0, 1]
    first, second = ({r["ingest_time"] for r in bronze if r["batch_id"] == b} for b in (0, 1))
    assert len(first) == len(second) == 1, "one ingest time per batch"
    assert started <= first.pop() <= between <= second.pop() <= datetime.now(timezone.utc)
    quarantine = rows(lake.bronze_quarantine)
    assert [(r["reason"], r["stream"], r["batch_id"]) for r in quarantine] == [("not_an_object", "bronze", 1)]
    assert len(rows(lake.schema_registry)) == 1


def test_a_line_with_a_byte_order_mark_is_ingested_and_ingestion_goes_on(spark, tmp_path):
    """Regression: a BOM line was accepted by the JVM classifier, then refused by the registry's
    second parser; the bronze batch failed on every replay and nothing after it was ingested."""
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_file(landing, "a.ndjson", [b"\xef\xbb\xbf" + event("bom_first", 0, n=1), event("bom_first", 1, n=2)])
    write_file(landing, "b.ndjson", [event("after", 0, x="y")])
    run_bronze(spark, lake, landing)
    bronze = {r["event_id"]: r for r in rows(lake.bronze_events)}
    assert sorted(bronze) == ["after-0", "bom_first-0", "bom_first-1"]
    assert bronze["bom_first-0"]["payload"].startswith('{"event_type"'), "the BOM is dropped from the payload"
    registry = rows(lake.schema_registry)
    assert {r["event_type"] for r in registry} == {"bom_first", "after"}
    assert not DeltaTable(str(lake.bronze_quarantine)).count()
