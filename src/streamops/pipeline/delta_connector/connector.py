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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Mapping, Protocol, TypeVar, get_args

import pyarrow as pa

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import is_table
from streamops.core.lake_layout import TABLE_CONFIGURATION
from streamops.core.storage.location import LocationLike
from streamops.pipeline.delta_connector.batch_commit import commit_written
from streamops.pipeline.delta_connector.batch_report import BatchReport, FirstRowsFound, TableReport, WrittenBatch
from streamops.pipeline.delta_connector.batch_txn import batch_version, table_holds_batch
from streamops.pipeline.delta_connector.batch_writer import WriteOutcome, create_table, mark_batch, write_batch
from streamops.pipeline.delta_connector.cut_short_creation import clear_cut_short_creation
from streamops.pipeline.delta_connector.delta_source import FORMAT_NAME
from streamops.pipeline.delta_connector.flat_columns import flat_columns
from streamops.pipeline.delta_connector.lake_sink import FORMAT_NAME as SINK_FORMAT
from streamops.pipeline.delta_connector.lake_sink import PLAN_OPTION
from streamops.pipeline.delta_connector.session_commits import SESSION_COMMITS
from streamops.pipeline.delta_connector.write_plan import (
    BYTES_SUFFIX,
    ROUTE_COLUMN,
    TALLY_COLUMN,
    TALLY_ITEMS_COLUMN,
    TEXT_SUFFIX,
    FirstRows,
    TableTarget,
    WritePlan,
)
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.lake_tables import table_access
from streamops.pipeline.runtime.jvm import driver_memory, jvm_has_class
from streamops.pipeline.runtime.spark_jars import delta_spark_package
from streamops.pipeline.runtime.spark_threads import side_by_side

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

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
        with tempfile.TemporaryDirectory(prefix="streamops-batch-") as scratch:
            planned = replace(plan, report_path=str(Path(scratch) / "written.pickle"))
            df.write.format(SINK_FORMAT).mode("append").option(PLAN_OPTION, planned.to_json()).save()
            written = WrittenBatch.load(planned.report_path)
        return commit_written(plan, written, before_commit)

    def merge(self, rows: DataFrame, merges: EngineMerges[Result]) -> Result:
        return merges.with_delta_rs(rows.toArrow())


SIDE_BY_SIDE_TABLES = 2


@dataclass(frozen=True)
class NativeDelta:
    """delta-spark's own source and sink: what Databricks, EMR or Kubernetes users of Spark and
    Delta run. Streams read with `format("delta")` and its options; every table is written by
    Spark's own Delta writer, one append per table and batch with `txnAppId`/`txnVersion`, which
    delta-spark skips when the table already holds that version (exactly once across replays).
    The appends of a stage of at most `SIDE_BY_SIDE_TABLES` tables run side by side
    (pipeline/runtime/spark_threads.py), so bronze's quarantine append, however small, does not
    add its own round trips to every batch. A larger stage (a silver group's event types) appends one table
    after another: Spark runs jobs first come, first served, and a group holding several job
    slots at once kept bronze's jobs waiting (BENCHMARKS.md, "The two Delta connectors").
    The batch is persisted on the executors for its tally and its per-table appends, so it is
    computed once and no row passes through the driver."""

    spark: SparkSession
    name: ConnectorName = "native"

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
        if data.num_rows == 0:
            return WriteOutcome("empty")
        if table_holds_batch(table, commit):
            return WriteOutcome("skipped", rows=data.num_rows)
        self._append(self.spark.createDataFrame(data), table, commit)
        return WriteOutcome("written", rows=data.num_rows)

    def mark_batch(self, table: LocationLike, commit: BatchCommitInfo) -> WriteOutcome:
        if table_holds_batch(table, commit):
            return WriteOutcome("skipped")
        self._append(self.spark.read.format("delta").load(str(table)).limit(0), table, commit)
        return WriteOutcome("written")

    def write_routes(
        self, df: DataFrame, plan: WritePlan, before_commit: Callable[[FirstRowsFound], None] | None = None
    ) -> BatchReport:
        from pyspark.sql import functions as F

        df = df.persist()
        try:
            tallies, item_tallies = _tallies(df)
            if plan.halt_on_held_rows and any(route not in plan.tables for route in tallies):
                return BatchReport(tallies=tallies, halted=True, item_tallies=item_tallies)
            if before_commit is not None:
                before_commit(_first_rows(df, plan.first_rows) if plan.first_rows else {})
            tables: dict[str, TableReport] = {}

            def append(route: str) -> None:
                target = plan.tables[route]
                self._append(
                    _native_rows(df.where(F.col(ROUTE_COLUMN) == route), target, plan), target.path, plan.commit
                )

            for stage in plan.commit_stages:
                rows = {route: sum(tallies.get(route, {}).values()) for route in stage}
                written = [route for route in stage if rows[route]]
                if len(stage) <= SIDE_BY_SIDE_TABLES:
                    side_by_side(self.spark, append, written)
                else:
                    for route in written:
                        append(route)
                tables.update({route: _table_report(plan, route, n) for route, n in rows.items()})
            return BatchReport(tables=tables, tallies=tallies, item_tallies=item_tallies)
        finally:
            df.unpersist()

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


