"""`streamops status` on a lake written by real queries, read with the pipeline stopped."""

from __future__ import annotations

import json
import threading
import time

import pytest
from monitor_fixtures import append, delta_stream, rows_read
from waiting import wait_until

from streamops.cli import main
from streamops.monitor import metric_catalog as catalog
from streamops.monitor.fleet_status import fleet_status
from streamops.monitor.stream_monitor import StreamMonitor


@pytest.fixture(scope="module")
def stopped_lake(spark, tmp_path_factory):
    """One stream stopped cleanly, one failed, one blocked with data waiting and one idle; the
    monitor is stopped while the last two still run, so the log never saw them terminate."""
    from streamops.core.lake_layout import LakeLayout

    lake = LakeLayout.at(tmp_path_factory.mktemp("status") / "lake")
    append(lake.bronze_events, 0)
    append(lake.bronze_events, 10)
    blocked_table = lake.silver("blocked_cli")
    append(blocked_table, 0)
    append(blocked_table, 10)
    quiet_table = lake.silver("quiet_cli")
    append(quiet_table, 0)
    gate = threading.Event()

    def blocked(df, batch_id):
        df.count()
        if batch_id >= 2:
            gate.wait(60)

    def boom(df, batch_id):
        df.count()
        if batch_id >= 1:
            raise ValueError(f"boom in batch {batch_id}")

    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2).start()
    running = []
    try:
        done = delta_stream(spark, lake.bronze_events).writeStream.format("memory").queryName("done_stream").start()
        wait_until(lambda: rows_read(done) == 20, what="done_stream read")
        done.stop()

        failing = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 20)
            .load()
            .writeStream.foreachBatch(boom)
            .queryName("failing_cli")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        with pytest.raises(Exception, match="boom"):
            failing.awaitTermination(60)

        monitor.record_stream_event_time("quiet_cli", time.time() - 30)
        spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "200")
        quiet = (
            delta_stream(spark, quiet_table)
            .writeStream.format("memory")
            .queryName("quiet_cli")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
        running.append(quiet)
        blocked_query = (
            delta_stream(spark, blocked_table)
            .writeStream.foreachBatch(blocked)
            .queryName("blocked_cli")
            .trigger(processingTime="0.1 seconds")
            .start()
        )
        running.append(blocked_query)
        wait_until(lambda: rows_read(blocked_query) == 20, what="blocked_cli's first batches")
        append(blocked_table, 100)
        append(blocked_table, 200)
        value = monitor.registry.get_sample_value
        wait_until(
            lambda: value(catalog.BACKLOG_FILES.name, {"stream": "blocked_cli", "source": "0", "kind": "delta"}) == 2,
            what="backlog seen",
        )
        wait_until(lambda: monitor.stream_status("quiet_cli").status == "idle", what="quiet_cli idle")
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
        monitor.stop()  # the "pipeline" goes away without recording the running queries' end
        gate.set()
        for query in running:
            query.stop()
    return lake


def test_status_json_lists_every_stream_worst_first(stopped_lake, capsys):
    assert main(["status", "--lake", str(stopped_lake.root), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    streams = {s["stream"]: s for s in report["streams"]}
    assert list(streams) == ["failing_cli", "done_stream", "blocked_cli", "quiet_cli"]
    assert report["counts"] == {"failed": 1, "idle": 1, "ok": 1, "stopped": 1}

    failed = streams["failing_cli"]
    assert failed["status"] == "failed" and failed["reason"] == "ValueError: boom in batch 1"

    done = streams["done_stream"]
    assert done["status"] == "stopped" and done["backlog"] == {
        "versions": 0,
        "files": 0,
        "bytes": 0,
        "seconds": 0.0,
    }
    assert done["last_batch_id"] is not None and done["last_batch_at"].endswith("Z")

    blocked = streams["blocked_cli"]
    assert blocked["status"] == "ok"  # waiting, but not yet for several intervals + the log delay
    assert blocked["pending"] is True and blocked["backlog"]["files"] == 2 and blocked["backlog"]["versions"] == 2

    assert streams["quiet_cli"]["status"] == "idle"
    assert 30 <= streams["quiet_cli"]["freshness_seconds"] < 600
    assert done["freshness_seconds"] is None
    assert set(done) == {
        "stream",
        "status",
        "reason",
        "query_id",
        "run_id",
        "delta_connector",
        "last_batch_id",
        "last_batch_at",
        "last_event_at",
        "backlog",
        "pending",
        "freshness_seconds",
        "input_rows_per_second",
        "processed_rows_per_second",
        "warnings",
        "sources",
        "state",
        "watermark_lag_seconds",
    }
    assert done["warnings"] == [] and done["state"] is None and done["watermark_lag_seconds"] is None
    assert done["delta_connector"] is None, "a user's application that does not say"
    (source,) = blocked["sources"]
    assert (source["source"], source["kind"], source["measured"]) == (0, "delta", True)
    assert (source["files"], source["versions"], source["offsets"]) == (2, 2, None)


def test_with_time_passing_waiting_data_is_stalled_and_silence_is_stopped(stopped_lake):
    later = {r.stream: r for r in fleet_status(stopped_lake, now=time.time() + 120)}
    assert later["blocked_cli"].status == "stalled"
    assert later["blocked_cli"].reason.startswith("2 files (")
    assert later["quiet_cli"].status == "idle"
    much_later = {r.stream: r for r in fleet_status(stopped_lake, now=time.time() + 3600)}
    assert much_later["quiet_cli"].status == "stopped" and "not running" in much_later["quiet_cli"].reason
    assert much_later["blocked_cli"].status == "stalled"
    assert much_later["failing_cli"].status == "failed"


def test_status_table_for_humans(stopped_lake, capsys):
    assert main(["status", "--lake", str(stopped_lake.root)]) == 0
    out = capsys.readouterr().out
    header, rule, *rows = out.splitlines()
    assert header.split() == [
        "STREAM",
        "STATUS",
        "LAST",
        "BATCH",
        "BACKLOG",
        "FRESHNESS",
        "ROWS/S",
        "IN/OUT",
        "WARNINGS",
        "REASON",
    ]
    assert rows[0].startswith("failing_cli") and "FAILED" in rows[0] and "ValueError: boom in batch 1" in rows[0]
    assert any(r.startswith("blocked_cli") and "2 files" in r for r in rows)
    assert out.rstrip().endswith("4 streams: 1 failed, 1 stopped, 1 ok, 1 idle")


def test_status_on_a_missing_lake_fails_with_one_line(tmp_path, capsys):
    assert main(["status", "--lake", str(tmp_path / "no_such_lake")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no lake at" in err and "no_such_lake" in err


def test_status_without_a_progress_log_fails_with_one_line(tmp_path, capsys):
    (tmp_path / "nothing").mkdir()
    assert main(["status", "--lake", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no progress log at" in err and "streamops run" in err


def test_a_run_without_batches_keeps_the_streams_last_batch(spark, tmp_path):
    """`--until-idle` ends with a round that finds nothing: its empty run must not hide history."""
    from streamops.core.lake_layout import LakeLayout

    lake = LakeLayout.at(tmp_path / "lake")
    append(lake.bronze_events, 0)
    checkpoint = tmp_path / "ck"
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.2).start()
    try:
        for _ in range(2):
            query = (
                delta_stream(spark, lake.bronze_events)
                .writeStream.foreachBatch(lambda df, _: df.count())
                .queryName("rerun_stream")
                .option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination(60)
        wait_until(
            lambda: (
                monitor.flush()
                and any(r.stream == "rerun_stream" and r.status == "stopped" for r in fleet_status(lake))
            ),
            what="both runs in the progress log",
        )
    finally:
        monitor.stop()
    row = next(r for r in fleet_status(lake) if r.stream == "rerun_stream")
    assert (row.status, row.last_batch_id) == ("stopped", 0)
    assert row.processed_rows_per_second is not None
