"""The seam between pipeline logic and the Delta implementation it runs on.

`embedded` (the default) reads with the delta-rs streaming source and writes a batch's rows
from Spark's tasks through the executor-side sink (pipeline/delta_connector/lake_sink.py);
`native` uses delta-spark's `format("delta")`, its JARs resolved by `spark_jars`. Either way a
batch's rows never pass through the driver: `write_routes` hands Spark the DataFrame and gets
back metadata. `write_batch` is for the pipeline's own small metadata tables (registry, event
groups, schema alerts), whose rows the driver makes. The pipeline calls only these methods, so
there is one implementation of bronze, silver and management whichever connector runs
underneath.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Mapping, Protocol, TypeVar, get_args

import pyarrow as pa

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.storage.location import LocationLike
from streamops.pipeline.delta_connector.batch_commit import TableCommit, commit_written
from streamops.pipeline.delta_connector.batch_report import BatchReport, FirstRowsFound, WrittenBatch
from streamops.pipeline.delta_connector.batch_txn import batch_version
from streamops.pipeline.delta_connector.batch_writer import WriteOutcome, create_table, mark_batch, write_batch
from streamops.pipeline.delta_connector.data_files import DataFile, driver_file
from streamops.pipeline.delta_connector.delta_source import FORMAT_NAME
from streamops.pipeline.delta_connector.flat_columns import flat_columns
from streamops.pipeline.delta_connector.lake_sink import FORMAT_NAME as SINK_FORMAT
from streamops.pipeline.delta_connector.lake_sink import PLAN_OPTION
from streamops.pipeline.delta_connector.native_checkpoints import checkpoint_if_due
from streamops.pipeline.delta_connector.native_commit import NativeCommits, WriterRequired, create_native_table
from streamops.pipeline.delta_connector.write_plan import (
    BYTES_SUFFIX,
    ROUTE_COLUMN,
    TEXT_SUFFIX,
    TableTarget,
    WritePlan,
)
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.lake_tables import table_access
from streamops.pipeline.runtime.jvm import driver_memory, jvm_has_class
from streamops.pipeline.runtime.spark_jars import delta_spark_package
from streamops.pipeline.runtime.spark_threads import active_session, side_by_side

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

ConnectorName = Literal["embedded", "native"]
CONNECTORS: tuple[ConnectorName, ...] = get_args(ConnectorName)
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
NATIVE_SPARK_CONF = {
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.snapshotPartitions": str(max(2, os.cpu_count() or 2)),
}
"""Session settings the native connector needs. Delta rebuilds a table's state in 50 partitions
unless told otherwise: 50 tasks for every small table the pipeline commits to (the registry,
the event groups, each silver table), where the machine's cores are plenty."""


DRIVER_HEAP: dict[ConnectorName, str] = {"embedded": "1g", "native": "4g"}
"""The driver's default heap per connector. Embedded, the JVM moves rows and plans queries while
delta-rs keeps the tables' state in Python, so 1 GB (Spark's default for an executor) is as
fresh as a larger heap and smaller. Native, delta-spark keeps every table's snapshot on the JVM
heap, which needs the larger one under the seed's load (BENCHMARKS.md)."""


Merged = TypeVar("Merged", covariant=True)
Result = TypeVar("Result")


class EngineMerges(Protocol[Merged]):
    """MERGEs written once for each engine: a connector runs those of its own (`DeltaConnector.merge`)."""

    def with_delta_rs(self, rows: pa.Table) -> Merged:
        """On the driver with delta-rs, which takes the rows as Arrow."""

    def with_delta_spark(self, rows: DataFrame) -> Merged:
        """In Spark with delta-spark: no row passes through the driver."""


def session_needs(name: ConnectorName) -> tuple[dict[str, str], list[str]]:
    """The Spark settings and the JARs (Maven coordinates) a session needs for connector `name`."""
    conf = {"spark.driver.memory": driver_memory(DRIVER_HEAP[name])}
    if name == "native":
        return {**conf, **NATIVE_SPARK_CONF}, [delta_spark_package()]
    return conf, []


