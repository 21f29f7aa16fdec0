"""`streamops status` logic over a progress log written from recorded events (no Spark)."""

from __future__ import annotations

from dataclasses import replace

from monitor_fixtures import recorded_sequence

from streamops.monitor.fleet import Fleet
from streamops.monitor.fleet_status import fleet_status
from streamops.monitor.progress_event import QueryProgress
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import row_of


def write_log(lake, *names: str, skip_terminated: tuple[str, ...] = ()) -> float:
    """Log recorded runs as the monitor would; returns the time of the last event."""
    log, fleet, rows, last = ProgressLog(lake.query_progress), Fleet(), [], 0.0
    for name in names:
        for event, reading in recorded_sequence(name):
            if event.kind == "terminated" and name in skip_terminated:
                continue
            stream = fleet.apply(event, reading) or event.query_id
            rows.append(row_of(event, stream, event.timestamp, reading, None))
            end = event.timestamp + (event.batch_duration_ms / 1000 if isinstance(event, QueryProgress) else 0)
            last = max(last, end)
    log.append(rows)
    return last


def test_recorded_runs_read_back_with_their_statuses(lake):
    last = write_log(
        lake,
        "sequence_delta_lagging.jsonl",
        "sequence_file_drained.jsonl",
        "sequence_rate_slowing.jsonl",
        skip_terminated=("sequence_delta_lagging.jsonl",),
    )
    rows = {r.stream: r for r in fleet_status(lake, now=last + 1)}
    assert [r.stream for r in fleet_status(lake, now=last + 1)] == [
        "delta_stream",
        "file_stream",
        "slowing_stream",
    ]
    delta = rows["delta_stream"]
    assert delta.status == "lagging" and delta.reason.startswith("backlog grew from")
    assert delta.backlog.files == 52 and delta.pending is True  # the table is gone: as recorded
    assert delta.last_batch_id == 6
    assert rows["file_stream"].status == "stopped" and rows["slowing_stream"].status == "stopped"
    # an hour later the waiting backlog has stalled: the recorded run never terminated
    assert {r.stream: r.status for r in fleet_status(lake, now=last + 3600)}["delta_stream"] == "stalled"


def test_only_the_current_run_counts(lake):
    """After a restart (new run id), the window holds only the new run's batches."""
    name = "sequence_rate_slowing.jsonl"
    last = write_log(lake, name)
    (started, _), *_ = recorded_sequence(name)
    progress = [e for e, _ in recorded_sequence(name) if isinstance(e, QueryProgress)]
    new_run = "11111111-2222-3333-4444-555555555555"
    restarted = replace(started, run_id=new_run, timestamp=last + 1)
    rerun = replace(progress[-1], run_id=new_run, timestamp=last + 2)
    ProgressLog(lake.query_progress).append([row_of(restarted, rerun.stream, last), row_of(rerun, rerun.stream, last)])
    (row,) = fleet_status(lake, now=last + 5)
    assert row.run_id == new_run and row.last_batch_id == progress[-1].batch_id
    # one batch in the new run: no previous batch to compute an input rate from, Spark's is used
    assert row.input_rows_per_second == rerun.input_rows_per_second
