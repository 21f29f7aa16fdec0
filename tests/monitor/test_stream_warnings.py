"""The warning rules (unbounded state, stalled watermark, late rows dropped) on sequences recorded
from real stateful queries (tests/monitor/fixtures/record_stateful_fixtures.py), live and
offline from the progress log. No JVM."""

from __future__ import annotations

from dataclasses import replace

from monitor_fixtures import recorded_sequence, replay

from streamops.monitor.fleet import Fleet, StreamView
from streamops.monitor.fleet_status import fleet_status
from streamops.monitor.progress_event import QueryProgress, QueryTerminated
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import row_of
from streamops.monitor.status_rules import (
    DEFAULT_POLICY,
    StatusPolicy,
    evaluate,
    late_rows_dropped,
    state_unbounded,
    typical_interval,
    watermark_stalled,
)

WINDOW = "sequence_window_rocksdb.jsonl"
UNBOUNDED = "sequence_state_unbounded.jsonl"
STALLED = "sequence_watermark_stalled.jsonl"
LATE = "sequence_late_rows.jsonl"


def view_of(name: str, until_batch: int | None = None, policy: StatusPolicy = DEFAULT_POLICY) -> StreamView:
    (view,) = replay(Fleet(policy), name, until_batch=until_batch, skip_terminated=True).snapshot().streams
    return view


def progress_of(name: str) -> list[QueryProgress]:
    return [e for e, _ in recorded_sequence(name) if isinstance(e, QueryProgress)]


def codes(view: StreamView) -> list[str]:
    now = view.observation.samples[-1].ended_at + 0.1
    return [w.code for w in evaluate(view.observation, now).warnings]


def test_a_windowed_aggregation_that_evicts_raises_no_warning():
    events = progress_of(WINDOW)
    assert sum(op.num_rows_removed for e in events for op in e.state_operators) > 0
    assert codes(view_of(WINDOW)) == []


def test_deduplication_without_a_watermark_is_unbounded_state():
    events = progress_of(UNBOUNDED)
    rows = [sum(op.num_rows_total for op in e.state_operators) for e in events]
    assert rows == sorted(rows) and not any(op.num_rows_removed for e in events for op in e.state_operators)
    view = view_of(UNBOUNDED)
    assert codes(view) == ["state_unbounded"]
    warning = state_unbounded(view.observation.samples)
    assert warning.message.startswith(f"state grew from {rows[-len(view.observation.samples)]} to {rows[-1]} rows")
    # two batches are no window yet; a plateau is not growth
    assert state_unbounded(view.observation.samples[:2]) is None
    flat = tuple(replace(s, state_rows=rows[-1]) for s in view.observation.samples)
    assert state_unbounded(flat) is None


def test_a_join_whose_other_side_went_quiet_has_a_stalled_watermark():
    view = view_of(STALLED)
    samples = view.observation.samples
    assert {s.watermark for s in samples[-3:]} == {samples[-1].watermark} and samples[-1].watermark > 0
    assert codes(view) == ["state_unbounded", "watermark_stalled"]
    warning = watermark_stalled(samples)
    assert "while 10 batches read rows" in warning.message
    # the same batches 0.1 s apart (sub-second triggers, event times in whole seconds): an
    # unchanged watermark for less than a stall (min_stall_seconds here) is not yet a warning
    fast = tuple(replace(s, timestamp=1000 + 0.1 * i, duration_seconds=0.05) for i, s in enumerate(samples))
    stall_after = max(DEFAULT_POLICY.stall_intervals * typical_interval(fast), DEFAULT_POLICY.min_stall_seconds)
    assert fast[-1].ended_at - fast[0].timestamp < stall_after
    assert watermark_stalled(fast) is None


def test_a_query_without_a_watermark_never_has_a_stalled_one():
    samples = view_of(UNBOUNDED).observation.samples
    assert all(s.watermark is None for s in samples)
    assert watermark_stalled(samples) is None


def test_rows_older_than_the_watermark_are_late_rows_dropped():
    events = progress_of(LATE)
    dropped = sum(op.num_rows_dropped_by_watermark for e in events for op in e.state_operators)
    assert dropped > 0
    view = view_of(LATE)
    assert codes(view) == ["late_rows_dropped"]
    assert late_rows_dropped(view.observation.samples).message.startswith(f"{dropped} late rows dropped")
    before = view_of(
        LATE,
        until_batch=max(
            e.batch_id for e in events if not any(op.num_rows_dropped_by_watermark for op in e.state_operators)
        ),
    )
    assert codes(before) == []


def test_a_stopped_or_failed_stream_carries_no_warning():
    fleet = replay(Fleet(), UNBOUNDED)  # the recording ends with its termination
    (view,) = fleet.snapshot().streams
    assert any(isinstance(e, QueryTerminated) for e, _ in recorded_sequence(UNBOUNDED))
    verdict = evaluate(view.observation, view.observation.samples[-1].ended_at + 1)
    assert verdict.status == "stopped" and verdict.warnings == ()


def test_streamops_status_raises_the_same_warnings_from_the_progress_log(lake):
    log = ProgressLog(lake.query_progress)
    expected = {}
    for name in (WINDOW, UNBOUNDED, STALLED, LATE):
        rows = []
        fleet = Fleet()
        for event, reading in recorded_sequence(name):
            if isinstance(event, QueryTerminated):
                continue
            stream = fleet.apply(event, reading) or event.query_id
            rows.append(row_of(event, stream, event.timestamp, reading, fleet.max_event_time(stream)))
        log.append(rows)
        (view,) = fleet.snapshot().streams
        expected[view.stream] = (codes(view), view.observation.samples[-1].ended_at)
    now = max(end for _, end in expected.values()) + 0.1
    offline = {row.stream: [w.code for w in row.warnings] for row in fleet_status(lake, now=now)}
    assert offline == {stream: found for stream, (found, _) in expected.items()}
    assert offline["join_stalled_watermark"] == ["state_unbounded", "watermark_stalled"]
