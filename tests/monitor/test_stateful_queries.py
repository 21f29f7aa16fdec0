"""The monitor on real stateful queries: a windowed aggregation with a watermark (RocksDB state
store), dropDuplicatesWithinWatermark, a stream-stream join, and a file source with more files
waiting than `maxFilesPerTrigger`. Each scrape must hold the state, watermark and source families
with the values of the query's own `lastProgress` (and its `recentProgress` for counters).

Queries use the session `spark` fixture, rate sources and sub-second triggers; each test stops
its query and monitor in `finally`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from monitor_fixtures import held_file_stream
from prometheus_client import generate_latest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from waiting import wait_until

from streamops.monitor import metric_catalog as catalog
from streamops.monitor.progress_event import StateOperatorProgress, iso_to_epoch, operator_labels
from streamops.monitor.source_kinds import description_label
from streamops.monitor.state_counters import ROCKSDB_SST_BYTES
from streamops.monitor.status_rules import StatusPolicy
from streamops.monitor.stream_monitor import StreamMonitor

FAST = StatusPolicy(window=5, min_batches=3, min_stall_seconds=1.0)
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


def rate(spark, rows_per_second: int = 20) -> DataFrame:
    return spark.readStream.format("rate").option("rowsPerSecond", rows_per_second).load()


def progresses(query) -> list[dict[str, Any]]:
    return list(query.recentProgress)


def has_state_and_watermark(query) -> bool:
    """A batch has run with state held and Spark's watermark set (it reports the epoch before)."""
    return any(
        p["stateOperators"]
        and any(op["numRowsTotal"] for op in p["stateOperators"])
        and p["eventTime"].get("watermark", "1970-01-01T00:00:00.000Z") != "1970-01-01T00:00:00.000Z"
        for p in progresses(query)
    )


def stop_and_settle(monitor: StreamMonitor, query) -> dict[str, Any]:
    """Stop the query; once the monitor has its termination, every progress event is applied
    (the listener bus is ordered). Returns the query's own last progress."""
    query.stop()
    name = query.name
    # A stop can interrupt a batch inside Spark's broadcast ("Store broadcast ... fail"), and Spark
    # then ends the query with that exception: the monitor reports what Spark reports.
    ended = "stopped" if query.exception() is None else "failed"
    wait_until(lambda: (v := monitor.stream_status(name)) is not None and v.status == ended, what=f"{name} {ended}")
    assert monitor.flush()
    return query.lastProgress


def assert_scrape_matches(monitor: StreamMonitor, query, last: dict[str, Any], source_kinds: list[str]) -> None:
    value = monitor.registry.get_sample_value
    stream = {"stream": query.name}
    history = progresses(query)
    assert value(catalog.BATCH_ID.name, stream) == last["batchId"]

    for index, (kind, source) in enumerate(zip(source_kinds, last["sources"], strict=True)):
        labels = stream | {"source": str(index), "kind": kind}
        description = {"description": description_label(source["description"])}
        assert value(catalog.SOURCE_INFO.name + "_info", labels | description) == 1

    operators = [StateOperatorProgress.from_dict(op) for op in last["stateOperators"]]
    assert operators, "a stateful query reports its operators"
    for position, (label, op) in enumerate(zip(operator_labels(operators), operators)):
        labels = stream | {"operator": label}
        assert value(catalog.STATE_ROWS.name, labels) == op.num_rows_total
        assert value(catalog.STATE_MEMORY.name, labels) == op.memory_used_bytes
        for spec, field in (
            (catalog.STATE_ROWS_UPDATED, "numRowsUpdated"),
            (catalog.STATE_ROWS_REMOVED, "numRowsRemoved"),
            (catalog.STATE_ROWS_DROPPED, "numRowsDroppedByWatermark"),
        ):
            total = sum(p["stateOperators"][position][field] for p in history if p["stateOperators"])
            assert value(spec.name, labels) == total, (spec.name, label)

    watermark = iso_to_epoch(last["eventTime"]["watermark"])
    assert watermark  # set: the wait above saw it
    assert value(catalog.WATERMARK_LAG.name, stream) == pytest.approx(iso_to_epoch(last["timestamp"]) - watermark)
    batches = value(catalog.BATCH_PHASE_SECONDS.name + "_count", stream | {"phase": "triggerExecution"})
    assert batches == len(history)


