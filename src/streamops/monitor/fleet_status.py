"""`streamops status`: the fleet table from the progress log and the Delta logs, no Spark needed.

Works with the pipeline stopped: the status rules run offline (`active` unknown), the backlog is
measured now from each stream's last processed offsets, and a stream that logged no event for
longer than the idle heartbeat allows is reported stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from streamops.core.delta_format.backlog import Backlog
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.monitor.progress_event import SourceProgress, exception_summary
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import (
    ACTIVITY_EVENTS,
    COLUMN,
    LIFECYCLE_EVENTS,
    PHASE_COLUMNS,
    epoch_of,
    float_of,
    int_of,
    sample_from_row,
)
from streamops.monitor.source_backlog import BacklogReading, SourceBacklog
from streamops.monitor.source_lag import SourceLag, estimated_seconds, read_rate
from streamops.monitor.status_rules import (
    DEFAULT_POLICY,
    ProgressSample,
    StatusPolicy,
    StreamObservation,
    StreamWarning,
    arrival_rate,
    evaluate,
)
from streamops.monitor.status_severity import SEVERITY, StreamStatus

ACTIVITY_COLUMNS = [
    COLUMN.event,
    COLUMN.stream,
    COLUMN.run_id,
    COLUMN.timestamp,
    COLUMN.batch_id,
    COLUMN.num_input_rows,
    COLUMN.input_rows_per_second,
    COLUMN.processed_rows_per_second,
    COLUMN.batch_duration_ms,
    PHASE_COLUMNS["triggerExecution"],
    COLUMN.event_time_max,
    COLUMN.backlog_pending,
    COLUMN.backlog_versions,
    COLUMN.backlog_files,
    COLUMN.backlog_bytes,
    COLUMN.backlog_seconds,
    COLUMN.backlog_offsets,
    COLUMN.watermark,
    COLUMN.state_rows_total,
    COLUMN.state_rows_removed,
    COLUMN.state_rows_dropped_by_watermark,
    COLUMN.state_memory_bytes,
    COLUMN.sources,
    COLUMN.source_backlogs,
]
LIFECYCLE_COLUMNS = [
    COLUMN.event,
    COLUMN.stream,
    COLUMN.query_id,
    COLUMN.run_id,
    COLUMN.timestamp,
    COLUMN.exception,
    COLUMN.delta_connector,
]
ONE_DAY = timedelta(days=1)


@dataclass(frozen=True)
class StreamStatusRow:
    stream: str
    status: StreamStatus
    reason: str
    query_id: str | None
    run_id: str | None
    last_batch_id: int | None
    last_batch_at: float | None
    last_event_at: float | None
    backlog: Backlog | None
    pending: bool | None
    freshness_seconds: float | None
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    warnings: tuple[StreamWarning, ...] = ()
    sources: tuple[SourceLag, ...] = ()
    estimated_seconds: tuple[float | None, ...] = ()
    state_rows: int | None = None
    state_memory_bytes: int | None = None
    watermark_lag_seconds: float | None = None
    delta_connector: str | None = None

    @property
    def offsets(self) -> int | None:
        """Records behind the latest offset over the sources that report it."""
        known = [s.offsets for s in self.sources if s.offsets is not None]
        return sum(known) if known else None

    def to_json(self) -> dict[str, Any]:
        """The stable JSON form of `streamops status --json`."""
        return {
            "stream": self.stream,
            "status": self.status,
            "reason": self.reason,
            "query_id": self.query_id,
            "run_id": self.run_id,
            "delta_connector": self.delta_connector,
            "last_batch_id": self.last_batch_id,
            "last_batch_at": iso_utc(self.last_batch_at),
            "last_event_at": iso_utc(self.last_event_at),
            "backlog": None
            if self.backlog is None
            else {
                "versions": self.backlog.versions,
                "files": self.backlog.files,
                "bytes": self.backlog.bytes,
                "seconds": round(self.backlog.seconds, 3),
            },
            "pending": self.pending,
            "freshness_seconds": _round(self.freshness_seconds),
            "input_rows_per_second": _round(self.input_rows_per_second),
            "processed_rows_per_second": _round(self.processed_rows_per_second),
            "warnings": [{"code": w.code, "message": w.message} for w in self.warnings],
            "sources": [
                {
                    "source": lag.source,
                    "kind": lag.kind,
                    "description": lag.description,
                    "pending": lag.pending,
                    "offsets": lag.offsets,
                    "max_partition_offsets": lag.max_partition_offsets,
                    "files": lag.files,
                    "bytes": lag.bytes,
                    "versions": lag.versions,
                    "seconds": _round(lag.seconds),
                    "estimated_seconds": _round(estimate),
                    "measured": lag.measured,
                    "retention_headroom_seconds": {
                        "deleted_files": _round(lag.retention_files_seconds),
                        "log": _round(lag.retention_log_seconds),
                    },
                    "unread_change_commits": [c.to_json() for c in lag.change_commits],
                }
                for lag, estimate in zip(self.sources, self.estimated_seconds)
            ],
            "state": None
            if self.state_rows is None
            else {"rows": self.state_rows, "memory_bytes": self.state_memory_bytes},
            "watermark_lag_seconds": _round(self.watermark_lag_seconds),
        }


def fleet_status(
    lake: LakeLike, now: float | None = None, policy: StatusPolicy = DEFAULT_POLICY
) -> list[StreamStatusRow]:
    """Every stream in the progress log, worst status first, then by name."""
    lake = LakeLayout.at(lake)
    current = time.time() if now is None else now
    log = ProgressLog(lake.query_progress)
    lifecycle = log.read(columns=LIFECYCLE_COLUMNS, events=LIFECYCLE_EVENTS).to_pandas()
    lifecycle = lifecycle.sort_values("timestamp", kind="stable")
    last_life = {r["stream"]: r for r in lifecycle.groupby("stream").tail(1).to_dict("records")}

    activity = _recent_activity(log, lifecycle, policy.window).sort_values("timestamp", kind="stable")
    # what a stream last did in any run: a run that ends without a batch (e.g. the confirming
    # round of --until-idle) must not hide the stream's last batch, backlog and freshness
    any_run = activity[activity["event"] == "progress"].groupby("stream").tail(1)
    last_progress = {r["stream"]: r for r in any_run.to_dict("records")}
    newest_event_time = activity.groupby("stream")["event_time_max"].max().to_dict()
    run_of = pd.Series({stream: row["run_id"] for stream, row in last_life.items()}, dtype=object)
    # only the current run of a stream counts (a stream the log never saw start keeps all rows)
    in_current_run = (activity["run_id"] == activity["stream"].map(run_of)) | ~activity["stream"].isin(run_of.index)
    activity = activity[in_current_run]
    progress: dict[str, list[dict[str, Any]]] = {}
    for row in activity[activity["event"] == "progress"].groupby("stream").tail(policy.window).to_dict("records"):
        progress.setdefault(row["stream"], []).append(row)
    last_idle = activity[activity["event"] == "idle"].groupby("stream")["timestamp"].max().to_dict()

    backlog = SourceBacklog(lake)
    rows = [
        _stream_row(
            stream,
            last_life.get(stream),
            progress.get(stream, []),
            last_progress.get(stream),
            last_idle.get(stream),
            newest_event_time.get(stream),
            backlog,
            current,
            policy,
        )
        for stream in sorted(set(last_life) | set(activity["stream"]))
    ]
    return sorted(rows, key=lambda r: (SEVERITY.index(r.status), r.stream))


def _recent_activity(log: ProgressLog, lifecycle: pd.DataFrame, window: int) -> pd.DataFrame:
    """Progress and idle rows, newest day first, until every stream has a full window or the
    day its current run started has been read (older days hold nothing of that run)."""
    started = lifecycle[lifecycle["event"] == "started"].groupby("stream")["timestamp"].max()
    run_start_day = {stream: ts.date() for stream, ts in started.items()}
    frames: list[pd.DataFrame] = []
    known = set(lifecycle["stream"])
    counts: dict[str, int] = {}
    for day in log.days():
        frame = log.read(columns=ACTIVITY_COLUMNS, events=ACTIVITY_EVENTS, days=[day]).to_pandas()
        frames.append(frame)
        known |= set(frame["stream"])
        for stream, n in frame[frame["event"] == "progress"]["stream"].value_counts().items():
            counts[stream] = counts.get(stream, 0) + int(n)
        if all(counts.get(s, 0) >= window or run_start_day.get(s, day - ONE_DAY) >= day for s in known):
            break
    if not frames:
        return pd.DataFrame(columns=ACTIVITY_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def _stream_row(
    stream: str,
    last_life: dict[str, Any] | None,
    progress: list[dict[str, Any]],
    last_progress: dict[str, Any] | None,
    last_idle: Any,
    newest_event_time: Any,
    backlog: SourceBacklog,
    now: float,
    policy: StatusPolicy,
) -> StreamStatusRow:
    samples = tuple(sample_from_row(r) for r in progress)
    last = progress[-1] if progress else last_progress
    reading = _current_backlog(stream, last, backlog, samples, now)
    terminated = last_life is not None and last_life["event"] == "terminated"
    started_at = epoch_of(last_life["timestamp"]) if last_life is not None and not terminated else None
    last_idle_at = epoch_of(last_idle)
    marks = [t for t in (samples[-1].ended_at if samples else None, last_idle_at, started_at) if t is not None]
    observation = StreamObservation(
        active=False if terminated else None,
        exception=exception_summary(last_life["exception"]) if terminated else None,
        started_at=started_at,
        stopped_at=epoch_of(last_life["timestamp"]) if terminated else None,
        last_event_at=max(marks) if marks else None,
        last_idle_at=last_idle_at,
        samples=samples,
        backlog=reading.backlog,
        pending=reading.pending,
        pending_since=_pending_since(reading, samples),
    )
    verdict = evaluate(observation, now, policy, offline=True)
    event_time_max = epoch_of(newest_event_time)
    rate = arrival_rate(samples[-2], samples[-1]) if len(samples) >= 2 else None
    run_id = last_life["run_id"] if last_life is not None else (last["run_id"] if last is not None else None)
    watermark = epoch_of(last["watermark"]) if last is not None else None
    return StreamStatusRow(
        stream=stream,
        status=verdict.status,
        reason=verdict.reason,
        query_id=last_life["query_id"] if last_life is not None else None,
        delta_connector=last_life["delta_connector"] if last_life is not None else None,
        run_id=run_id,
        last_batch_id=int_of(last["batch_id"]) if last is not None else None,
        last_batch_at=sample_from_row(last).ended_at if last is not None else None,
        last_event_at=observation.last_event_at,
        backlog=reading.backlog,
        pending=reading.pending,
        freshness_seconds=max(0.0, now - event_time_max) if event_time_max is not None else None,
        input_rows_per_second=rate
        if rate is not None
        else float_of(last["input_rows_per_second"])
        if last is not None
        else None,
        processed_rows_per_second=float_of(last["processed_rows_per_second"]) if last is not None else None,
        warnings=verdict.warnings,
        sources=reading.sources,
        estimated_seconds=tuple(
            estimated_seconds(lag.offsets, read_rate(samples, lag.source)) for lag in reading.sources
        ),
        state_rows=int_of(last["state_rows_total"]) if last is not None else None,
        state_memory_bytes=int_of(last["state_memory_bytes"]) if last is not None else None,
        watermark_lag_seconds=(sample_from_row(last).timestamp - watermark) if watermark else None,
    )


def _current_backlog(
    stream: str,
    last: dict[str, Any] | None,
    backlog: SourceBacklog,
    samples: tuple[ProgressSample, ...],
    now: float,
) -> BacklogReading:
    """Measure now from the last processed offsets; where nothing can be measured now, what the
    log recorded after the last batch, with what the sources themselves reported."""
    sources: tuple[SourceLag, ...] = ()
    if last is not None and last["sources"] is not None and len(last["sources"]):
        reading = backlog.measure(stream, [SourceProgress.from_row(source) for source in last["sources"]])
        if reading.backlog is not None:
            return reading
        sources = reading.sources
    if samples:
        return BacklogReading(samples[-1].backlog, samples[-1].pending, samples[-1].ended_at, sources)
    return BacklogReading(None, None, now, sources)


def _pending_since(reading: BacklogReading, samples: tuple[ProgressSample, ...]) -> float | None:
    if not reading.pending:
        return None
    if reading.pending_since is not None:
        return reading.pending_since
    since = None
    for sample in reversed(samples):
        if not sample.pending:
            break
        since = sample.ended_at
    return since


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def iso_utc(epoch: float | None) -> str | None:
    """Unix seconds as ISO-8601 UTC to the millisecond (`2026-11-22T06:26:06.123Z`): every time
    `streamops status --json` prints."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