def create_native_table(
    spark: SparkSession,
    table: LocationLike,
    columns: StructType,
    configuration: Mapping[str, str] = TABLE_CONFIGURATION,
) -> None:
    """An empty table with `columns`, unless one exists, created by delta-spark: a log a kill cut
    short at creation is cleared first (pipeline/delta_connector/cut_short_creation.py)."""
    from delta.tables import DeltaTable as SparkDeltaTable

    if is_table(table):
        return
    clear_cut_short_creation(table)
    builder = SparkDeltaTable.createIfNotExists(spark).location(str(table)).addColumns(columns)
    for key, value in configuration.items():
        builder = builder.property(key, value)
    with SESSION_COMMITS:
        builder.execute()


def _tallies(df: DataFrame) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Rows per (route, tally value) and per (route, tally item), from one aggregation job: rows
    are grouped by their whole list of items, whose distinct lists are few (a table's rows
    differ only in the rules they fail), and the lists are counted out on the driver."""
    from pyspark.sql import functions as F

    tally = F.col(TALLY_COLUMN) if TALLY_COLUMN in df.columns else F.lit("")
    has_items = TALLY_ITEMS_COLUMN in df.columns
    keys = [F.col(ROUTE_COLUMN), tally.alias(TALLY_COLUMN)]
    if has_items:
        keys.append(F.col(TALLY_ITEMS_COLUMN))
    tallies: dict[str, dict[str, int]] = {}
    items: dict[str, dict[str, int]] = {}
    for row in df.groupBy(*keys).count().collect():
        route, rows = row[0], row["count"]
        counts = tallies.setdefault(route, {})
        counts[row[1] or ""] = counts.get(row[1] or "", 0) + rows
        for item in (row[TALLY_ITEMS_COLUMN] if has_items else None) or ():
            route_items = items.setdefault(route, {})
            route_items[item] = route_items.get(item, 0) + rows
    return tallies, items


def _table_report(plan: WritePlan, route: str, rows: int) -> TableReport:
    if not rows:
        return TableReport("empty")
    target = plan.tables[route]
    return TableReport(
        "written", rows, version=batch_version(target.path, plan.commit) if target.report_version else None
    )


def _first_rows(df: DataFrame, wanted: FirstRows) -> FirstRowsFound:
    """What the embedded sink's tasks find, as one aggregation job."""
    from pyspark.sql import functions as F

    rank = F.struct(*[F.col(name) for name in wanted.order_columns])
    firsts = (
        df.where(F.col(wanted.flag_column))
        .groupBy(*wanted.key_columns)
        .agg(F.min(rank).alias("rank"), F.min_by(wanted.value_column, rank).alias("value"))
        .collect()
    )
    return {tuple(row[name] for name in wanted.key_columns): (tuple(row["rank"]), row["value"]) for row in firsts}


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