def test_windowed_aggregation_on_rocksdb_exports_state_watermark_and_rocksdb_metrics(spark, lake):
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2, policy=FAST).start()
    try:
        spark.conf.set(PROVIDER_CONF, ROCKSDB)
        try:
            query = (
                rate(spark)
                .withWatermark("timestamp", "1 second")
                .groupBy(F.window("timestamp", "1 second"))
                .count()
                .writeStream.format("noop")
                .outputMode("append")
                .queryName("window_agg")
                .trigger(processingTime="0.5 seconds")
                .start()
            )
        finally:
            spark.conf.unset(PROVIDER_CONF)
        try:
            wait_until(
                lambda: any(p["stateOperators"][0]["numRowsRemoved"] for p in progresses(query)),
                90,
                "a window evicted",
            )
        finally:
            last = stop_and_settle(monitor, query)
        assert_scrape_matches(monitor, query, last, ["rate"])
        (op,) = last["stateOperators"]
        label = {"stream": "window_agg", "operator": op["operatorName"]}
        value = monitor.registry.get_sample_value
        assert value(catalog.ROCKSDB_SST_BYTES.name, label) == op["customMetrics"][ROCKSDB_SST_BYTES]
        copied = sum(p["stateOperators"][0]["customMetrics"].get("rocksdbBytesCopied", 0) for p in progresses(query))
        assert value(catalog.ROCKSDB_CHECKPOINT_BYTES.name, label) == copied
        assert value(catalog.ROCKSDB_COMMIT_SECONDS.name, label | {"phase": "checkpoint"}) == (
            op["customMetrics"]["rocksdbCommitCheckpointLatency"] / 1000
        )
        assert value(catalog.EVENT_TIME_MAX_LAG.name, {"stream": "window_agg"}) is not None
    finally:
        monitor.stop()


def test_drop_duplicates_within_watermark_exports_its_state(spark, lake):
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2, policy=FAST).start()
    try:
        query = (
            rate(spark)
            .withWatermark("timestamp", "1 second")
            .dropDuplicatesWithinWatermark(["value"])
            .writeStream.format("noop")
            .queryName("dedupe_within")
            .trigger(processingTime="0.5 seconds")
            .start()
        )
        try:
            wait_until(lambda: has_state_and_watermark(query), 90, "state held under a watermark")
        finally:
            last = stop_and_settle(monitor, query)
        assert_scrape_matches(monitor, query, last, ["rate"])
        # the default (HDFS-backed) provider reports no RocksDB metrics: no such series at all
        assert (
            monitor.registry.get_sample_value(
                catalog.ROCKSDB_SST_BYTES.name,
                {"stream": "dedupe_within", "operator": last["stateOperators"][0]["operatorName"]},
            )
            is None
        )
    finally:
        monitor.stop()


def test_a_stream_stream_join_exports_both_sources_and_its_state(spark, lake):
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2, policy=FAST).start()
    try:
        left = rate(spark, 10).select(F.col("value").alias("left_id"), F.col("timestamp").alias("left_time"))
        right = rate(spark, 10).select(F.col("value").alias("right_id"), F.col("timestamp").alias("right_time"))
        joined = left.withWatermark("left_time", "1 second").join(
            right.withWatermark("right_time", "1 second"),
            F.expr(
                "left_id = right_id AND right_time BETWEEN left_time - interval 5 seconds "
                "AND left_time + interval 5 seconds"
            ),
        )
        query = joined.writeStream.format("noop").queryName("rate_join").trigger(processingTime="0.5 seconds").start()
        try:
            wait_until(lambda: has_state_and_watermark(query), 90, "join state under a watermark")
        finally:
            last = stop_and_settle(monitor, query)
        assert_scrape_matches(monitor, query, last, ["rate", "rate"])
    finally:
        monitor.stop()


def test_a_file_source_with_more_files_waiting_than_it_takes_per_trigger(spark, lake, tmp_path):
    """Five one-row files, one taken per trigger, the query held in batch 1: after batch 0, four
    files are not processed yet, and the scrape says so for source 0 of kind `file`."""
    landing = tmp_path / "landing"
    landing.mkdir()
    for i in range(5):
        (landing / f"part-{i}.json").write_text(json.dumps({"x": i}) + "\n")
    sizes = {path.name: path.stat().st_size for path in landing.iterdir()}
    assert len(set(sizes.values())) == 1  # whichever file Spark takes first, the four left weigh the same
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2, policy=FAST).start()
    gate = threading.Event()

    try:
        query = held_file_stream(spark, landing, "files_waiting", lake.checkpoint("files_waiting"), gate)
        try:
            value = monitor.registry.get_sample_value
            source = {"stream": "files_waiting", "source": "0", "kind": "file"}
            wait_until(lambda: query.lastProgress, 60, "batch 0")
            read = sum(p["numInputRows"] for p in query.recentProgress)  # one row a file
            assert read == 1  # batch 1 is held before it reports
            wait_until(lambda: value(catalog.BACKLOG_FILES.name, source) == 5 - read, what="4 files waiting")
            assert value(catalog.BACKLOG_BYTES.name, source) == sum(sizes.values()) - sizes["part-0.json"]
            description = description_label(query.lastProgress["sources"][0]["description"])
            assert value(catalog.SOURCE_INFO.name + "_info", source | {"description": description}) == 1
            scrape = generate_latest(monitor.registry).decode()
            assert f'{catalog.STATE_ROWS.name}{{stream="files_waiting"' not in scrape  # stateless: no state series
        finally:
            gate.set()
            query.stop()
    finally:
        monitor.stop()
