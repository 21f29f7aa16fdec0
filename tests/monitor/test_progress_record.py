"""The progress-log record is defined once: an event judged live and the same event read back
from the Delta log give the status rules the same sample."""

from __future__ import annotations

import time

import pytest
from monitor_fixtures import fixture_text, recorded_sequence

from streamops.core.delta_format.backlog import Backlog
from streamops.monitor.progress_event import QueryProgress, parse_event
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import COLUMN, COLUMNS, row_of, sample_from_row, sample_of
from streamops.monitor.source_backlog import BacklogReading
from streamops.monitor.source_lag import SourceLag

PROGRESS_FIXTURES = [
    "progress_delta.json",
    "progress_file.json",
    "progress_kafka_spark35.json",
    "progress_kafka_spark4.json",
    "progress_rate.json",
    "progress_unknown_source.json",
    "progress_window_rocksdb.json",
]
SEQUENCES = ["sequence_delta_lagging.jsonl", "sequence_kafka_lagging.jsonl", "sequence_watermark_stalled.jsonl"]


def readings() -> list[BacklogReading | None]:
    lag = SourceLag(0, "delta", "delta", True, offsets=12, files=3, bytes=900, versions=2, seconds=4.5, measured=True)
    return [None, BacklogReading(Backlog(2, 3, 900, 4.5), True, time.time(), (lag,)), BacklogReading(None, None, 1.0)]


@pytest.mark.parametrize("name", PROGRESS_FIXTURES)
@pytest.mark.parametrize("reading", readings(), ids=["no reading", "measured", "unmeasured"])
def test_an_event_logged_and_read_back_is_the_sample_judged_live(lake, name, reading):
    event = parse_event("progress", fixture_text(name), 1.0)
    log = ProgressLog(lake.query_progress)
    log.append([row_of(event, "s", time.time(), reading, 1.7e9)])
    for row in (log.read().to_pylist()[0], log.read().to_pandas().to_dict("records")[0]):
        assert sample_from_row(row) == sample_of(event, reading)


def test_a_recorded_run_reads_back_batch_for_batch(lake):
    log = ProgressLog(lake.query_progress)
    live = []
    for name in SEQUENCES:
        for event, reading in recorded_sequence(name):
            if isinstance(event, QueryProgress):
                log.append([row_of(event, name, time.time(), reading)])
                live.append(sample_of(event, reading))
    frame = log.read(columns=COLUMNS, events=["progress"]).to_pandas().sort_values(COLUMN.recorded_at, kind="stable")
    assert [sample_from_row(row) for row in frame.to_dict("records")] == live


def test_a_misspelt_column_fails_at_once():
    assert COLUMN.batch_id == "batch_id" and set(vars(COLUMN)) == set(COLUMNS)
    with pytest.raises(AttributeError, match="no column `batch`"):
        _ = COLUMN.batch
