"""The durable query-progress log: `<lake>/_system/query_progress`, a Delta table.

Every progress event is kept whole (`json`) with its key fields as columns, so "what did batch
412 read" is a filter, not a JSON parse. Start and termination events (with the exception text)
are rows too, and idle events as a heartbeat (at most one per stream per minute), which lets
`streamops status` tell a quiet stream from a dead one with the pipeline stopped.

Its columns and how an event becomes a row are `progress_record`'s. Rows are appended in batched commits by the monitor's worker (one commit per flush interval,
not per event). The table is partitioned by `event_date` and `event`: retention drops whole
days, and lifecycle rows (a few per run) are read without scanning progress.

Columns added by a newer streamops are added to an existing log by its next append (Delta schema
evolution), and reads of a log written before them get them as nulls.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any, Iterable, Sequence

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties

from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.core.lake_layout import TABLE_CONFIGURATION
from streamops.core.storage.location import Location, LocationLike
from streamops.monitor.exceptions import ProgressLogNotFoundError
from streamops.monitor.progress_record import PARTITION_COLUMNS, SCHEMA


@dataclass(frozen=True)
class MaintenanceResult:
    deleted_before: date
    rows_deleted: int
    files_compacted: int


class RetainedTable:
    """A table of the monitor's that keeps `retention_days` of rows (the monitor's worker drops
    older ones)."""

    def __init__(self, path: LocationLike, retention_days: int = 30) -> None:
        if retention_days < 1:
            raise ValueError(f"retention_days must be at least 1, got {retention_days}")
        self.path = Location.of(path)
        self.retention_days = retention_days

    def cutoff(self, now: float) -> datetime:
        """The moment before which rows are dropped at `now` (seconds since the epoch)."""
        return datetime.fromtimestamp(now, tz=timezone.utc) - timedelta(days=self.retention_days)


class ProgressLog(RetainedTable):
    """Appends to and reads the progress-log table at `path`."""

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
            commit_properties=CommitProperties(custom_metadata={"streamops.operation": "progress log append"}),
        )
        return table.num_rows

    def maintain(self, now: float) -> MaintenanceResult:
        """Drop days older than the retention, then compact the small files batched appends
        leave behind (both are commits of their own; appends may run concurrently)."""
        cutoff = self.cutoff(now).date()
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
