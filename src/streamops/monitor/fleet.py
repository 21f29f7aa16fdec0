"""What the monitor knows about every stream and event type right now.

The worker thread applies listener events; the pipeline pushes table commits, event times and
quarantine counts from foreachBatch; the exporter takes a `snapshot()` at scrape time. One lock
guards it all and is held only for dictionary updates, never for I/O.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from streamops.core.delta_format.backlog import Backlog
from streamops.core.lake_layout import group_of
from streamops.monitor.batch_histogram import PhaseDistribution, PhaseHistogram
from streamops.monitor.progress_event import (
    MonitorEvent,
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
)
from streamops.monitor.progress_record import sample_of
from streamops.monitor.source_backlog import BacklogReading
from streamops.monitor.source_lag import SourceLag
from streamops.monitor.state_counters import OperatorTotals, StateCounters
from streamops.monitor.status_rules import DEFAULT_POLICY, ProgressSample, StatusPolicy, StreamObservation


@dataclass(frozen=True)
class TableCommit:
    """One commit to an event type's table, as the pipeline reports it right after writing."""

    event_type: str
    group: str
    rows: int
    commit_time: float
    schema_version: int
    max_event_time: float | None


@dataclass(frozen=True)
class CdcApply:
    """One batch's apply to one CDC table, as the pipeline reports it right after its MERGE:
    rows inserted, updated, deleted, changes that changed nothing, and the batch's lag (source
    commit of its newest change -> silver commit; None when it applied no change with a time)."""

    stream: str
    table: str
    inserted: int
    updated: int
    deleted: int
    ignored: int
    lag_seconds: float | None
    committed_at: float


@dataclass
class _StreamState:
    stream: str
    query_id: str
    run_id: str
    samples: deque[ProgressSample]
    active: bool = True
    started_at: float | None = None
    stopped_at: float | None = None
    exception: str | None = None
    failures: int = 0
    input_rows_total: int = 0
    last_progress: QueryProgress | None = None
    last_event_at: float | None = None
    last_idle_at: float | None = None
    reading: BacklogReading | None = None
    pending_since: float | None = None
    max_event_time: float | None = None
    watermark_lag: float | None = None
    event_time_lag: float | None = None
    phases: PhaseHistogram = field(default_factory=PhaseHistogram)
    state: StateCounters = field(default_factory=StateCounters)
    observed: dict[str, dict[str, float]] = field(default_factory=dict)
    """Each observation's numeric metrics from the last batch of this run that reported it."""


@dataclass(frozen=True)
class StreamView:
    """One stream at scrape time: immutable, safe to read without the lock.

    `sources` is each source's lag as last measured; `watermark_lag` and `event_time_lag` are
    from the last batch that had a watermark / read rows with event times. `observed_metrics`
    are (observation, metric, value) of the query's named observations that a gauge can hold,
    each from the last batch of the run that reported its observation."""

    stream: str
    query_id: str
    run_id: str
    group: str
    delta_connector: str
    observation: StreamObservation
    input_rows_total: int
    failures: int
    last_progress: QueryProgress | None
    max_event_time: float | None
    sources: tuple[SourceLag, ...] = ()
    watermark_lag: float | None = None
    event_time_lag: float | None = None
    phases: tuple[PhaseDistribution, ...] = ()
    state_totals: tuple[tuple[str, OperatorTotals], ...] = ()
    observed_metrics: tuple[tuple[str, str, float], ...] = ()

    @property
    def backlog(self) -> Backlog | None:
        return self.observation.backlog


@dataclass
class EventTypeView:
    event_type: str
    group: str
    rows_total: int = 0
    last_commit_time: float | None = None
    schema_version: int | None = None
    max_event_time: float | None = None


@dataclass(frozen=True)
class FleetSnapshot:
    streams: tuple[StreamView, ...]
    event_types: tuple[EventTypeView, ...]
    quarantined: tuple[tuple[str, str, int], ...]
    schema_alerts: tuple[tuple[str, int], ...]
    dropped_events: int = 0
    progress_log_failures: int = 0
    kafka_lost: tuple[tuple[str, str, int, int], ...] = ()
    cdc_rows: tuple[tuple[str, str, str, int], ...] = ()
    """(stream, table, change, rows): change is inserted, updated, deleted or ignored."""
    cdc_lag: tuple[tuple[str, str, float], ...] = ()
    expectation_rows: tuple[tuple[str, str, str, str, int], ...] = ()
    """(stream, table, expectation, outcome, rows): outcome is passed or failed."""


