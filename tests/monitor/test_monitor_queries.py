"""The monitor attached to real streaming queries on the shared local SparkSession.

Each test starts its own monitor (fresh registry), stops every query it starts and the monitor
in `finally`, and keeps to a few seconds with sub-second triggers.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
import urllib.request

import pytest
from deltalake import DeltaTable
from monitor_fixtures import append, delta_formats, delta_stream, held_file_stream, rows_read
from prometheus_client.parser import text_string_to_metric_families
from waiting import wait_until

from streamops.monitor import metric_catalog as catalog
from streamops.monitor.fleet import TableCommit
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.status_rules import StatusPolicy
from streamops.monitor.stream_monitor import StreamMonitor

FAST = StatusPolicy(window=5, min_batches=3, min_stall_seconds=1.0)


def delta_source(stream: str) -> dict[str, str]:
    """The labels of a stream's one source, a Delta table."""
    return {"stream": stream, "source": "0", "kind": "delta"}


def snapshot_offset(table_id: str, version: int, index: int, last: bool, source_format: str) -> dict:
    """The end offset of a batch that read file `index` of the starting snapshot at `version`.
    delta-spark moves the offset past a version once its last file is read (the next version's
    base index, -1); the embedded source stays on the last file read. Both resume the same."""
    if last and source_format == "delta":
        return {
            "sourceVersion": 1,
            "reservoirId": table_id,
            "reservoirVersion": version + 1,
            "index": -1,
            "isStartingVersion": False,
        }
    return {
        "sourceVersion": 1,
        "reservoirId": table_id,
        "reservoirVersion": version,
        "index": index,
        "isStartingVersion": True,
    }


def status_of(monitor: StreamMonitor, stream: str) -> str | None:
    verdict = monitor.stream_status(stream)
    return verdict.status if verdict else None


