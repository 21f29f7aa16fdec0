"""Backlog of Delta sources measured from real Delta tables on disk (no Spark)."""

from __future__ import annotations

import json

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from monitor_fixtures import fixture_text

from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import DeltaSourceOffset
from streamops.monitor.progress_event import QueryProgress, SourceProgress
from streamops.monitor.source_backlog import SourceBacklog


def append(table, rows: int) -> None:
    write_deltalake(str(table), pa.table({"id": list(range(rows))}), mode="append")


def delta_source(end: DeltaSourceOffset, latest: DeltaSourceOffset | None = None) -> SourceProgress:
    return SourceProgress(
        description="PythonMicroBatchStream",
        start_offset=None,
        end_offset=json.dumps(end.to_json_dict()),
        latest_offset=json.dumps(latest.to_json_dict()) if latest else None,
        num_input_rows=0,
        input_rows_per_second=0.0,
        processed_rows_per_second=0.0,
    )


def test_a_lake_table_is_found_by_reservoir_id_and_measured(lake):
    table = lake.bronze_events
    for rows in (10, 20, 30):
        append(table, rows)
    table_id = DeltaTable(str(table)).metadata().id
    log = DeltaLog(table)
    pending_bytes = sum(add.size for version in (1, 2) for add in log.commit(version).data_adds)
    processed = DeltaSourceOffset(0, 0, False, table_id)
    reading = SourceBacklog(lake).measure("silver_core", [delta_source(processed)])
    assert reading.pending is True
    assert (reading.backlog.versions, reading.backlog.files) == (2, 2)
    assert reading.backlog.bytes == pending_bytes > 0
    assert reading.backlog.seconds >= 0
    assert reading.pending_since == reading.measured_at - reading.backlog.seconds

    caught_up = DeltaSourceOffset(3, -1, False, table_id)
    reading = SourceBacklog(lake).measure("silver_core", [delta_source(caught_up)])
    assert reading.pending is False and reading.backlog.is_empty and reading.pending_since is None


def test_the_shared_log_is_read_again_for_a_batch_that_ended_after_it_was_last_read(lake):
    """Streams share one read of a source's log for `min_refresh_s`, but do not pair a batch with
    a log read before the batch ended (unless read in the last `min_catch_up_s`): that measured a
    backlog falling between fast batches while it grew (a sawtooth the LAGGING rule never saw
    growing)."""
    table = lake.bronze_events
    append(table, 10)
    table_id = DeltaTable(str(table)).metadata().id
    now = [100.0]
    backlog = SourceBacklog(lake, clock=lambda: now[0], min_refresh_s=60.0)
    processed = delta_source(DeltaSourceOffset(0, 0, False, table_id))
    assert backlog.measure("a", [processed], batch_ended_at=99.0).backlog.files == 0
    append(table, 10)
    now[0] = 101.0
    shared = backlog.measure("b", [processed], batch_ended_at=99.5)
    assert shared.backlog.files == 0  # read at 100, after that batch ended: shared, not re-read
    now[0] = 102.0
    assert backlog.measure("a", [processed], batch_ended_at=101.5).backlog.files == 1
    append(table, 10)
    now[0] = 102.05  # a batch ended after that read, but reads are 0.1 s apart at the closest
    assert backlog.measure("b", [processed], batch_ended_at=102.01).backlog.files == 1
    now[0] = 103.0
    assert backlog.measure("b", [processed], batch_ended_at=102.01).backlog.files == 2
    append(table, 10)
    now[0] = 104.0
    assert backlog.measure("b", [processed]).backlog.files == 2  # no batch end: the minute applies
    now[0] = 163.0
    assert backlog.measure("b", [processed]).backlog.files == 3


def test_a_table_outside_the_lake_is_measured_once_registered(lake, tmp_path):
    table = tmp_path / "elsewhere"
    append(table, 5)
    append(table, 5)
    table_id = DeltaTable(str(table)).metadata().id
    source = delta_source(DeltaSourceOffset(0, 0, False, table_id), DeltaSourceOffset(1, 0, False, table_id))
    backlog = SourceBacklog(lake)
    unregistered = backlog.measure("my_stream", [source])
    assert unregistered.backlog is None and unregistered.pending is True  # from the latest offset
    backlog.register_table("my_stream", table)
    registered = backlog.measure("my_stream", [source])
    assert (registered.backlog.versions, registered.backlog.files) == (1, 1)


def test_without_the_table_a_caught_up_delta_offset_is_not_pending(lake):
    end = DeltaSourceOffset(8, -1, False, "gone")
    latest = DeltaSourceOffset(7, 3, False, "gone")
    assert SourceBacklog(lake).measure("s", [delta_source(end, latest)]).pending is False


def test_other_sources_can_only_say_whether_data_waits(lake):
    rate = QueryProgress.from_json(fixture_text("progress_rate.json"))
    reading = SourceBacklog(lake).measure(rate.stream, rate.sources)
    assert reading.backlog is None and reading.pending is False
    kafka = SourceProgress(
        "KafkaV2[Subscribe[events]]", None, '{"events":{"0":100}}', '{"events":{"0":250}}', 0, 0.0, 0.0
    )
    assert SourceBacklog(lake).measure("k", [kafka]).pending is True
    no_latest = SourceProgress("custom", None, "5", None, 0, 0.0, 0.0)
    assert SourceBacklog(lake).measure("c", [no_latest]).pending is None


def test_a_stream_before_its_first_batch_has_the_snapshot_or_nothing_waiting(lake):
    table = lake.bronze_events
    append(table, 10)
    append(table, 20)
    table_id = DeltaTable(str(table)).metadata().id
    from_snapshot = DeltaSourceOffset.initial(table_id, from_snapshot=True)
    reading = SourceBacklog(lake).measure("new_stream", [delta_source(from_snapshot)])
    assert (reading.backlog.versions, reading.backlog.files) == (1, 2) and reading.pending is True
    from_latest = DeltaSourceOffset.initial(table_id, from_snapshot=False)
    reading = SourceBacklog(lake).measure("new_stream", [delta_source(from_latest)])
    assert reading.backlog.is_empty and reading.pending is False
