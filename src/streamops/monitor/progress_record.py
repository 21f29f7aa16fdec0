"""One row of the progress log (`<lake>/_system/query_progress`), defined once: its columns,
and the conversions between a listener event, a row and the sample the status rules judge.

The monitor's worker turns each event into a row (`row_of`) and the live fleet into a sample
(`sample_of`); `streamops status` and the console read rows back and judge them as samples
(`sample_from_row`). A test round-trips event -> row -> sample against event -> sample, so
the live status and the offline one cannot drift apart. `COLUMN` names the columns for every
reader (`COLUMN.batch_id`), so a misspelt column fails at once instead of selecting nothing.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any, Mapping, get_args, get_type_hints

import orjson
import pandas as pd
import pyarrow as pa

from streamops.core.delta_format.backlog import Backlog
from streamops.monitor.metric_catalog import BATCH_PHASES
from streamops.monitor.progress_event import (
    WATERMARK,
    MonitorEvent,
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
    SourceProgress,
)
from streamops.monitor.source_backlog import BacklogReading
from streamops.monitor.status_rules import ProgressSample

PARTITION_COLUMNS = ["event_date", "event"]
LIFECYCLE_EVENTS = ("started", "terminated")
ACTIVITY_EVENTS = ("progress", "idle")
UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")


def phase_column(phase: str) -> str:
    """`addBatch` -> `duration_add_batch_ms`: one column per Spark durationMs phase."""
    return "duration_" + re.sub(r"(?<!^)(?=[A-Z])", "_", phase).lower() + "_ms"


PHASE_COLUMNS: dict[str, str] = {phase: phase_column(phase) for phase in BATCH_PHASES}

ARROW_TYPES: dict[type, pa.DataType] = {str: pa.string(), int: pa.int64(), float: pa.float64()}


def _arrow_type(hint: Any) -> pa.DataType:
    """The column type of a record field; `X | None` is a nullable X (every column is nullable)."""
    return ARROW_TYPES[next(t for t in get_args(hint) or (hint,) if t is not type(None))]


SOURCE_TYPE = pa.struct([(name, _arrow_type(hint)) for name, hint in get_type_hints(SourceProgress).items()])
"""One source of a progress event, laid out as the record `SourceProgress` is."""

SOURCE_LAG_TYPE = pa.struct(
    [
        ("source", pa.int64()),
        ("kind", pa.string()),
        ("description", pa.string()),
        ("pending", pa.bool_()),
        ("offsets", pa.int64()),
        ("max_partition_offsets", pa.int64()),
        ("files", pa.int64()),
        ("bytes", pa.int64()),
        ("versions", pa.int64()),
        ("seconds", pa.float64()),
        ("measured", pa.bool_()),
    ]
)
"""One source's lag right after the batch, laid out as the record `SourceLag` is."""

SCHEMA = pa.schema(
    [
        ("event_date", pa.date32()),
        ("event", pa.string()),
        ("timestamp", UTC_TIMESTAMP),
        ("recorded_at", UTC_TIMESTAMP),
        ("stream", pa.string()),
        ("query_id", pa.string()),
        ("run_id", pa.string()),
        ("name", pa.string()),
        ("delta_connector", pa.string()),
        ("batch_id", pa.int64()),
        ("num_input_rows", pa.int64()),
        ("input_rows_per_second", pa.float64()),
        ("processed_rows_per_second", pa.float64()),
        ("batch_duration_ms", pa.int64()),
        *[(column, pa.int64()) for column in PHASE_COLUMNS.values()],
        ("event_time_max", UTC_TIMESTAMP),
        ("sources", pa.list_(SOURCE_TYPE)),
        ("sink", pa.string()),
        ("sink_output_rows", pa.int64()),
        ("backlog_pending", pa.bool_()),
        ("backlog_versions", pa.int64()),
        ("backlog_files", pa.int64()),
        ("backlog_bytes", pa.int64()),
        ("backlog_seconds", pa.float64()),
        ("backlog_offsets", pa.int64()),
        ("source_backlogs", pa.list_(SOURCE_LAG_TYPE)),
        ("watermark", UTC_TIMESTAMP),
        ("state_rows_total", pa.int64()),
        ("state_rows_removed", pa.int64()),
        ("state_rows_dropped_by_watermark", pa.int64()),
        ("state_memory_bytes", pa.int64()),
        ("exception", pa.string()),
        ("error_class", pa.string()),
        ("json", pa.string()),
        ("observed_metrics", pa.string()),
    ]
)
"""`observed_metrics` is a progress event's `observedMetrics` as JSON text, every value as Spark
wrote it (`{"quality": {"rows": 10, "bad": 0, "checked": "2024-05-01"}}`); null when the batch
reported none. It is last so that a log written before it, which gains it at its next append,
has the columns in the same order as a new one."""
COLUMNS: tuple[str, ...] = tuple(SCHEMA.names)