@pytest.mark.parametrize("source_format", delta_formats())
def test_progress_rows_land_in_the_delta_log_with_the_source_offsets(spark, lake, source_format):
    table = lake.bronze_events  # in the lake: the monitor finds it by reservoirId, unregistered
    for i in range(3):
        append(table, 10 * i)
    table_id = DeltaTable(str(table)).metadata().id
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2).start()
    try:
        query = (
            delta_stream(spark, table, source_format=source_format)
            .writeStream.format("memory")
            .queryName("offsets_stream")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        try:
            wait_until(lambda: rows_read(query) == 30, what="30 rows read")
        finally:
            query.stop()
    finally:
        monitor.stop()

    rows = ProgressLog(lake.query_progress).read().to_pylist()
    mine = [r for r in rows if r["stream"] == "offsets_stream"]
    assert {r["event"] for r in mine} >= {"started", "progress", "terminated"}
    batches = sorted((r for r in mine if r["event"] == "progress" and r["num_input_rows"]), key=lambda r: r["batch_id"])
    assert [(r["batch_id"], r["num_input_rows"]) for r in batches] == [(0, 10), (1, 10), (2, 10)]
    previous_end = None
    for index, row in enumerate(batches):
        (source,) = row["sources"]
        end = json.loads(source["end_offset"])
        assert end == snapshot_offset(table_id, 2, index, index == len(batches) - 1, source_format)
        if previous_end is not None:
            assert json.loads(source["start_offset"]) == previous_end
        previous_end = end
        # measured right after each batch: the files of the starting snapshot still to read
        assert (row["backlog_files"], row["backlog_pending"]) == (2 - index, index < 2)
        assert json.loads(row["json"])["batchId"] == row["batch_id"]
        assert row["query_id"] == str(query.id) and row["run_id"] == str(query.runId)
    assert mine[0]["recorded_at"] is not None


def test_the_exporter_scrape_has_the_workload_values_and_passes_promtool(spark, lake, tmp_path):
    table = tmp_path / "source"  # outside the lake: registered
    for i in range(3):
        append(table, 10 * i)
    monitor = StreamMonitor(spark, lake, metrics_port=0, flush_interval_s=0.2, policy=FAST)
    monitor.register_source_table("scraped_stream", table)
    monitor.start()
    try:
        assert monitor.exporter_url.startswith("http://127.0.0.1:")
        query = (
            delta_stream(spark, table)
            .writeStream.format("memory")
            .queryName("scraped_stream")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        try:
            wait_until(lambda: rows_read(query) == 30, what="30 rows read")
            wait_until(
                lambda: (
                    monitor.flush()
                    and monitor.registry.get_sample_value(catalog.INPUT_ROWS.name, {"stream": "scraped_stream"}) == 30
                ),
                what="the monitor's 30 rows (Spark's listener bus delivers progress asynchronously)",
            )
            now = time.time()
            monitor.record_table_commit(TableCommit("login", "core", 30, now - 2, 3, now - 20))
            monitor.record_stream_event_time("scraped_stream", now - 5)
            monitor.record_quarantine("scraped_stream", "malformed_json", 4)
            monitor.record_schema_alert("login")
            body = urllib.request.urlopen(monitor.exporter_url, timeout=10).read()
        finally:
            query.stop()
        after_stop = monitor.registry.get_sample_value
        wait_until(
            lambda: monitor.flush() and after_stop(catalog.STREAM_UP.name, {"stream": "scraped_stream"}) == 0,
            what="the termination event (Spark's listener bus delivers it asynchronously)",
        )
        assert (
            after_stop(
                catalog.STREAM_STATUS.name,
                {"stream": "scraped_stream", catalog.STREAM_STATUS.name: "stopped"},
            )
            == 1
        )
    finally:
        monitor.stop()

    result = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }

    def value(spec, **labels):
        return samples[(spec.name + ("_info" if spec.kind == "info" else ""), tuple(sorted(labels.items())))]

    stream = {"stream": "scraped_stream"}
    assert value(catalog.STREAM_UP, **stream) == 1
    assert value(catalog.INPUT_ROWS, **stream) == 30
    assert value(catalog.BATCH_ID, **stream) == max(p["batchId"] for p in query.recentProgress)
    for spec in (
        catalog.BACKLOG_FILES,
        catalog.BACKLOG_VERSIONS,
        catalog.BACKLOG_BYTES,
        catalog.BACKLOG_SECONDS,
    ):
        assert value(spec, **stream, source="0", kind="delta") == 0
    last = query.recentProgress[-1]
    assert value(catalog.BATCH_DURATION, **stream) == last["durationMs"]["triggerExecution"] / 1000
    assert value(catalog.BATCH_PHASE_DURATION, phase="addBatch", **stream) == last["durationMs"]["addBatch"] / 1000
    assert 5 <= value(catalog.FRESHNESS, **stream) < 60
    assert value(catalog.QUARANTINED_ROWS, reason="malformed_json", **stream) == 4
    assert value(catalog.EVENT_TYPE_ROWS, event_type="login", group="core") == 30
    assert value(catalog.EVENT_TYPE_SCHEMA_VERSION, event_type="login", group="core") == 3
    assert value(catalog.SCHEMA_ALERTS, event_type="login") == 1
    assert value(catalog.MONITOR_EVENTS_DROPPED) == 0
    assert value(catalog.MONITOR_WORKER_CPU) > 0
    statuses = {s: value(catalog.STREAM_STATUS, streamops_stream_status=s, **stream) for s in catalog.STREAM_STATUSES}
    assert sum(statuses.values()) == 1 and statuses["ok"] + statuses["idle"] == 1


@pytest.mark.parametrize("source_format", delta_formats())
def test_a_slowed_stream_becomes_lagging(spark, lake, source_format):
    table = lake.silver("slow_source")
    for i in range(4):
        append(table, 10 * i)
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2, policy=FAST).start()
    written = itertools.count(4)

    def falls_behind(df, batch_id):
        """Reads one file and lands two in its source: the backlog grows by one file a batch
        whatever the machine's speed (a writer thread racing the batches did not, under load)."""
        df.count()
        for _ in range(2):
            append(table, 10 * next(written))

    try:
        query = (
            delta_stream(spark, table, source_format=source_format)
            .writeStream.foreachBatch(falls_behind)
            .queryName("slowed_stream")
            .trigger(processingTime="0.3 seconds")  # batches further apart than the log's 0.1 s re-read
            .start()
        )
        try:
            wait_until(lambda: status_of(monitor, "slowed_stream") == "lagging", what="LAGGING")
            # its backlog grows by a file a batch; on a loaded machine its rate also falls below
            # the input's, which the rules may name first: both are this stream's lag
            reason = monitor.stream_status("slowed_stream").reason
            assert reason.startswith(("backlog grew from", "processed rate below input rate")), reason
        finally:
            query.stop()
    finally:
        monitor.stop()


