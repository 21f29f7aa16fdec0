"""A streaming Delta source for PySpark's Python Data Source API, reading through delta-rs.

    spark.readStream.format("streamops_delta").option("path", table).load()

Options (as Delta's own source): maxFilesPerTrigger (default 1000), maxBytesPerTrigger,
startingVersion (a version or "latest"; default: the table snapshot, then new commits),
and Delta's options for commits that are not appends: skipChangeCommits, ignoreDeletes,
ignoreChanges (`streamops.core.delta_format.change_commits`), and `rowFilter` (below). Offsets are Delta's (see streamops.core.delta_format.source_offsets), so checkpoints look like
native Delta ones. Planning (`initialOffset`, `latestOffset`, `partitions`) runs in one
long-lived Python process on the driver; `read` runs on executors and gets only the pickled
add actions of its partition (with their deletion vectors), and reads each file as
`streamops.core.delta_format.file_reader` does. A table whose protocol needs a reader feature this source
lacks (`streamops.core.delta_format.table_features`) is refused when the source is created, in one line.
"""

from __future__ import annotations

from streamops.core.extras import require

require("pipeline", __name__)

import importlib
from typing import Any, Callable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
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

from streamops.core.delta_format.change_commits import read_mode
from streamops.core.delta_format.column_mapping import ColumnMapping
from streamops.core.delta_format.file_reader import read_data_file
from streamops.core.delta_format.log import AddFile, DeltaLog
from streamops.core.delta_format.source_offsets import BASE_INDEX, DeltaFileIndex, DeltaSourceOffset
from streamops.core.delta_format.table_features import read_protocol, unreadable_reader_feature
from streamops.core.exceptions import TableUnreadableError
from streamops.core.storage.location import Location
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.runtime.hang_ups import quiet_on_hang_up
from streamops.pipeline.runtime.worker_gc import freeze_imported_objects

FORMAT_NAME = "streamops_delta"
DEFAULT_MAX_FILES = 1000
TARGET_PARTITION_BYTES = 64 * 1024 * 1024
ROW_FILTER_OPTION = "rowFilter"
"""`module:function`. Called with the source's options on the driver as each batch is planned,
the function returns the rows the stream is known not to want, as (column, values), or None;
the tasks drop those rows before they reach Spark. A stream that keeps a small part of a shared
table (a silver group keeps its own event types of all of bronze) then does not move the rest
into the JVM only to filter it out there. It must name only rows the stream's own filter drops:
offsets, and so exactly-once, are unchanged."""

SkippedRows = tuple[str, tuple[str, ...]]


class DeltaFilesPartition(InputPartition):
    """The add actions one Spark task reads, in streaming order, and the rows it drops."""

    def __init__(self, files: list[AddFile], skipped: SkippedRows | None = None) -> None:
        super().__init__(files)
        self.files = files
        self.skipped = skipped


def source_log(path: str) -> DeltaLog:
    """The source table's log, once it is known to exist and to be readable by this source."""
    log = DeltaLog(path)
    if not log.exists():
        raise PipelineConfigError(
            f"no Delta table at `{path}`: create it (or run the stream that writes it) "
            "before starting a stream that reads it"
        )
    refuse_unreadable(log)
    return log


def refuse_unreadable(log: DeltaLog) -> None:
    feature = unreadable_reader_feature(read_protocol(log))
    if feature is not None:
        needs = feature if feature.startswith("reader version") else f"reader feature `{feature}`"
        raise PipelineConfigError(
            f"source table `{log.table}` uses the Delta {needs}, which the embedded Delta source "
            "cannot read; use --delta native on a cluster with delta-spark"
        )


class DeltaSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        table = source_log(_required_path(self.options)).delta_table
        return from_arrow_schema(pa.schema(table.schema().to_arrow()))

    def streamReader(self, schema: StructType) -> DeltaStreamReader:
        quiet_on_hang_up()
        return DeltaStreamReader(self.options, schema)


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.path = _required_path(options)
        self.schema = schema
        log = source_log(self.path)
        self.schema_version = log.latest_version()
        self.columns = ColumnMapping.of_table(log.delta_table)
        self.max_bytes = _positive_int(options, "maxBytesPerTrigger", None)
        self.max_files = _positive_int(options, "maxFilesPerTrigger", None if self.max_bytes else DEFAULT_MAX_FILES)
        self.starting_version = options.get("startingVersion")
        self.read_mode = read_mode(options)
        self.options = options
        self.row_filter = _row_filter(options.get(ROW_FILTER_OPTION))
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
            self._index = DeltaFileIndex(log, read_mode=self.read_mode, schema_version=self.schema_version)
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
        latest = self._refresh()
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
        end = self.index.admit(first, first.reservoir_version, max_files, max_bytes, next_version_when_done=False)
        return start if end == first else end.to_json_dict()

    def _refresh(self) -> int:
        """The latest version; a table upgraded to a feature this source cannot read (which
        delta-rs may refuse to load) stops the stream with the refusal, not a damaged-log error."""
        try:
            return self.index.refresh()
        except TableUnreadableError:
            refuse_unreadable(self.index.log)
            raise

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
        groups: list[list[AddFile]] = []
        group_bytes = 0
        for indexed in files:
            if not groups or group_bytes >= TARGET_PARTITION_BYTES:
                groups.append([])
                group_bytes = 0
            groups[-1].append(indexed.file)
            group_bytes += indexed.file.size
        skipped = self._skipped_rows()
        return [DeltaFilesPartition(group, skipped) for group in groups]

    def _skipped_rows(self) -> SkippedRows | None:
        if self.row_filter is None:
            return None
        found = self.row_filter(self.options)
        if found is None or not found[1]:
            return None
        if found[0] not in self.schema.names:
            raise PipelineConfigError(
                f"{ROW_FILTER_OPTION} `{self.options.get(ROW_FILTER_OPTION)}` skips rows by column "
                f"`{found[0]}`, which `{self.path}` does not have: return one of its columns"
            )
        return found[0], tuple(sorted(set(found[1])))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        freeze_imported_objects()
        table = Location.of(self.path)
        target = to_arrow_schema(self.schema, timezone="UTC")
        skipped = partition.skipped  # type: ignore[attr-defined]
        skipped_values = pa.array(skipped[1], pa.string()) if skipped is not None else None
        for add in partition.files:  # type: ignore[attr-defined]
            try:
                rows = read_data_file(table, add, self.columns, target)
            except FileNotFoundError as error:
                raise PipelineConfigError(
                    f"data file `{add.path}` of `{self.path}` is gone (VACUUM removed it before this "
                    "stream read it); restart from a new checkpoint or a later startingVersion"
                ) from error
            if skipped is not None:
                wanted = pc.invert(pc.fill_null(pc.is_in(rows.column(skipped[0]), skipped_values), False))
                rows = rows.filter(wanted)
            yield from rows.to_batches()

    def commit(self, end: dict) -> None:
        """Nothing to release: offsets are derived from the immutable Delta log."""


def _row_filter(spec: str | None) -> Callable[[Mapping[str, str]], Any] | None:
    if not spec:
        return None
    module, _, name = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module), name) if name else None
    except ImportError:
        found = None
    if not callable(found):
        raise PipelineConfigError(
            f"{ROW_FILTER_OPTION} `{spec}` names no function: give it as `package.module:function`"
        )
    return found


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
