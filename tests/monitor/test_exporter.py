"""The exporter's families, built from the catalog, on recorded progress (fresh registry each)."""

from __future__ import annotations

import subprocess
from dataclasses import replace

from monitor_fixtures import observed_progress, recorded_sequence, replay
from prometheus_client import CollectorRegistry, generate_latest

from streamops.core.delta_format.change_commits import ChangeCommit
from streamops.core.delta_format.retention import RetentionHeadroom
from streamops.monitor import metric_catalog as catalog
from streamops.monitor.exporter import FleetCollector
from streamops.monitor.fleet import CdcApply, Fleet, TableCommit
from streamops.monitor.progress_event import QueryProgress
from streamops.monitor.source_backlog import BacklogReading
from streamops.monitor.source_lag import source_lag

NOW = 2_000_000_000.0


def scrape_registry(fleet: Fleet, dropped: int = 0, now: float = NOW) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(FleetCollector(fleet, lambda: dropped, clock=lambda: now))
    return registry


def promtool_check(text: bytes) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=60)


def test_stream_families_carry_the_recorded_values():
    name = "sequence_delta_lagging.jsonl"
    recorded = list(recorded_sequence(name))
    progress = [e for e, _ in recorded if isinstance(e, QueryProgress)]
    last, reading = [(e, r) for e, r in recorded if isinstance(e, QueryProgress)][-1]
    just_after = last.timestamp + last.batch_duration_ms / 1000 + 0.1
    registry = scrape_registry(replay(Fleet(), name, skip_terminated=True), now=just_after)
    stream = {"stream": last.stream}
    value = registry.get_sample_value

    assert value(catalog.STREAM_UP.name, stream) == 1
    assert value(catalog.INPUT_ROWS.name, stream) == sum(p.num_input_rows for p in progress)
    assert value(catalog.BATCH_ID.name, stream) == last.batch_id
    assert value(catalog.PROCESSED_ROWS_PER_SECOND.name, stream) == last.processed_rows_per_second
    expected_input = last.num_input_rows / (last.timestamp - progress[-2].timestamp)
    assert abs(value(catalog.INPUT_ROWS_PER_SECOND.name, stream) - expected_input) < 1e-9
    assert value(catalog.BATCH_DURATION.name, stream) == last.duration_ms["triggerExecution"] / 1000
    for phase, ms in last.duration_ms.items():
        assert value(catalog.BATCH_PHASE_DURATION.name, stream | {"phase": phase}) == ms / 1000
    assert value(catalog.LAST_PROGRESS.name, stream) == last.timestamp + last.batch_duration_ms / 1000
    source = stream | {"source": "0", "kind": "delta"}
    assert value(catalog.BACKLOG_FILES.name, source) == reading.backlog.files
    assert value(catalog.BACKLOG_VERSIONS.name, source) == reading.backlog.versions
    assert value(catalog.BACKLOG_BYTES.name, source) == reading.backlog.bytes
    assert value(catalog.BACKLOG_SECONDS.name, source) == reading.backlog.seconds
    assert value(catalog.BACKLOG_OFFSETS.name, source) is None  # a Delta source has no offsets behind
    description = {
        "description": "org.apache.spark.sql.execution.datasources.v2.python.PythonMicroBatchStreamWithTriggerAvailableNow"
    }
    assert value(catalog.SOURCE_INFO.name + "_info", source | description) == 1
    info = stream | {"query_id": last.query_id, "run_id": last.run_id, "group": "", "delta_connector": ""}
    assert value(catalog.STREAM_INFO.name + "_info", info) == 1
    # status is a state set: exactly one state is 1 (the recording is of a lagging stream;
    # scraped long after its last batch, with its backlog still waiting, it would be stalled)
    states = {
        s: value(catalog.STREAM_STATUS.name, stream | {catalog.STREAM_STATUS.name: s}) for s in catalog.STREAM_STATUSES
    }
    assert states == {s: float(s == "lagging") for s in catalog.STREAM_STATUSES}
    # a stateless stream: no state, watermark or warning, and no state family sample at all
    for code in catalog.STREAM_WARNINGS:
        assert value(catalog.STREAM_WARNING.name, stream | {catalog.STREAM_WARNING.name: code}) == 0
    text = generate_latest(registry).decode()
    for spec in (catalog.STATE_ROWS, catalog.WATERMARK_LAG, catalog.ROCKSDB_SST_BYTES):
        assert f"\n{spec.name}{{" not in text
    later = scrape_registry(replay(Fleet(), name, skip_terminated=True), now=just_after + 3600)
    assert later.get_sample_value(catalog.STREAM_STATUS.name, stream | {catalog.STREAM_STATUS.name: "stalled"}) == 1