@pytest.mark.parametrize("source_format", delta_formats())
def test_a_blocked_stream_with_backlog_becomes_stalled(spark, lake, source_format):
    table = lake.silver("blocked_source")
    for i in range(4):
        append(table, 10 * i)
    monitor = StreamMonitor(
        spark, lake, flush_interval_s=0.2, policy=StatusPolicy(window=3, min_batches=2, min_stall_seconds=1.0)
    ).start()
    gate = threading.Event()

    def blocked(df, batch_id):
        df.count()  # Spark counts input rows only for data a batch actually reads
        if batch_id >= 4:
            gate.wait(60)

    try:
        query = (
            delta_stream(spark, table, source_format=source_format)
            .writeStream.foreachBatch(blocked)
            .queryName("blocked_stream")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        try:
            wait_until(lambda: rows_read(query) == 40, what="the first 4 batches")
            append(table, 100)
            append(table, 200)
            verdict = wait_until(
                lambda: (v := monitor.stream_status("blocked_stream")) and v.status == "stalled" and v,
                what="STALLED",
            )
            assert verdict.reason.startswith("2 files (")
            assert monitor.registry.get_sample_value(catalog.BACKLOG_FILES.name, delta_source("blocked_stream")) == 2
        finally:
            gate.set()
            query.stop()
    finally:
        monitor.stop()


def test_a_failing_stream_is_failed_with_its_message(spark, lake):
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2).start()

    def boom(df, batch_id):
        df.count()
        if batch_id >= 1:
            raise ValueError(f"boom in batch {batch_id}")

    try:
        query = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 20)
            .load()
            .writeStream.foreachBatch(boom)
            .queryName("failing_stream")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        try:
            with pytest.raises(Exception, match="boom in batch 1"):
                query.awaitTermination(60)
        finally:
            query.stop()
        assert monitor.flush()
        verdict = monitor.stream_status("failing_stream")
        assert verdict.status == "failed"
        assert verdict.reason == "ValueError: boom in batch 1"
        assert monitor.registry.get_sample_value(catalog.STREAM_FAILURES.name, {"stream": "failing_stream"}) == 1
    finally:
        monitor.stop()
    (row,) = ProgressLog(lake.query_progress).read(events=["terminated"]).to_pylist()
    assert "ValueError: boom in batch 1" in row["exception"]


@pytest.mark.parametrize("source_format", delta_formats())
def test_a_drained_stream_is_idle(spark, lake, source_format):
    table = lake.silver("drained_source")
    append(table, 0)
    append(table, 10)
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2).start()
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "200")
    try:
        query = (
            delta_stream(spark, table, max_files=None, source_format=source_format)
            .writeStream.format("memory")
            .queryName("drained_stream")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
        try:
            wait_until(lambda: status_of(monitor, "drained_stream") == "idle", what="IDLE")
            assert rows_read(query) == 20
            assert monitor.registry.get_sample_value(catalog.BACKLOG_FILES.name, delta_source("drained_stream")) == 0
        finally:
            query.stop()
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
        monitor.stop()
    idle_rows = ProgressLog(lake.query_progress).read(events=["idle"]).to_pylist()
    assert len(idle_rows) == 1  # a heartbeat: the first idle after data, then one per minute


def test_a_file_source_backlog_comes_from_its_checkpoint_log(spark, lake, tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    sizes = []
    for i in range(3):
        path = landing / f"part-{i}.json"
        path.write_text("".join(json.dumps({"x": 100 + i * 10 + j}) + "\n" for j in range(5)))
        sizes.append(path.stat().st_size)
    assert len(set(sizes)) == 1  # whichever file Spark takes first, two of equal size wait
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2, policy=FAST).start()
    gate = threading.Event()

    try:
        query = held_file_stream(spark, landing, "bronze", lake.checkpoint("bronze"), gate)
        try:
            value = monitor.registry.get_sample_value
            files, landing_source = catalog.BACKLOG_FILES.name, {"stream": "bronze", "source": "0", "kind": "file"}
            wait_until(lambda: value(files, landing_source) == 2, what="2 files waiting")
            assert value(catalog.BACKLOG_BYTES.name, landing_source) == 2 * sizes[0]
            assert value(catalog.BACKLOG_SECONDS.name, landing_source) > 0
            gate.set()
            wait_until(lambda: rows_read(query) == 15, what="all 3 files read")
            wait_until(lambda: value(files, landing_source) == 0, what="no file waiting")
        finally:
            gate.set()
            query.stop()
    finally:
        monitor.stop()


def test_a_query_started_before_the_monitor_is_tracked_at_once(spark, lake):
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 5)
        .load()
        .writeStream.format("memory")
        .queryName("early_stream")
        .trigger(processingTime="5 seconds")
        .start()
    )
    monitor = StreamMonitor(spark, None)
    try:
        monitor.start()
        assert monitor.stream_status("early_stream").status == "ok"
        assert monitor.progress_log is None and monitor.exporter_url is None
    finally:
        query.stop()
        monitor.stop()
