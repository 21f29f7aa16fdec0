"""The progress log is a real Delta table: batched commits, key columns, retention."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest
from deltalake import DeltaTable
from monitor_fixtures import fixture_text

from streamops.core.delta_format.backlog import Backlog
from streamops.monitor.exceptions import ProgressLogNotFoundError
from streamops.monitor.metric_catalog import BATCH_PHASES
from streamops.monitor.progress_event import parse_event
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import COLUMNS, PHASE_COLUMNS, row_of
from streamops.monitor.source_backlog import BacklogReading

RECORDED_DAY_NOON = datetime(2026, 11, 22, 12, tzinfo=timezone.utc).timestamp()  # the fixtures' day


def events():
    """The recorded events, all of one day (the terminated event takes its time when received)."""
    return {
        "started": parse_event("started", fixture_text("started.json"), 1.0),
        "progress": parse_event("progress", fixture_text("progress_delta.json"), 1.0),
        "idle": parse_event("idle", fixture_text("idle.json"), 1.0),
        "terminated": parse_event("terminated", fixture_text("terminated_exception.json"), RECORDED_DAY_NOON),
    }


def test_every_event_kind_is_one_row_of_one_commit(lake):
    log = ProgressLog(lake.query_progress)
    reading = BacklogReading(Backlog(2, 5, 1234, 9.5), True, time.time())
    recorded = events()
    rows = [row_of(e, "s", time.time(), reading if kind == "progress" else None, 1.7e9) for kind, e in recorded.items()]
    assert log.append(rows) == 4
    assert DeltaTable(str(lake.query_progress)).version() == 0
    table = {r["event"]: r for r in log.read().to_pylist()}
    assert set(table) == set(recorded) and list(log.read().schema.names) == list(COLUMNS)

    progress, raw = table["progress"], json.loads(fixture_text("progress_delta.json"))["progress"]
    assert progress["batch_id"] == raw["batchId"] and progress["num_input_rows"] == raw["numInputRows"]
    for phase in BATCH_PHASES:
        assert progress[PHASE_COLUMNS[phase]] == raw["durationMs"][phase]
    (source,) = progress["sources"]
    assert json.loads(source["end_offset"]) == raw["sources"][0]["endOffset"]
    assert json.loads(source["latest_offset"]) == raw["sources"][0]["latestOffset"]
    assert source["start_offset"] is None or json.loads(source["start_offset"]) == raw["sources"][0]["startOffset"]
    assert (progress["backlog_files"], progress["backlog_bytes"], progress["backlog_pending"]) == (
        5,
        1234,
        True,
    )
    assert progress["event_time_max"].timestamp() == 1.7e9
    assert json.loads(progress["json"]) == raw

    terminated = table["terminated"]
    assert "ValueError: boom at batch 1" in terminated["exception"]
    assert table["started"]["name"] == "rate_stream"


def test_reads_are_pruned_by_event_and_day(lake):
    log = ProgressLog(lake.query_progress)
    log.append([row_of(e, "s", time.time()) for e in events().values()])
    assert {r["event"] for r in log.read(columns=["event"], events=["started", "terminated"]).to_pylist()} == {
        "started",
        "terminated",
    }
    (day,) = log.days()
    assert log.read(columns=["event"], days=[day - timedelta(days=1)]).num_rows == 0


def test_retention_drops_old_days_and_compaction_merges_batched_appends(lake):
    log = ProgressLog(lake.query_progress, retention_days=7)
    progress = events()["progress"]
    old = row_of(progress, "s", time.time())
    old_time = datetime.fromtimestamp(RECORDED_DAY_NOON, timezone.utc) - timedelta(days=8)
    old.update(timestamp=old_time, event_date=old_time.date())
    log.append([old])
    for _ in range(3):
        log.append([row_of(progress, "s", time.time())])
    files_before = len(DeltaTable(str(lake.query_progress)).file_uris())
    result = log.maintain(RECORDED_DAY_NOON)
    assert result.rows_deleted == 1
    assert old_time.date() not in log.days()
    assert log.read(columns=["event"]).num_rows == 3
    assert result.files_compacted == 3
    assert len(DeltaTable(str(lake.query_progress)).file_uris()) == files_before - 1 - 2


def test_a_missing_log_says_how_to_get_one(lake):
    with pytest.raises(ProgressLogNotFoundError, match="attach the monitor"):
        ProgressLog(lake.query_progress).read()


def test_retention_must_be_at_least_a_day(lake):
    with pytest.raises(ValueError, match="retention_days"):
        ProgressLog(lake.query_progress, retention_days=0)
