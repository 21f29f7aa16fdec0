"""Parquet data files written by a Spark task, each with what its Delta add action needs.

A task streams its rows of one table into one file (`DataFileBuilder`), keeping Delta's
per-file statistics as it goes (numRecords, and minValues/maxValues/nullCount per top-level
column, the fields Delta's data skipping reads); closing it yields a picklable `DataFile` that
travels to the driver in the task's commit message. Statistics follow delta-spark's rules
where they matter for correctness: strings longer than 32 characters get no max (a truncated
max would be too small), timestamps are kept to milliseconds with the max rounded up.

Files are written through Arrow's native filesystem of the table's store (a local disk or S3,
Azure, GCS, configured from the environment as every streamops reader is), so tasks write
straight into a table on an object store; a file a task abandons is deleted the same way.
"""

from __future__ import annotations

import errno
import functools
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq

from streamops.core.plain_text import human_bytes
from streamops.core.storage.arrow_filesystem import arrow_filesystem
from streamops.core.storage.local_files import free_bytes
from streamops.core.storage.location import Location
from streamops.pipeline.exceptions import StorageFullError

STRING_STATS_PREFIX = 32


@dataclass(frozen=True)
class DataFile:
    table: str
    path: str
    """Relative to the table root, as the add action records it."""
    size: int
    rows: int
    stats: str
    modification_time: int
    schema: bytes
    """The file's Arrow schema (IPC bytes): the commit merges it into the table's schema."""
    newest: float | None = None
    """Unix seconds of the newest value of the target's time column, if it has one."""


@dataclass
class _ColumnStats:
    nulls: int = 0
    low: Any = None
    high: Any = None
    has_range: bool = True


@dataclass
class DataFileBuilder:
    table: str
    schema: pa.Schema
    time_column: str | None = None
    name: str = field(default_factory=lambda: f"part-{uuid.uuid4()}-c000.snappy.parquet")
    rows: int = 0

    def __post_init__(self) -> None:
        self._filesystem = table_filesystem(self.table)
        self._sink = self._filesystem.open_output_stream(self.name)
        self._writer = pq.ParquetWriter(self._sink, self.schema, compression="snappy")
        self._stats = {f.name: _ColumnStats(has_range=_ranged(f.type)) for f in self.schema}
        self._newest: float | None = None

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        table = table.select(self.schema.names).cast(self.schema)
        try:
            self._writer.write_table(table)
        except OSError as error:
            raise self._storage_error(error, table.nbytes) from error
        self.rows += table.num_rows
        for name, stats in self._stats.items():
            column = table.column(name)
            stats.nulls += column.null_count
            if stats.has_range and column.null_count < len(column):
                low, high = pc.min_max(column).values()
                stats.low = _lower(stats.low, low.as_py())
                stats.high = _higher(stats.high, high.as_py())
        if self.time_column is not None:
            newest = pc.max(table.column(self.time_column)).as_py()
            if newest is not None:
                seconds = newest.timestamp()
                self._newest = seconds if self._newest is None else max(self._newest, seconds)

    def close(self) -> DataFile:
        try:
            self._writer.close()
            size = self._sink.tell()
            self._sink.close()
        except OSError as error:
            raise self._storage_error(error, 0) from error
        return DataFile(
            table=self.table,
            path=self.name,
            size=size,
            rows=self.rows,
            stats=delta_stats(self.rows, self._stats),
            modification_time=int(time.time() * 1000),
            schema=self.schema.serialize().to_pybytes(),
            newest=self._newest,
        )

    def discard(self) -> None:
        """Delete the file, even one the disk filled up under (closing it may fail again)."""
        try:
            self._writer.close()
            self._sink.close()
        except OSError:
            pass
        delete_quietly(self.table, self.name)

    def _storage_error(self, error: OSError, pending: int) -> OSError | StorageFullError:
        """A full local disk (errno ENOSPC) as one line with the path and the space the file needed."""
        if error.errno != errno.ENOSPC or not Location.of(self.table).is_local:
            return error
        written = self._sink.tell()
        free = free_bytes(Location.of(self.table).key)
        return StorageFullError(
            f"no space left on device for `{self.table}/{self.name}`: {human_bytes(free)} free after "
            f"{human_bytes(written)} of this file, and {human_bytes(pending)} of rows (uncompressed) were "
            "still to be written; free space on that disk (or move the lake) and restart: the batch "
            "is replayed, nothing of it was committed"
        )


def driver_file(table: str, data: pa.Table) -> DataFile:
    """`data` as one data file of `table`, written by the process holding it (the driver's own
    small tables), with the statistics a task's file gets."""
    builder = DataFileBuilder(table, data.schema)
    try:
        builder.write(data)
    except BaseException:
        builder.discard()
        raise
    return builder.close()


@functools.lru_cache(maxsize=64)
def table_filesystem(table: str) -> pa_fs.FileSystem:
    """Arrow's filesystem rooted at `table` (kept per table: a task writes many files, and an
    object store's client is costly to build)."""
    location = Location.of(table)
    if location.is_local:
        os.makedirs(location.key, exist_ok=True)
    return arrow_filesystem(location)


def delete_quietly(table: str, path: str) -> None:
    """Delete `path` (relative to `table`); a file already gone is no error."""
    try:
        table_filesystem(table).delete_file(path)
    except FileNotFoundError:
        pass


def _ranged(data_type: pa.DataType) -> bool:
    return (
        pa.types.is_integer(data_type)
        or pa.types.is_floating(data_type)
        or pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_timestamp(data_type)
        or pa.types.is_date(data_type)
    )


def _lower(current: Any, value: Any) -> Any:
    return value if current is None or (value is not None and value < current) else current


def _higher(current: Any, value: Any) -> Any:
    return value if current is None or (value is not None and value > current) else current


def delta_stats(rows: int, columns: dict[str, _ColumnStats]) -> str:
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    for name, stats in columns.items():
        low, high = _stat_value(stats.low, upper=False), _stat_value(stats.high, upper=True)
        if low is not None:
            minimum[name] = low
        if high is not None:
            maximum[name] = high
    nulls = {name: stats.nulls for name, stats in columns.items()}
    return orjson.dumps({"numRecords": rows, "minValues": minimum, "maxValues": maximum, "nullCount": nulls}).decode()


def _stat_value(value: Any, upper: bool) -> Any:
    if value is None:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        if len(value) <= STRING_STATS_PREFIX:
            return value
        return None if upper else value[:STRING_STATS_PREFIX]
    if isinstance(value, datetime):
        utc = value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)
        millis = utc.replace(microsecond=utc.microsecond // 1000 * 1000)
        if upper and millis != utc:
            millis += timedelta(milliseconds=1)
        return millis.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis.microsecond // 1000:03d}Z"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