@dataclass
class _Counters:
    quarantined: dict[tuple[str, str], int] = field(default_factory=dict)
    schema_alerts: dict[str, int] = field(default_factory=dict)
    progress_log_failures: int = 0
    kafka_lost: dict[tuple[str, str, int], int] = field(default_factory=dict)
    cdc_rows: dict[tuple[str, str, str], int] = field(default_factory=dict)
    cdc_lag: dict[tuple[str, str], float] = field(default_factory=dict)
    expectation_rows: dict[tuple[str, str, str, str], int] = field(default_factory=dict)


class Fleet:
    def __init__(self, policy: StatusPolicy = DEFAULT_POLICY, delta_connector: str = "") -> None:
        """`delta_connector`: the Delta connector the application's streams run on (`native`,
        `embedded`), when the application says so; "" otherwise."""
        self.policy = policy
        self.delta_connector = delta_connector
        self._lock = threading.Lock()
        self._streams: dict[str, _StreamState] = {}
        self._by_query_id: dict[str, str] = {}
        self._event_types: dict[str, EventTypeView] = {}
        self._counters = _Counters()

    # -- listener events (worker thread) --------------------------------------------------------

    def apply(self, event: MonitorEvent, reading: BacklogReading | None = None) -> str | None:
        """Fold one listener event into the fleet; returns the stream it belongs to (None when
        an idle/termination event names a query this monitor never saw start or progress)."""
        with self._lock:
            if isinstance(event, QueryStarted):
                state = self._stream(event.stream, event.query_id, event.run_id)
                state.samples.clear()
                state.active, state.started_at, state.stopped_at = True, event.timestamp, None
                state.exception, state.reading, state.pending_since = None, None, None
                state.last_event_at = event.timestamp
                return state.stream
            if isinstance(event, QueryProgress):
                state = self._stream(event.stream, event.query_id, event.run_id)
                state.active, state.stopped_at = True, None
                state.last_progress = event
                state.samples.append(sample_of(event, reading))
                state.input_rows_total += event.num_input_rows
                state.last_event_at = event.timestamp + event.batch_duration_ms / 1000.0
                state.phases.observe(event.duration_ms)
                state.state.add(event.state_operators)
                state.observed.update(event.observed_values())
                if (newest := event.event_time.get("max")) is not None:
                    state.max_event_time = max(newest, state.max_event_time or newest)
                    state.event_time_lag = event.timestamp - newest
                if (watermark := event.watermark) is not None:
                    state.watermark_lag = event.timestamp - watermark
                if reading is not None:
                    self._set_reading(state, reading)
                return state.stream
            stream = self._by_query_id.get(event.query_id)
            state = self._streams.get(stream) if stream else None
            if state is None:
                return None
            if isinstance(event, QueryIdle):
                state.last_idle_at = event.timestamp
                state.last_event_at = max(event.timestamp, state.last_event_at or event.timestamp)
            elif isinstance(event, QueryTerminated):
                state.active, state.stopped_at = False, event.timestamp
                state.exception = event.message
                if event.exception:
                    state.failures += 1
            return state.stream

    def update_backlog(self, stream: str, reading: BacklogReading) -> None:
        with self._lock:
            state = self._streams.get(stream)
            if state is not None:
                self._set_reading(state, reading)

    def due_for_backlog(self, now: float, older_than_s: float) -> list[QueryProgress]:
        """The last progress of each active stream whose backlog reading is older than
        `older_than_s`: a blocked stream emits no progress, so its backlog is re-measured."""
        with self._lock:
            return [
                s.last_progress
                for s in self._streams.values()
                if s.active
                and s.last_progress is not None
                and (s.reading is None or now - s.reading.measured_at >= older_than_s)
            ]

    # -- pushes from the pipeline (any thread) --------------------------------------------------

    def record_table_commit(self, commit: TableCommit) -> None:
        with self._lock:
            view = self._event_types.get(commit.event_type)
            if view is None:
                view = self._event_types[commit.event_type] = EventTypeView(commit.event_type, commit.group)
            view.group = commit.group
            view.rows_total += commit.rows
            view.last_commit_time = max(commit.commit_time, view.last_commit_time or commit.commit_time)
            view.schema_version = commit.schema_version
            if commit.max_event_time is not None:
                view.max_event_time = max(commit.max_event_time, view.max_event_time or commit.max_event_time)

    def record_stream_event_time(self, stream: str, max_event_time: float) -> None:
        with self._lock:
            state = self._streams.get(stream)
            if state is None:
                state = self._streams[stream] = _StreamState(
                    stream, "", "", deque(maxlen=self.policy.window), active=True
                )
            state.max_event_time = max(max_event_time, state.max_event_time or max_event_time)

    def record_quarantine(self, stream: str, reason: str, rows: int) -> None:
        with self._lock:
            key = (stream, reason)
            self._counters.quarantined[key] = self._counters.quarantined.get(key, 0) + rows

    def record_kafka_data_loss(self, stream: str, topic: str, partition: int, offsets: int) -> None:
        with self._lock:
            key = (stream, topic, partition)
            self._counters.kafka_lost[key] = self._counters.kafka_lost.get(key, 0) + offsets

    def record_cdc_apply(self, apply: CdcApply) -> None:
        with self._lock:
            rows = self._counters.cdc_rows
            for change, count in (
                ("inserted", apply.inserted),
                ("updated", apply.updated),
                ("deleted", apply.deleted),
                ("ignored", apply.ignored),
            ):
                key = (apply.stream, apply.table, change)
                rows[key] = rows.get(key, 0) + count
            if apply.lag_seconds is not None:
                self._counters.cdc_lag[(apply.stream, apply.table)] = apply.lag_seconds

    def record_expectation(self, stream: str, table: str, expectation: str, passed: int, failed: int) -> None:
        with self._lock:
            rows = self._counters.expectation_rows
            for outcome, count in (("passed", passed), ("failed", failed)):
                key = (stream, table, expectation, outcome)
                rows[key] = rows.get(key, 0) + count

    def record_schema_alert(self, event_type: str) -> None:
        with self._lock:
            alerts = self._counters.schema_alerts
            alerts[event_type] = alerts.get(event_type, 0) + 1

    def record_progress_log_failure(self) -> None:
        with self._lock:
            self._counters.progress_log_failures += 1

    def max_event_time(self, stream: str) -> float | None:
        with self._lock:
            state = self._streams.get(stream)
            return state.max_event_time if state else None

    # -- reads ----------------------------------------------------------------------------------

    def snapshot(self, dropped_events: int = 0) -> FleetSnapshot:
        with self._lock:
            streams = tuple(self._view(s) for s in self._streams.values() if s.query_id)
            event_types = tuple(
                EventTypeView(
                    v.event_type,
                    v.group,
                    v.rows_total,
                    v.last_commit_time,
                    v.schema_version,
                    v.max_event_time,
                )
                for v in self._event_types.values()
            )
            quarantined = tuple((s, r, n) for (s, r), n in self._counters.quarantined.items())
            kafka_lost = tuple((s, t, p, n) for (s, t, p), n in self._counters.kafka_lost.items())
            alerts = tuple(self._counters.schema_alerts.items())
            failures = self._counters.progress_log_failures
            cdc_rows = tuple((s, t, c, n) for (s, t, c), n in self._counters.cdc_rows.items())
            cdc_lag = tuple((s, t, lag) for (s, t), lag in self._counters.cdc_lag.items())
            expectation_rows = tuple((s, t, e, o, n) for (s, t, e, o), n in self._counters.expectation_rows.items())
        return FleetSnapshot(
            streams,
            event_types,
            quarantined,
            alerts,
            dropped_events,
            failures,
            kafka_lost,
            cdc_rows,
            cdc_lag,
            expectation_rows,
        )

    def _view(self, state: _StreamState) -> StreamView:
        reading = state.reading
        return StreamView(
            stream=state.stream,
            query_id=state.query_id,
            run_id=state.run_id,
            group=group_of(state.stream),
            delta_connector=self.delta_connector,
            observation=StreamObservation(
                active=state.active,
                exception=state.exception,
                started_at=state.started_at,
                stopped_at=state.stopped_at,
                last_event_at=state.last_event_at,
                last_idle_at=state.last_idle_at,
                samples=tuple(state.samples),
                backlog=reading.backlog if reading else None,
                pending=reading.pending if reading else None,
                pending_since=state.pending_since,
            ),
            input_rows_total=state.input_rows_total,
            failures=state.failures,
            last_progress=state.last_progress,
            max_event_time=state.max_event_time,
            sources=reading.sources if reading else (),
            watermark_lag=state.watermark_lag,
            event_time_lag=state.event_time_lag,
            phases=state.phases.distributions(),
            state_totals=state.state.snapshot(),
            observed_metrics=tuple(
                (observation, metric, value)
                for observation, metrics in state.observed.items()
                for metric, value in metrics.items()
            ),
        )

    def _stream(self, stream: str, query_id: str, run_id: str) -> _StreamState:
        state = self._streams.get(stream)
        if state is None:
            state = self._streams[stream] = _StreamState(stream, query_id, run_id, deque(maxlen=self.policy.window))
        if state.run_id != run_id:
            state.samples.clear()
            state.observed.clear()  # a new run may observe other things: no series of the old one stays
        state.query_id, state.run_id = query_id, run_id
        self._by_query_id[query_id] = stream
        return state

    @staticmethod
    def _set_reading(state: _StreamState, reading: BacklogReading) -> None:
        if reading.pending:
            known = reading.pending_since
            if known is not None:
                state.pending_since = known
            elif state.pending_since is None or not (state.reading and state.reading.pending):
                state.pending_since = reading.measured_at
        else:
            state.pending_since = None
        state.reading = reading
