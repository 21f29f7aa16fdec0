"""A streaming Delta source for PySpark's Python Data Source API, reading through delta-rs.

    spark.readStream.format("streamops_delta").option("path", table).load()

Options (as Delta's own source): maxFilesPerTrigger (default 1000), maxBytesPerTrigger,
startingVersion (a version or "latest"; default: the table snapshot, then new commits),
and Delta's options for commits that are not appends: skipChangeCommits, ignoreDeletes,
ignoreChanges (`streamops.change_commits`). Offsets are Delta's (see streamops.delta_offsets), so checkpoints look like
native Delta ones. Planning (`initialOffset`, `latestOffset`, `partitions`) runs in one
long-lived Python process on the driver; `read` runs on executors and gets only the pickled
file list of its partition.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from pipeline.exceptions import PipelineConfigError
from streamops.change_commits import read_mode
from streamops.delta_log import DeltaLog, data_file_path
from streamops.delta_offsets import BASE_INDEX, DeltaFileIndex, DeltaSourceOffset

FORMAT_NAME = "streamops_delta"
DEFAULT_MAX_FILES = 1000
TARGET_PARTITION_BYTES = 64 * 1024 * 1024


DataFile = tuple[str, tuple[tuple[str, str | None], ...]]
"""A file to read: absolute path and its partition values (which Delta keeps in the log)."""


class DeltaFilesPartition(InputPartition):
    """The parquet files one Spark task reads, in streaming order."""

    def __init__(self, files: list[DataFile]) -> None:
        super().__init__(files)
        self.files = files


def table_arrow_schema(path: str) -> pa.Schema:
    return pa.schema(DeltaLog(path).delta_table.schema().to_arrow())


class DeltaSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        return from_arrow_schema(table_arrow_schema(_required_path(self.options)))

    def streamReader(self, schema: StructType) -> "DeltaStreamReader":
        return DeltaStreamReader(self.options, schema)


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.path = _required_path(options)
        self.schema = schema
        self.max_bytes = _positive_int(options, "maxBytesPerTrigger", None)
        self.max_files = _positive_int(
            options, "maxFilesPerTrigger", None if self.max_bytes else DEFAULT_MAX_FILES
        )
        self.starting_version = options.get("startingVersion")
        self.read_mode = read_mode(options)
        self._available_now_version: int | None = None
        self._latest_at_start = -1
        self._index: DeltaFileIndex | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_index"] = None
        return state

    @property
    def index(self) -> DeltaFileIndex:
        if self._index is None:
            log = DeltaLog(self.path)
            if not log.exists():
                raise PipelineConfigError(
                    f"no Delta table at `{self.path}`: create it (or run the stream that writes it) "
                    "before starting a stream that reads it"
                )
            self._index = DeltaFileIndex(log, read_mode=self.read_mode, schema_version=log.latest_version())
        return self._index

    def initialOffset(self) -> dict:
        latest = self.index.refresh()
        table_id = self.index.table_id()
        if self.starting_version is None:
            offset = DeltaSourceOffset.initial(table_id, from_snapshot=True)
        elif str(self.starting_version).lower() == "latest":
            self._latest_at_start = latest
            offset = DeltaSourceOffset.initial(table_id, from_snapshot=False)
        else:
            version = int(self.starting_version)
            if version > latest:
                raise PipelineConfigError(
                    f"startingVersion {version} is after the latest version {latest} of `{self.path}`"
                )
            self.index.log.commit(version)
            offset = DeltaSourceOffset(version, BASE_INDEX, False, table_id)
        return offset.to_json_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        """Delta's rule: 1000 files per batch unless a file or byte limit is set."""
        if self.max_files is not None:
            return ReadMaxFiles(self.max_files)
        return ReadMaxBytes(self.max_bytes)  # type: ignore[arg-type]

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = DeltaSourceOffset.from_json(start)
        latest = self.index.refresh()
        self.index.check_same_table(begin)
        until = latest if self._available_now_version is None else min(latest, self._available_now_version)
        max_files, max_bytes = (None, None) if isinstance(limit, ReadAllAvailable) else self._limits(limit)
        if not begin.is_initial:
            return self.index.admit(begin, until, max_files, max_bytes).to_json_dict()
        if begin.is_starting_version:
            first = DeltaSourceOffset(until, BASE_INDEX, True, begin.reservoir_id)
        else:
            versions = range(self._latest_at_start + 1, until + 1)
            version = next((v for v in versions if self.index.commit_files(v)), None)
            if version is None:
                after_latest = DeltaSourceOffset(self._latest_at_start + 1, BASE_INDEX, False, begin.reservoir_id)
                return after_latest.to_json_dict()
            first = DeltaSourceOffset(version, BASE_INDEX, False, begin.reservoir_id)
        end = self.index.admit(
            first, first.reservoir_version, max_files, max_bytes, next_version_when_done=False
        )
        return start if end == first else end.to_json_dict()

    def _limits(self, limit: ReadLimit) -> tuple[int | None, int | None]:
        max_files = limit.max_files if isinstance(limit, ReadMaxFiles) else self.max_files
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else self.max_bytes
        return max_files, max_bytes

    def reportLatestOffset(self) -> dict | None:
        """The table's newest position, for progress reporting only: read without the read mode,
        so a change commit there fails the stream when a batch reaches it, not before."""
        latest = self.index.refresh()
        files = self.index.log.commit(latest).data_adds
        return DeltaSourceOffset(
            latest, len(files) - 1 if files else BASE_INDEX, False, self.index.table_id()
        ).to_json_dict()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now_version = self.index.refresh()

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = DeltaSourceOffset.from_json(start)
        finish = DeltaSourceOffset.from_json(end)
        if begin == finish:
            return []
        self.index.check_same_table(finish)
        files = self.index.files_between(begin, finish)
        groups: list[list[DataFile]] = []
        group_bytes = 0
        for indexed in files:
            if not groups or group_bytes >= TARGET_PARTITION_BYTES:
                groups.append([])
                group_bytes = 0
            groups[-1].append((data_file_path(self.path, indexed.file.path), indexed.file.partition_values))
            group_bytes += indexed.file.size
        return [DeltaFilesPartition(group) for group in groups]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        target = to_arrow_schema(self.schema, timezone="UTC")
        for path, partition_values in partition.files:  # type: ignore[attr-defined]
            try:
                table = pq.read_table(path)
            except FileNotFoundError as error:
                raise PipelineConfigError(
                    f"data file `{path}` of `{self.path}` is gone (VACUUM removed it before this "
                    "stream read it); restart from a new checkpoint or a later startingVersion"
                ) from error
            yield from conform(table, target, dict(partition_values)).to_batches()

    def commit(self, end: dict) -> None:
        """Nothing to release: offsets are derived from the immutable Delta log."""


def conform(table: pa.Table, target: pa.Schema, partition_values: dict[str, str | None]) -> pa.Table:
    """Shape one data file to the stream's schema: partition columns come from the log, and
    columns a file written under an older (narrower) schema lacks are null."""
    columns = []
    for field in target:
        if field.name in partition_values:
            value = pa.array([partition_values[field.name]] * table.num_rows, pa.string())
            columns.append(value.cast(field.type))
        elif field.name in table.column_names:
            column = table.column(field.name)
            columns.append(column if column.type == field.type else column.cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=target)


def _required_path(options: Any) -> str:
    path = options.get("path")
    if not path:
        raise PipelineConfigError("the Delta source needs a table path: .option('path', ...) or .load(path)")
    return str(path)


def _positive_int(options: Any, key: str, default: int | None) -> int | None:
    value = options.get(key)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError as error:
        raise PipelineConfigError(f"option {key}={value!r} must be a positive integer") from error
    if number <= 0:
        raise PipelineConfigError(f"option {key}={value!r} must be a positive integer")
    return number