def test_pushed_facts_become_event_type_quarantine_and_freshness_families():
    fleet = replay(Fleet(), "sequence_delta_lagging.jsonl", skip_terminated=True)
    fleet.record_table_commit(TableCommit("login", "core", 40, NOW - 30, 3, NOW - 45))
    fleet.record_table_commit(TableCommit("login", "core", 2, NOW - 10, 4, NOW - 12))
    fleet.record_stream_event_time("delta_stream", NOW - 7)
    fleet.record_quarantine("bronze", "malformed_json", 3)
    fleet.record_quarantine("bronze", "malformed_json", 2)
    fleet.record_schema_alert("login")
    value = scrape_registry(fleet, dropped=4).get_sample_value
    et = {"event_type": "login", "group": "core"}
    assert value(catalog.EVENT_TYPE_ROWS.name, et) == 42
    assert value(catalog.EVENT_TYPE_LAST_COMMIT.name, et) == NOW - 10
    assert value(catalog.EVENT_TYPE_SCHEMA_VERSION.name, et) == 4
    assert value(catalog.EVENT_TYPE_FRESHNESS.name, et) == 12
    assert value(catalog.FRESHNESS.name, {"stream": "delta_stream"}) == 7
    assert value(catalog.QUARANTINED_ROWS.name, {"stream": "bronze", "reason": "malformed_json"}) == 5
    assert value(catalog.SCHEMA_ALERTS.name, {"event_type": "login"}) == 1
    assert value(catalog.MONITOR_EVENTS_DROPPED.name) == 4


def test_a_stopped_stream_is_down_and_silver_streams_carry_their_group():
    fleet = replay(Fleet(), "sequence_file_drained.jsonl")
    value = scrape_registry(fleet).get_sample_value
    assert value(catalog.STREAM_UP.name, {"stream": "file_stream"}) == 0
    assert value(catalog.STREAM_STATUS.name, {"stream": "file_stream", catalog.STREAM_STATUS.name: "stopped"}) == 1
    assert value(catalog.STREAM_FAILURES.name, {"stream": "file_stream"}) == 0
    fleet.record_stream_event_time("silver_core", NOW - 1)
    (event, _), *_ = recorded_sequence("sequence_rate_slowing.jsonl")
    renamed = event.__class__.from_json(event.json.replace('"slowing_stream"', '"silver_core"'))
    fleet.apply(renamed)
    text = generate_latest(scrape_registry(fleet)).decode()
    assert 'group="core"' in text and 'stream="silver_core"' in text


def with_retention_and_changes(fleet: Fleet, stream: str) -> Fleet:
    """The stream's Delta source measured with unread data near its retention and an unread MERGE."""
    (event, reading), *_ = [(e, r) for e, r in recorded_sequence("sequence_delta_lagging.jsonl") if r is not None][-1:]
    measured = replace(
        reading.backlog,
        retention=RetentionHeadroom(files=3600.0, log=2_000_000.0),
        change_commits=(ChangeCommit(41, "rewrite", "MERGE", None),),
    )
    lag = source_lag(0, event.sources[0], measured, None)
    fleet.update_backlog(stream, BacklogReading(measured, True, NOW, (lag,)))
    return fleet