class DeltaConnector(Protocol):
    name: ConnectorName

    def read_stream(
        self,
        spark: SparkSession,
        table: LocationLike,
        options: Mapping[str, str] | None = None,
        row_filter: Mapping[str, str] | None = None,
    ) -> DataFrame:
        """A stream of the table's appends. `row_filter`: the embedded source's `rowFilter`
        options (rows the stream's own filter would drop, skipped before they reach Spark)."""

    def create_table(self, table: LocationLike, schema: pa.Schema) -> None:
        """An empty table with `schema` (and the lake's table properties), unless one exists:
        streams that read it can start before any data arrives."""

    def write_batch(self, table: LocationLike, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome:
        """Driver-made rows of a small metadata table, exactly once per batch."""

    def mark_batch(self, table: LocationLike, commit: BatchCommitInfo) -> WriteOutcome:
        """Commit only the batch's txn to `table` (once): for a batch that read data and wrote none."""

    def write_routes(
        self, df: DataFrame, plan: WritePlan, before_commit: Callable[[FirstRowsFound], None] | None = None
    ) -> BatchReport:
        """Each row of `df` into the table of its `_route`, from Spark's tasks, exactly once per
        batch; returns what was committed (metadata only). `before_commit` gets the first rows
        the plan asks for once the rows are written and before any table is committed; if it
        raises, nothing is."""

    def merge(self, rows: DataFrame, merges: EngineMerges[Result]) -> Result:
        """`rows` MERGEd into their tables by this connector's Delta engine, each MERGE exactly
        once per batch as `merges` makes it."""


@dataclass(frozen=True)
class EmbeddedDelta:
    """Delta through delta-rs inside Spark: no JARs needed."""

    name: ConnectorName = "embedded"

    def read_stream(
        self,
        spark: SparkSession,
        table: LocationLike,
        options: Mapping[str, str] | None = None,
        row_filter: Mapping[str, str] | None = None,
    ) -> DataFrame:
        reader = spark.readStream.format(FORMAT_NAME).option("path", str(table))
        for key, value in {**(options or {}), **(row_filter or {})}.items():
            reader = reader.option(key, value)
        return reader.load()

    def create_table(self, table: LocationLike, schema: pa.Schema) -> None:
        with table_access(table, "create"):
            create_table(table, schema)

    def write_batch(self, table: LocationLike, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome:
        with table_access(table, f"write batch {commit.batch_id} of `{commit.stream}` to"):
            return write_batch(table, data, commit)

    def mark_batch(self, table: LocationLike, commit: BatchCommitInfo) -> WriteOutcome:
        with table_access(table, f"mark batch {commit.batch_id} of `{commit.stream}` in"):
            return mark_batch(table, commit)

    def write_routes(
        self, df: DataFrame, plan: WritePlan, before_commit: Callable[[FirstRowsFound], None] | None = None
    ) -> BatchReport:
        return commit_written(plan, _write_files(df, plan), before_commit)

    def merge(self, rows: DataFrame, merges: EngineMerges[Result]) -> Result:
        return merges.with_delta_rs(rows.toArrow())


@dataclass(frozen=True)
class NativeDelta:
    """delta-spark's own source and transactions: what Databricks, EMR or Kubernetes users of
    Spark and Delta run. Streams read with `format("delta")` and its options. A batch's rows are
    written as on embedded, every table's files by Spark's tasks in one job, and each table is
    committed by delta-spark's `OptimisticTransaction` with the batch's txn
    (pipeline/delta_connector/native_commit.py), the tables of a stage side by side: one Spark
    job per batch, not one per table. A table with a feature only delta-spark's writer enforces
    (a CHECK constraint, a NOT NULL or generated column, ...) gets its rows through that writer,
    with `txnAppId`/`txnVersion`."""

    spark: SparkSession
    name: ConnectorName = "native"
    jvm_helper: bool = True
    """delta-spark's commit calls made from streamops' JVM helper where it builds (native_commit.py)."""
    commits: NativeCommits = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "commits", NativeCommits(self.spark, self.jvm_helper))

    def read_stream(
        self,
        spark: SparkSession,
        table: LocationLike,
        options: Mapping[str, str] | None = None,
        row_filter: Mapping[str, str] | None = None,
    ) -> DataFrame:
        """Delta's source reads every row: `row_filter` is the embedded source's own option,
        and the stream's filter drops those rows in Spark."""
        reader = spark.readStream.format("delta")
        for key, value in (options or {}).items():
            reader = reader.option(key, value)
        return reader.load(str(table))

    def create_table(self, table: LocationLike, schema: pa.Schema) -> None:
        from pyspark.sql.pandas.types import from_arrow_schema

        create_native_table(self.spark, table, from_arrow_schema(schema))

    def write_batch(self, table: LocationLike, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome:
        """The driver's few rows (the registry's, the alerts', ...) in one file it writes itself,
        committed like a batch's tables: no Spark job. delta-spark's writer, asked for a `txn`,
        rebuilt the table's state in Spark jobs before every append."""
        if data.num_rows == 0:
            return WriteOutcome("empty")
        try:
            done = self.commits.commit_files(str(table), [driver_file(str(table), data)], commit)
        except WriterRequired:  # raised only for a table that does not hold the batch yet
            self._append(self.spark.createDataFrame(data), table, commit)
            return WriteOutcome("written", rows=data.num_rows)
        return WriteOutcome(done.status, version=done.version, rows=data.num_rows)

    def mark_batch(self, table: LocationLike, commit: BatchCommitInfo) -> WriteOutcome:
        done = self.commits.mark_batch(str(table), commit)
        return WriteOutcome(done.status, version=done.version)

    def write_routes(
        self, df: DataFrame, plan: WritePlan, before_commit: Callable[[FirstRowsFound], None] | None = None
    ) -> BatchReport:
        from pyspark.sql import functions as F

        routes = {target.path: route for route, target in plan.tables.items()}

        def commit(table: str, files: list[DataFile], batch: BatchCommitInfo) -> TableCommit:
            try:
                return self.commits.commit_files(table, files, batch, plan.tables[routes[table]].files_in_checksum)
            except WriterRequired:
                route = routes[table]
                rows = _native_rows(df.where(F.col(ROUTE_COLUMN) == route), plan.tables[route], plan)
                self._append(rows, table, batch)
                return TableCommit("written", sum(f.rows for f in files), batch_version(table, batch))

        return commit_written(
            plan,
            _write_files(df, plan),
            before_commit,
            committer=commit,
            side_by_side=lambda work, stage: side_by_side(self.spark, work, stage),
        )

    def merge(self, rows: DataFrame, merges: EngineMerges[Result]) -> Result:
        return merges.with_delta_spark(rows)

    def _append(self, df: DataFrame, table: LocationLike, commit: BatchCommitInfo) -> None:
        (
            df.write.format("delta")
            .mode("append")
            .option("mergeSchema", "true")
            .option("txnAppId", commit.stream)
            .option("txnVersion", commit.batch_id)
            .option("userMetadata", commit.to_user_metadata())
            .save(str(table))
        )
        checkpoint_if_due(self.spark, table)


def _write_files(df: DataFrame, plan: WritePlan) -> WrittenBatch:
    """Each row of `df` into a data file of its route's table, by Spark's tasks in one job (the
    executor-side sink, lake_sink.py): what they wrote, for the driver to commit."""
    with tempfile.TemporaryDirectory(prefix="streamops-batch-") as scratch:
        planned = replace(plan, report_path=str(Path(scratch) / "written.pickle"))
        with active_session(df.sparkSession):
            df.write.format(SINK_FORMAT).mode("append").option(PLAN_OPTION, planned.to_json()).save()
        return WrittenBatch.load(planned.report_path)


def _native_rows(df: DataFrame, target: TableTarget, plan: WritePlan) -> DataFrame:
    """The table's columns in Spark: what the embedded sink's tasks make with Arrow (one append
    per table and batch, so the batch values can be literals here)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructType

    columns: list[Column] = []
    if target.rows == "typed_json":
        parsed = F.from_json(F.col(str(target.payload_column)), StructType.fromJson(target.schema or {}))
        columns += flat_columns(parsed, target.schema or {"fields": []})
    for name, source in target.columns.items():
        value = plan.batch_value(source)
        if value is not None:
            columns.append(F.lit(value.as_py()).cast(from_arrow_type(value.type)).alias(name))
        elif source.endswith(TEXT_SUFFIX):
            columns.append(F.expr(f"make_valid_utf8(cast(`{source[: -len(TEXT_SUFFIX)]}` as string))").alias(name))
        elif source.endswith(BYTES_SUFFIX):
            columns.append(F.col(f"`{source[: -len(BYTES_SUFFIX)]}`").cast("binary").alias(name))
        else:
            columns.append(F.col(f"`{source}`").alias(name))
    return df.select(*columns)


def connector_for(name: str, spark: SparkSession) -> DeltaConnector:
    if name == "embedded":
        return EmbeddedDelta()
    if name == "native":
        if not jvm_has_class(spark, DELTA_EXTENSION):
            raise PipelineConfigError(
                "the native connector needs delta-spark's JARs on the Spark classpath and none were "
                "found: run on a cluster that has them (or set spark.jars), or use --delta embedded"
            )
        return NativeDelta(spark)
    raise PipelineConfigError(f"unknown Delta connector `{name}`: use `embedded` or `native`")