class _ColumnNames:
    """Attribute access to the log's column names: `COLUMN.batch_id == "batch_id"`."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.__dict__.update({name: name for name in names})

    def __getattr__(self, name: str) -> str:
        raise AttributeError(f"the progress log has no column `{name}`")


COLUMN: Any = _ColumnNames(COLUMNS)


def _utc(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc)


def row_of(
    event: MonitorEvent,
    stream: str,
    recorded_at: float,
    reading: BacklogReading | None = None,
    event_time_max: float | None = None,
    delta_connector: str | None = None,
) -> dict[str, Any]:
    """The log row of one event. `event_time_max` (progress and idle rows) is the newest event
    time the stream had committed when the event arrived (eventTime.max or what was pushed);
    `delta_connector` the Delta connector the application runs on, when it says."""
    when = _utc(event.timestamp)
    assert when is not None
    row: dict[str, Any] = {
        "event_date": when.date(),
        "event": event.kind,
        "timestamp": when,
        "recorded_at": _utc(recorded_at),
        "stream": stream,
        "query_id": event.query_id,
        "run_id": event.run_id,
        "delta_connector": delta_connector,
        "json": event.json,
    }
    if isinstance(event, QueryIdle):
        row["event_time_max"] = _utc(event_time_max)
    elif isinstance(event, QueryStarted):
        row["name"] = event.name
    elif isinstance(event, QueryTerminated):
        row["exception"] = event.exception
        row["error_class"] = event.error_class
    elif isinstance(event, QueryProgress):
        row.update(
            name=event.name,
            batch_id=event.batch_id,
            num_input_rows=event.num_input_rows,
            input_rows_per_second=event.input_rows_per_second,
            processed_rows_per_second=event.processed_rows_per_second,
            batch_duration_ms=event.batch_duration_ms,
            event_time_max=_utc(event_time_max),
            sources=[source.to_row() for source in event.sources],
            sink=event.sink_description,
            sink_output_rows=event.sink_output_rows,
            observed_metrics=orjson.dumps(event.observed_metrics).decode() if event.observed_metrics else None,
        )
        for phase, column in PHASE_COLUMNS.items():
            row[column] = event.duration_ms.get(phase)
        row["watermark"] = _utc(event.event_time.get("watermark"))
        if event.state_operators:
            operators = event.state_operators
            row.update(
                state_rows_total=sum(op.num_rows_total for op in operators),
                state_rows_removed=sum(op.num_rows_removed for op in operators),
                state_rows_dropped_by_watermark=sum(op.num_rows_dropped_by_watermark for op in operators),
                state_memory_bytes=sum(op.memory_used_bytes for op in operators),
            )
        if reading is not None:
            row["backlog_pending"] = reading.pending
            row["backlog_offsets"] = reading.offsets
            row["source_backlogs"] = [asdict(lag) for lag in reading.sources]
            if reading.backlog is not None:
                row.update(
                    backlog_versions=reading.backlog.versions,
                    backlog_files=reading.backlog.files,
                    backlog_bytes=reading.backlog.bytes,
                    backlog_seconds=reading.backlog.seconds,
                )
    return row


def sample_of(progress: QueryProgress, reading: BacklogReading | None) -> ProgressSample:
    """The batch as the status rules judge it live, from its event and the backlog measured
    right after it (what `row_of` logs)."""
    duration_ms = progress.duration_ms.get("triggerExecution", progress.batch_duration_ms)
    operators = progress.state_operators
    return ProgressSample(
        timestamp=progress.timestamp,
        batch_id=progress.batch_id,
        num_input_rows=progress.num_input_rows,
        processed_rows_per_second=progress.processed_rows_per_second,
        duration_seconds=duration_ms / 1000.0,
        backlog=reading.backlog if reading else None,
        pending=reading.pending if reading else None,
        files=reading.files if reading else None,
        offsets=reading.offsets if reading else None,
        source_rows=tuple(source.num_input_rows for source in progress.sources),
        watermark=progress.event_time.get(WATERMARK),
        state_rows=sum(op.num_rows_total for op in operators) if operators else None,
        state_rows_removed=sum(op.num_rows_removed for op in operators),
        late_rows=sum(op.num_rows_dropped_by_watermark for op in operators),
    )


def sample_from_row(row: Mapping[str, Any]) -> ProgressSample:
    """The same sample read back from a logged progress row (a dict of the row's columns, as
    pyarrow or pandas give it: missing values may be None or NaN/NaT)."""
    duration_ms = int_of(row[PHASE_COLUMNS["triggerExecution"]])
    if duration_ms is None:
        duration_ms = int_of(row["batch_duration_ms"]) or 0
    files = int_of(row["backlog_files"])
    sources = row["sources"] if not missing(row["sources"]) else []
    lags = row.get("source_backlogs")
    lag_files = [lag["files"] for lag in (lags if not missing(lags) else []) if not missing(lag["files"])]
    watermark = epoch_of(row["watermark"])
    return ProgressSample(
        timestamp=epoch_of(row["timestamp"]) or 0.0,
        batch_id=int_of(row["batch_id"]) or 0,
        num_input_rows=int_of(row["num_input_rows"]) or 0,
        processed_rows_per_second=float_of(row["processed_rows_per_second"]) or 0.0,
        duration_seconds=duration_ms / 1000.0,
        backlog=None
        if files is None
        else Backlog(
            versions=int_of(row["backlog_versions"]) or 0,
            files=files,
            bytes=int_of(row["backlog_bytes"]) or 0,
            seconds=float_of(row["backlog_seconds"]) or 0.0,
        ),
        pending=None if missing(row["backlog_pending"]) else bool(row["backlog_pending"]),
        files=sum(int(n) for n in lag_files) if lag_files else None,
        offsets=int_of(row["backlog_offsets"]),
        source_rows=tuple(int(source["num_input_rows"] or 0) for source in sources),
        watermark=watermark,
        state_rows=int_of(row["state_rows_total"]),
        state_rows_removed=int_of(row["state_rows_removed"]) or 0,
        late_rows=int_of(row["state_rows_dropped_by_watermark"]) or 0,
    )


def missing(value: Any) -> bool:
    """True for a value the row does not hold: None, or pandas' NaN/NaT for a missing number."""
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def epoch_of(value: Any) -> float | None:
    """A timestamp column as Unix seconds (None when missing)."""
    if missing(value):
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return pd.Timestamp(value).timestamp()


def int_of(value: Any) -> int | None:
    return None if missing(value) else int(value)


def float_of(value: Any) -> float | None:
    return None if missing(value) else float(value)
