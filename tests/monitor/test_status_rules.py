"""Every status rule, on progress recorded from real queries (tests/monitor/fixtures) and on
sequences built from it. No JVM: the rules are pure functions of a window and `now`."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from monitor_fixtures import fixture_text, recorded_sequence, replay

from streamops.core.delta_format.backlog import Backlog
from streamops.monitor.fleet import Fleet, StreamView
from streamops.monitor.metric_catalog import STREAM_STATUSES
from streamops.monitor.progress_event import QueryProgress, QueryStarted, QueryTerminated
from streamops.monitor.status_rules import (
    DEFAULT_POLICY,
    ProgressSample,
    StatusPolicy,
    StreamObservation,
    evaluate,
    typical_interval,
)
from streamops.monitor.status_severity import SEVERITY

SHORT = StatusPolicy(window=5, min_batches=3)


def only_stream(fleet: Fleet) -> StreamView:
    (view,) = fleet.snapshot().streams
    return view


def last_progress_end(name: str) -> float:
    events = [e for e, _ in recorded_sequence(name) if isinstance(e, QueryProgress)]
    return events[-1].timestamp + events[-1].batch_duration_ms / 1000.0


def test_recorded_delta_stream_whose_backlog_grows_is_lagging():
    view = only_stream(replay(Fleet(), "sequence_delta_lagging.jsonl", skip_terminated=True))
    files = [s.backlog.files for s in view.observation.samples]
    assert files == sorted(files) and files[-1] > files[0] > 0
    verdict = evaluate(view.observation, last_progress_end("sequence_delta_lagging.jsonl") + 0.1)
    assert verdict.status == "lagging"
    assert verdict.reason.startswith(f"backlog grew from {files[0]} to {files[-1]} files")


def test_a_backlog_that_reached_zero_in_the_window_is_not_lagging():
    samples = tuple(
        ProgressSample(100.0 + i, i, 10, 50.0, 0.2, Backlog(1, files, files * 100, 1.0), files > 0)
        for i, files in enumerate([3, 0, 2, 4, 6])
    )
    observation = StreamObservation(
        active=True, samples=samples, backlog=samples[-1].backlog, pending=True, pending_since=104.5
    )
    assert evaluate(observation, 105.0, SHORT).status == "ok"
    grown = replace(observation, samples=samples[2:])
    assert evaluate(grown, 105.0, SHORT).status == "lagging"


def test_recorded_stream_whose_batches_keep_slowing_is_lagging_over_a_full_window():
    name = "sequence_rate_slowing.jsonl"
    progress = [e for e, _ in recorded_sequence(name) if isinstance(e, QueryProgress)]
    # Spark's inputRowsPerSecond is inflated by no-data triggers; the rules must not use it.
    assert progress[1].input_rows_per_second > 10 * progress[1].processed_rows_per_second

    early = only_stream(replay(Fleet(SHORT), name, until_batch=3))
    assert evaluate(early.observation, progress[3].timestamp + 2, SHORT).status == "ok"

    full = only_stream(replay(Fleet(SHORT), name, skip_terminated=True))
    verdict = evaluate(full.observation, last_progress_end(name) + 0.1, SHORT)
    assert verdict.status == "lagging"
    assert verdict.reason.startswith("processed rate below input rate in each of the last 4 batches")

    # Over the default 10-batch window the fast early batches are still in view: not lagging.
    wide = only_stream(replay(Fleet(), name, skip_terminated=True))
    assert evaluate(wide.observation, last_progress_end(name) + 0.1).status == "ok"


def _delta_observation(pending_since: float | None) -> tuple[StreamObservation, float]:
    view = only_stream(replay(Fleet(), "sequence_delta_lagging.jsonl", skip_terminated=True))
    last = view.observation.samples[-1]
    # batches kept the backlog flat (not growing), then stopped completing
    flat = tuple(replace(s, backlog=last.backlog, files=last.backlog.files) for s in view.observation.samples)
    observation = replace(view.observation, samples=flat, pending=True, pending_since=pending_since)
    return observation, last.ended_at


def test_backlog_waiting_longer_than_several_batch_intervals_is_stalled():
    observation, last_end = _delta_observation(pending_since=None)
    interval = typical_interval(observation.samples)
    stall_after = max(DEFAULT_POLICY.stall_intervals * interval, DEFAULT_POLICY.min_stall_seconds)
    assert evaluate(observation, last_end + 0.5 * stall_after).status == "ok"
    verdict = evaluate(observation, last_end + 2 * stall_after)
    assert verdict.status == "stalled"
    assert verdict.reason.startswith(f"{observation.backlog.files} files (")
    assert "with no batch reading it" in verdict.reason


def test_new_data_after_a_quiet_hour_is_not_stalled_before_it_has_waited():
    observation, last_end = _delta_observation(pending_since=None)
    now = last_end + 3600
    assert evaluate(replace(observation, pending_since=now - 1.0), now).status == "ok"
    assert evaluate(replace(observation, pending_since=now - 60.0), now).status == "stalled"


def test_a_first_batch_that_never_completes_is_stalled_after_the_default_interval():
    waiting = StreamObservation(active=True, started_at=1000.0, pending=True, pending_since=1000.0)
    assert evaluate(waiting, 1020.0).status == "ok"
    assert evaluate(waiting, 1000.0 + 3 * DEFAULT_POLICY.default_interval_seconds + 1).status == "stalled"


def test_recorded_drained_file_stream_is_idle():
    name = "sequence_file_drained.jsonl"
    view = only_stream(replay(Fleet(), name, skip_terminated=True))
    assert view.observation.last_idle_at is not None
    verdict = evaluate(view.observation, view.observation.last_idle_at + 0.1)
    assert verdict.status == "idle" and verdict.reason.startswith("no new data since")


def test_data_waiting_keeps_an_idle_looking_stream_out_of_idle():
    view = only_stream(replay(Fleet(), "sequence_file_drained.jsonl", skip_terminated=True))
    waiting = replace(view.observation, pending=True, pending_since=view.observation.last_idle_at)
    assert evaluate(waiting, view.observation.last_idle_at + 0.1).status == "ok"


def test_terminated_with_an_exception_is_failed_with_its_message():
    failed = json.loads(fixture_text("terminated_exception.json"))
    started = json.loads(fixture_text("started.json")) | {
        "id": failed["id"],
        "runId": failed["runId"],
        "name": "failing",
    }
    fleet = Fleet()
    fleet.apply(QueryStarted.from_json(started))
    fleet.apply(QueryTerminated.from_json(failed, received_at=2e9))
    view = only_stream(fleet)
    verdict = evaluate(view.observation, 2e9 + 5)
    assert verdict.status == "failed"
    assert verdict.reason == "ValueError: boom at batch 1"
    assert view.failures == 1


def test_terminated_without_an_exception_is_stopped():
    fleet = Fleet()
    fleet.apply(QueryStarted.from_json(fixture_text("started.json")))
    fleet.apply(QueryTerminated.from_json(fixture_text("terminated_stopped.json"), received_at=2e9))
    verdict = evaluate(only_stream(fleet).observation, 2e9 + 5)
    assert verdict.status == "stopped" and "without error" in verdict.reason


def test_offline_a_silent_stream_is_stopped_and_a_recent_one_is_not():
    view = only_stream(replay(Fleet(), "sequence_file_drained.jsonl", skip_terminated=True))
    offline = replace(view.observation, active=None)
    last = offline.last_event_at
    assert evaluate(offline, last + 10, offline=True).status == "idle"
    silent = last + DEFAULT_POLICY.silent_after_seconds + DEFAULT_POLICY.log_delay_seconds + 1
    verdict = evaluate(offline, silent, offline=True)
    assert verdict.status == "stopped" and "not running" in verdict.reason
    # live, the listener says whether the query runs: silence alone never means stopped
    assert evaluate(view.observation, silent).status == "idle"


def test_offline_stall_allows_for_the_progress_log_delay():
    observation, last_end = _delta_observation(pending_since=None)
    interval = typical_interval(observation.samples)
    stall_after = max(DEFAULT_POLICY.stall_intervals * interval, DEFAULT_POLICY.min_stall_seconds)
    offline = replace(observation, active=None)
    assert evaluate(offline, last_end + stall_after + 1, offline=True).status == "ok"
    assert (
        evaluate(offline, last_end + stall_after + DEFAULT_POLICY.log_delay_seconds + 1, offline=True).status
        == "stalled"
    )


def test_typical_interval_is_the_trigger_interval_or_the_longest_batch():
    fixed_trigger = tuple(ProgressSample(100.0 + 10 * i, i, 5, 50.0, 0.5) for i in range(4))
    assert typical_interval(fixed_trigger) == 10.0
    back_to_back = tuple(ProgressSample(100.0 + 2 * i, i, 5, 50.0, 2.0 + i * 0.1) for i in range(4))
    assert typical_interval(back_to_back) == pytest.approx(2.3)
    assert typical_interval(()) == DEFAULT_POLICY.default_interval_seconds


def test_a_restart_clears_the_window_but_not_the_counters():
    fleet = replay(Fleet(), "sequence_delta_lagging.jsonl")
    before = only_stream(fleet)
    started = json.loads(fixture_text("started.json")) | {
        "id": before.query_id,
        "name": before.stream,
        "runId": "00000000-0000-0000-0000-000000000001",
    }
    fleet.apply(QueryStarted.from_json(started))
    after = only_stream(fleet)
    assert after.observation.samples == () and after.observation.active
    assert after.input_rows_total == before.input_rows_total > 0
    assert after.run_id != before.run_id


def test_policy_rejects_a_window_smaller_than_its_minimum():
    with pytest.raises(ValueError, match="min_batches"):
        StatusPolicy(window=3, min_batches=5)


def test_the_fleet_table_orders_every_status():
    assert sorted(SEVERITY) == sorted(STREAM_STATUSES)
