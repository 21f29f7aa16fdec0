"""The durable query-progress log: `<lake>/_system/query_progress`, a Delta table.

Every progress event is kept whole (`json`) with its key fields as columns, so "what did batch
412 read" is a filter, not a JSON parse. Start and termination events (with the exception text)
are rows too, and idle events as a heartbeat (at most one per stream per minute), which lets
`streamops status` tell a quiet stream from a dead one with the pipeline stopped.

Rows are appended in batched commits by the monitor's worker (one commit per flush interval,
not per event). The table is partitioned by `event_date` and `event`: retention drops whole
days, and lifecycle rows (a few per run) are read without scanning progress.

Columns added by a newer streamops are added to an existing log by its next append (Delta schema
evolution), and reads of a log written before them get them as nulls.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any, Iterable, Sequence, get_args, get_type_hints

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties

from monitor.exceptions import ProgressLogNotFoundError
from monitor.metric_catalog import BATCH_PHASES
from monitor.progress_event import (
    MonitorEvent,
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
    SourceProgress,
)
from monitor.source_backlog import BacklogReading
from streamops.delta_read import is_table, open_table, read_delta
from streamops.lake_layout import TABLE_CONFIGURATION
from streamops.storage.location import Location, LocationLike

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
    ]
)
COLUMNS: tuple[str, ...] = tuple(SCHEMA.names)


def _utc(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc)


def row_of(
    event: MonitorEvent,
    stream: str,
    recorded_at: float,
    reading: BacklogReading | None = None,
    event_time_max: float | None = None,
) -> dict[str, Any]:
    """The log row of one event. `event_time_max` (progress and idle rows) is the newest event
    time the stream had committed when the event arrived (eventTime.max or what was pushed)."""
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


@dataclass(frozen=True)
class MaintenanceResult:
    deleted_before: date
    rows_deleted: int
    files_compacted: int


class ProgressLog:
    """Appends to and reads the progress-log table at `path`."""

    def __init__(self, path: LocationLike, retention_days: int = 30) -> None:
        if retention_days < 1:
            raise ValueError(f"retention_days must be at least 1, got {retention_days}")
        self.path = Location.of(path)
        self.retention_days = retention_days

    def exists(self) -> bool:
        return is_table(self.path)

    def append(self, rows: Sequence[dict[str, Any]]) -> int:
        """Write `rows` as one Delta commit; returns how many were written."""
        if not rows:
            return 0
        table = pa.Table.from_pylist(list(rows), schema=SCHEMA)
        write_deltalake(
            str(self.path),
            table,
            mode="append",
            schema_mode="merge",
            partition_by=PARTITION_COLUMNS,
            configuration=TABLE_CONFIGURATION,
            storage_options=self.path.storage_options(),
            commit_properties=CommitProperties(
                custom_metadata={"streamops.operation": "progress log append"}
            ),
        )
        return table.num_rows

    def maintain(self, now: float) -> MaintenanceResult:
        """Drop days older than the retention, then compact the small files batched appends
        leave behind (both are commits of their own; appends may run concurrently)."""
        cutoff = (datetime.fromtimestamp(now, tz=timezone.utc) - timedelta(days=self.retention_days)).date()
        if not self.exists():
            return MaintenanceResult(cutoff, 0, 0)
        table = open_table(self.path)
        deleted = 0
        if any(date.fromisoformat(p["event_date"]) < cutoff for p in table.partitions()):
            metrics = table.delete(f"event_date < '{cutoff.isoformat()}'")
            deleted = int(metrics.get("num_deleted_rows") or 0)
            table = open_table(self.path)
        compacted = table.optimize.compact()
        return MaintenanceResult(cutoff, deleted, int(compacted.get("numFilesRemoved") or 0))

    def table(self) -> DeltaTable:
        if not self.exists():
            raise ProgressLogNotFoundError(
                f"no progress log at `{self.path}`: attach the monitor (it is attached by "
                "`streamops run`) and let a stream run first"
            )
        return open_table(self.path)

    def read(
        self,
        columns: Iterable[str] | None = None,
        events: Iterable[str] | None = None,
        streams: Iterable[str] | None = None,
        days: Iterable[date] | None = None,
    ) -> pa.Table:
        """Rows of the log, pruned by partition (`events`, `days`) before anything is read."""
        filters: list[tuple[str, str, Any]] = []
        if events is not None:
            filters.append(("event", "in", list(events)))
        if days is not None:
            filters.append(("event_date", "in", [d.isoformat() for d in days]))
        if streams is not None:
            filters.append(("stream", "in", list(streams)))
        table = self.table()
        if columns is None:
            return read_delta(table, filters=filters or None)
        wanted = list(columns)
        present = set(table.schema().to_arrow().names)
        read = read_delta(table, columns=[c for c in wanted if c in present], filters=filters or None)
        for column in wanted:
            if column not in present:  # a log written before this column existed
                read = read.append_column(SCHEMA.field(column), pa.nulls(read.num_rows, SCHEMA.field(column).type))
        return read.select(wanted)

    def days(self) -> list[date]:
        """The days the log holds, newest first."""
        return sorted({date.fromisoformat(p["event_date"]) for p in self.table().partitions()}, reverse=True)
