"""`_system/expectations` kept to the monitor's retention and compacted, by the monitor's worker."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from streamops.monitor.event_queue import EventQueue
from streamops.monitor.expectation_counts_upkeep import ExpectationCounts
from streamops.monitor.fleet import Fleet
from streamops.monitor.progress_worker import ProgressWorker
from streamops.monitor.source_backlog import SourceBacklog

NOW = datetime(2026, 11, 28, 12, tzinfo=timezone.utc)


def append_counts(lake, committed_at: datetime, batch_id: int) -> None:
    """One batch's rows as the pipeline appends them (the columns the retention reads and a few more)."""
    rows = pa.table(
        {
            "stream": ["silver_g0001"] * 2,
            "batch_id": [batch_id] * 2,
            "table": ["purchase"] * 2,
            "expectation": ["price_nonneg", "has_id"],
            "passed": [10, 12],
            "failed": [2, 0],
            "committed_at": pa.array([committed_at] * 2, pa.timestamp("us", tz="UTC")),
        }
    )
    write_deltalake(str(lake.expectations), rows, mode="append")


def test_rows_older_than_the_retention_go_and_the_batches_files_are_compacted(lake):
    append_counts(lake, NOW - timedelta(days=31), 0)
    for batch in range(1, 4):
        append_counts(lake, NOW - timedelta(minutes=batch), batch)
    result = ExpectationCounts(lake.expectations, retention_days=30).maintain(NOW.timestamp())
    table = DeltaTable(str(lake.expectations))
    assert result.rows_deleted == 2
    assert sorted(set(table.to_pyarrow_table().column("batch_id").to_pylist())) == [1, 2, 3]
    assert result.files_compacted == 3
    assert len(table.file_uris()) == 1


def test_a_pass_with_nothing_old_commits_no_delete(lake):
    for batch in range(3):
        append_counts(lake, NOW - timedelta(minutes=batch), batch)
    counts = ExpectationCounts(lake.expectations, retention_days=30)
    counts.maintain(NOW.timestamp())
    version = DeltaTable(str(lake.expectations)).version()
    result = counts.maintain(NOW.timestamp())
    assert (result.rows_deleted, result.files_compacted) == (0, 0)
    assert DeltaTable(str(lake.expectations)).version() == version
    operations = [entry["operation"] for entry in DeltaTable(str(lake.expectations)).history()]
    assert "DELETE" not in operations


def test_a_lake_without_rules_has_nothing_to_keep(lake):
    result = ExpectationCounts(lake.expectations).maintain(NOW.timestamp())
    assert (result.rows_deleted, result.files_compacted) == (0, 0)


def test_the_monitors_worker_keeps_the_counts_on_its_maintenance_clock(lake):
    append_counts(lake, datetime.now(timezone.utc) - timedelta(days=40), 0)
    append_counts(lake, datetime.now(timezone.utc), 1)
    worker = ProgressWorker(
        EventQueue(10),
        Fleet(),
        SourceBacklog(lake),
        None,
        flush_interval_s=0.1,
        maintenance_interval_s=0.0,
        also_maintained=(ExpectationCounts(lake.expectations, retention_days=30),),
    )
    worker.start()
    try:
        assert worker.flush(30)
    finally:
        worker.stop(30)
    assert DeltaTable(str(lake.expectations)).to_pyarrow_table().column("batch_id").to_pylist() == [1, 1]
