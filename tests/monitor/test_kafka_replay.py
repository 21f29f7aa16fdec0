"""Kafka progress (Spark 3.5 and 4.x JSON, tests/monitor/fixtures/kafka_fixtures.py) and a source
nobody knows, replayed through the monitor's own worker thread without Spark: what the exporter
serves, what the progress log keeps and what `streamops status` says."""

from __future__ import annotations

import json
import subprocess

import pytest
from monitor_fixtures import FIXTURES, fixture_text
from prometheus_client import CollectorRegistry, generate_latest

from streamops.monitor import metric_catalog as catalog
from streamops.monitor.event_queue import EventQueue, RawEvent
from streamops.monitor.exporter import FleetCollector
from streamops.monitor.fleet import Fleet
from streamops.monitor.fleet_status import fleet_status
from streamops.monitor.progress_event import QueryProgress
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_worker import ProgressWorker
from streamops.monitor.source_backlog import SourceBacklog
from streamops.monitor.source_lag import estimated_seconds, read_rate

SINGLE_EVENTS = ("progress_kafka_spark35.json", "progress_kafka_spark4.json", "progress_unknown_source.json")


def partition_lags(raw_source: dict) -> list[int]:
    latest, end = raw_source["latestOffset"], raw_source["endOffset"]
    return [latest[t][p] - end[t][p] for t in latest for p in latest[t]]


@pytest.fixture
def replayed(lake):
    """The Kafka sequence and the single events, through a real worker into a real log."""
    queue, fleet = EventQueue(1000), Fleet()
    worker = ProgressWorker(queue, fleet, SourceBacklog(lake), ProgressLog(lake.query_progress), flush_interval_s=0.2)
    worker.start()
    try:
        for line in (FIXTURES / "sequence_kafka_lagging.jsonl").read_text().splitlines():
            entry = json.loads(line)
            assert queue.offer(RawEvent(entry["kind"], json.dumps(entry["json"]), entry["received_at"]))
        for name in SINGLE_EVENTS:
            event = QueryProgress.from_json(fixture_text(name))
            assert queue.offer(RawEvent("progress", fixture_text(name), event.timestamp + 10))
        assert worker.flush(60)
    finally:
        worker.stop(60)
    return fleet


def scrape(fleet: Fleet, now: float) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(FleetCollector(fleet, clock=lambda: now))
    return registry