def test_unread_changes_and_retention_headroom_become_source_families_and_warnings():
    fleet = with_retention_and_changes(
        replay(Fleet(), "sequence_delta_lagging.jsonl", skip_terminated=True), "delta_stream"
    )
    value = scrape_registry(fleet).get_sample_value
    source = {"stream": "delta_stream", "source": "0", "kind": "delta"}
    assert value(catalog.SOURCE_RETENTION_HEADROOM.name, source | {"retention": "deleted_files"}) == 3600
    assert value(catalog.SOURCE_RETENTION_HEADROOM.name, source | {"retention": "log"}) == 2_000_000
    changes = {
        c: value(catalog.SOURCE_CHANGE_COMMITS.name, source | {"change": c})
        for c in ("delete", "rewrite", "schema_change")
    }
    assert changes == {"delete": 0, "rewrite": 1, "schema_change": 0}
    warning = {"stream": "delta_stream", catalog.STREAM_WARNING.name: "source_retention_low"}
    assert value(catalog.STREAM_WARNING.name, warning) == 1
    assert value(catalog.STREAM_WARNING.name, warning | {catalog.STREAM_WARNING.name: "source_change_commits"}) == 1


def test_every_catalog_metric_is_exported_and_promtool_accepts_the_scrape():
    fleet = with_retention_and_changes(
        replay(Fleet(), "sequence_delta_lagging.jsonl", skip_terminated=True), "delta_stream"
    )
    for name in ("sequence_kafka_lagging.jsonl", "sequence_window_rocksdb.jsonl", "sequence_state_unbounded.jsonl"):
        replay(fleet, name, skip_terminated=True)
    fleet.record_table_commit(TableCommit("login", "core", 1, NOW, 1, NOW - 1))
    fleet.record_stream_event_time("delta_stream", NOW - 1)
    fleet.record_quarantine("bronze", "malformed_json", 1)
    fleet.record_schema_alert("login")
    fleet.record_kafka_data_loss("bronze", "events", 1, 120)
    fleet.record_cdc_apply(CdcApply("silver_g0001", "public.orders", 2, 1, 1, 0, 3.5, NOW))
    fleet.record_expectation("silver_g0001", "purchase", "price_nonneg", 95, 5)
    fleet.apply(observed_progress({"quality": {"rows": 50, "bad": 2, "any_bad": True, "last": "x"}}))
    text = generate_latest(scrape_registry(fleet))
    lines = text.decode().splitlines()
    for spec in catalog.CATALOG:
        exposed = spec.name + ("_info" if spec.kind == "info" else "")
        assert f"# HELP {exposed} {spec.help}" in lines, spec.name
        sample = exposed + ("_bucket" if spec.kind == "histogram" else "")
        assert any(line.startswith(sample + "{") or line.startswith(sample + " ") for line in lines), exposed
    result = promtool_check(text)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()


def test_promtool_rejects_what_the_catalog_must_never_contain():
    """The promtool check can fail: a counter without `_total` and a camelCase name."""
    bad = b"# HELP x_bytes x\n# TYPE x_bytes counter\nx_bytes 1\n# HELP lagMs x\n# TYPE lagMs gauge\nlagMs 1\n"
    result = promtool_check(bad)
    assert result.returncode != 0
    assert b"_total" in result.stdout + result.stderr


def test_label_names_are_the_catalog_labels_only():
    """One `stream` label per stream metric: never a batch or run id label (info aside)."""
    registry = scrape_registry(replay(Fleet(), "sequence_delta_lagging.jsonl", skip_terminated=True))
    specs = {spec.name.removesuffix("_total"): spec for spec in catalog.CATALOG}
    for family in registry.collect():
        spec = specs[family.name]
        for sample in family.samples:
            extra = set(sample.labels) - set(spec.labels)
            if spec.kind == "info":
                assert extra == set(spec.info_keys)
            elif spec.kind == "stateset":
                assert extra == {spec.name}
            elif spec.kind == "histogram":
                assert extra <= {"le"}
            else:
                assert not extra, (family.name, extra)
            assert "batch_id" not in sample.labels