def test_the_scrape_has_each_kafka_sources_lag_state_and_watermark(replayed):
    spark4 = json.loads(fixture_text("progress_kafka_spark4.json"))["progress"]
    event = QueryProgress.from_json(fixture_text("progress_kafka_spark4.json"))
    registry = scrape(replayed, event.timestamp + 12)
    value = registry.get_sample_value
    stream = {"stream": "payments_with_accounts"}
    kafka = stream | {"source": "0", "kind": "kafka"}
    delta = stream | {"source": "1", "kind": "delta"}
    raw_kafka, raw_delta = spark4["sources"]
    assert value(catalog.BACKLOG_OFFSETS.name, kafka) == sum(partition_lags(raw_kafka))
    assert value(catalog.BACKLOG_MAX_PARTITION_OFFSETS.name, kafka) == max(partition_lags(raw_kafka))
    assert value(catalog.BACKLOG_BYTES.name, kafka) == float(raw_kafka["metrics"]["estimatedTotalBytesBehindLatest"])
    assert value(catalog.BACKLOG_FILES.name, delta) == int(raw_delta["metrics"]["numFilesOutstanding"])
    assert value(catalog.BACKLOG_BYTES.name, delta) == int(raw_delta["metrics"]["numBytesOutstanding"])
    assert value(catalog.BACKLOG_OFFSETS.name, delta) is None
    assert value(catalog.SOURCE_INFO.name + "_info", kafka | {"description": "KafkaV2[Subscribe[payments]]"}) == 1

    join = stream | {"operator": "symmetricHashJoin"}
    raw_join = spark4["stateOperators"][0]
    assert value(catalog.STATE_ROWS.name, join) == raw_join["numRowsTotal"]
    assert value(catalog.STATE_MEMORY.name, join) == raw_join["memoryUsedBytes"]
    assert value(catalog.STATE_ROWS_UPDATED.name, join) == raw_join["numRowsUpdated"]
    assert value(catalog.STATE_ROWS_REMOVED.name, join) == raw_join["numRowsRemoved"]
    assert value(catalog.ROCKSDB_SST_BYTES.name, join) == raw_join["customMetrics"]["rocksdbSstFileSize"]
    assert value(catalog.ROCKSDB_CHECKPOINT_BYTES.name, join) == raw_join["customMetrics"]["rocksdbBytesCopied"]
    assert (
        value(catalog.ROCKSDB_COMMIT_SECONDS.name, join | {"phase": "file_sync"})
        == raw_join["customMetrics"]["rocksdbCommitFileSyncLatencyMs"] / 1000
    )
    assert value(catalog.WATERMARK_LAG.name, stream) == event.timestamp - event.watermark
    assert value(catalog.EVENT_TIME_MAX_LAG.name, stream) == event.timestamp - event.event_time["max"]
    whole = stream | {"phase": "triggerExecution"}
    assert value(catalog.BATCH_PHASE_SECONDS.name + "_count", whole) == 1
    assert value(catalog.BATCH_PHASE_SECONDS.name + "_sum", whole) == spark4["durationMs"]["triggerExecution"] / 1000
    assert value(catalog.BATCH_PHASE_SECONDS.name + "_bucket", whole | {"le": "5.0"}) == 0
    assert value(catalog.BATCH_PHASE_SECONDS.name + "_bucket", whole | {"le": "10.0"}) == 1

    result = subprocess.run(
        ["promtool", "check", "metrics"], input=generate_latest(registry), capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()


def test_the_lagging_kafka_stream_exports_its_estimate_and_status(replayed):
    (view,) = [v for v in replayed.snapshot().streams if v.stream == "orders_enriched"]
    last = view.observation.samples[-1]
    registry = scrape(replayed, last.ended_at + 0.1)
    value = registry.get_sample_value
    source = {"stream": "orders_enriched", "source": "0", "kind": "kafka"}
    (lag,) = view.sources
    assert value(catalog.BACKLOG_OFFSETS.name, source) == lag.offsets == last.offsets
    expected = estimated_seconds(lag.offsets, read_rate(view.observation.samples, 0))
    assert value(catalog.BACKLOG_ESTIMATED_SECONDS.name, source) == pytest.approx(expected) and expected > 10
    status = {"stream": "orders_enriched", catalog.STREAM_STATUS.name: "lagging"}
    assert value(catalog.STREAM_STATUS.name, status) == 1
    histogram = {"stream": "orders_enriched", "phase": "triggerExecution"}
    assert value(catalog.BATCH_PHASE_SECONDS.name + "_count", histogram) == len(view.observation.samples)


def test_an_unknown_source_is_exported_under_kind_unknown(replayed):
    event = QueryProgress.from_json(fixture_text("progress_unknown_source.json"))
    value = scrape(replayed, event.timestamp + 12).get_sample_value
    source = {"stream": "queue_ingest", "source": "0", "kind": "unknown"}
    assert value(catalog.BACKLOG_OFFSETS.name, source) == 7200
    assert value(catalog.BACKLOG_BYTES.name, source) == 921600
    description = {"description": "com.example.queue.QueueMicroBatchStream"}
    assert value(catalog.SOURCE_INFO.name + "_info", source | description) == 1
    assert value(catalog.STATE_ROWS.name, {"stream": "queue_ingest", "operator": "transformWithStateExec"}) == 1200
    phase = {"stream": "queue_ingest", "phase": "commitBatch"}
    assert value(catalog.BATCH_PHASE_SECONDS.name + "_count", phase) == 1


def test_the_progress_log_keeps_per_source_lag_state_and_watermark(replayed, lake):
    rows = ProgressLog(lake.query_progress).read(events=["progress"]).to_pylist()
    by_stream = {}
    for row in rows:
        by_stream.setdefault(row["stream"], []).append(row)
    assert set(by_stream) == {"orders_enriched", "clicks_per_minute", "payments_with_accounts", "queue_ingest"}
    payments = by_stream["payments_with_accounts"][0]
    raw = json.loads(fixture_text("progress_kafka_spark4.json"))["progress"]
    assert [(s["source"], s["kind"], s["offsets"], s["files"]) for s in payments["source_backlogs"]] == [
        (0, "kafka", sum(partition_lags(raw["sources"][0])), None),
        (1, "delta", None, 3),
    ]
    assert payments["backlog_offsets"] == sum(partition_lags(raw["sources"][0]))
    assert payments["state_rows_total"] == raw["stateOperators"][0]["numRowsTotal"]
    assert payments["state_memory_bytes"] == raw["stateOperators"][0]["memoryUsedBytes"]
    assert payments["watermark"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" == raw["eventTime"]["watermark"]
    assert json.loads(payments["sources"][0]["metrics"]) == raw["sources"][0]["metrics"]
    clicks = by_stream["clicks_per_minute"][0]
    assert clicks["state_rows_dropped_by_watermark"] == 17
    orders = sorted(by_stream["orders_enriched"], key=lambda r: r["batch_id"])
    assert [r["backlog_offsets"] for r in orders] == sorted(r["backlog_offsets"] for r in orders)


def test_streamops_status_reads_the_kafka_lag_back(replayed, lake):
    (view,) = [v for v in replayed.snapshot().streams if v.stream == "orders_enriched"]
    last = view.observation.samples[-1]
    rows = {row.stream: row for row in fleet_status(lake, now=last.ended_at + 1)}
    orders = rows["orders_enriched"].to_json()
    (source,) = orders["sources"]
    assert (source["kind"], source["offsets"]) == ("kafka", last.offsets)
    assert source["estimated_seconds"] == pytest.approx(
        estimated_seconds(last.offsets, read_rate(view.observation.samples, 0)), rel=1e-3
    )
    assert rows["orders_enriched"].status == "lagging"
    clicks = rows["clicks_per_minute"].to_json()
    (warning,) = clicks["warnings"]  # its one batch dropped 17 late rows
    assert warning["code"] == "late_rows_dropped" and warning["message"].startswith("17 late rows dropped")
    assert clicks["state"] == {"rows": 18422, "memory_bytes": 9876543}
    event = QueryProgress.from_json(fixture_text("progress_kafka_spark35.json"))
    assert clicks["watermark_lag_seconds"] == pytest.approx(event.timestamp - event.watermark)
