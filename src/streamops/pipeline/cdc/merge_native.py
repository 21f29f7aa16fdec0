"""One table's batch of changes applied with delta-spark MERGEs (the native connector).

The same decisions as the reference (pipeline/cdc/change_apply.py), computed in Spark so that no
row passes through the driver: the last change per key by a window, late upserts dropped by a
join with the deleted keys, the history's versions by a window over each key's fresh changes.
Then, in the embedded apply's order (history, deleted keys, current state), one write per
table, each txn-idempotent for (stream, batch id): the current state and the history take a
delta-spark MERGE each; the deleted keys take a blind append (`_append_deleted_keys`), since a
MERGE of them cost as much as the current state's (a join, and a rewrite of the files it
touches). delta-spark takes a MERGE's txn and commit metadata from session settings
(`spark.databricks.delta.write.txnAppId`, `txnVersion`, `commitInfo.userMetadata`): each MERGE
runs in a new session of the SparkContext that carries them (`_batch_session`), so the MERGEs
of different tables and groups run side by side and no other commit of the process can take a
batch's identity by mistake.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.file_stats import may_hold_older
from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.core.storage.location import Location
from streamops.pipeline.cdc import cdc_tables as tables
from streamops.pipeline.cdc.change_apply import (
    ACTION,
    EVENT_TIME,
    KEY,
    MATCH_FROM,
    OP,
    ORDER,
    SEQUENCE,
    VALID_FROM,
    VALID_FROM_TIME,
    VALID_TO,
    VALID_TO_TIME,
    BatchSummary,
)
from streamops.pipeline.cdc.debezium_envelope import TRUNCATE_KEY
from streamops.pipeline.cdc.merge_embedded import MergeCounts
from streamops.pipeline.delta_connector.batch_txn import table_holds_batch
from streamops.pipeline.delta_connector.connector import NativeDelta
from streamops.pipeline.delta_connector.native_checkpoints import (
    CHECKPOINT_EVERY,
    NATIVE_TABLE_CONFIGURATION,
    checkpoint_if_due,
)
from streamops.pipeline.delta_connector.native_commit import create_native_table
from streamops.pipeline.delta_connector.write_plan import ROUTE_COLUMN, TableTarget, WritePlan
from streamops.pipeline.lake_tables import table_access

if TYPE_CHECKING:
    from delta.tables import DeltaMergeBuilder
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

DIALECT: tables.Dialect = "spark"
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
MARKER = "_cdc_marker"
MARKERS_ROUTE = "markers"
HELD = "_cdc_held"


def apply_native(
    rows: DataFrame,
    target: tables.CdcTarget,
    commit: BatchCommitInfo,
    retention_seconds: float,
    summary: BatchSummary,
) -> MergeCounts:
    """Apply one table's typed changes (flat row columns + tables.CHANGE_COLUMNS + lineage),
    `summary` counted by the caller. Besides the MERGEs' own jobs, only the deleted keys' append,
    when the batch holds a delete or a truncate: the changes are decided inside the jobs that
    write them, and kept for the MERGE when the append read them first."""
    from pyspark.sql import functions as F

    spark = rows.sparkSession
    kept: list[DataFrame] = []

    def keep(frame: DataFrame) -> DataFrame:
        kept.append(frame.persist())
        return kept[-1]

    try:
        if target.history is not None:
            rows = keep(rows)
        deleted, truncated = _deleted_keys(spark, target.deleted_keys)
        truncates = list(summary.truncates)
        floor = max((s for s in (truncated, truncates[-1][0] if truncates else None) if s is not None), default=None)
        marked = rows.where(F.col(OP) != "t").join(deleted, KEY, "left")
        current = _last_per_key(marked)
        if floor is not None:
            current = current.where(F.col(SEQUENCE) > F.lit(floor))
        current = current.where((F.col(OP) == "d") | F.col(MARKER).isNull() | (F.col(MARKER) < F.col(SEQUENCE)))
        versions = 0
        newer = [t for t in truncates if truncated is None or t[0] > truncated]
        if target.history is not None:
            history = _history(spark, marked, target, truncated, truncates)
            versions = _merge_history(spark, history, target, newer[0] if newer else None, commit)
        if summary.deletes or newer:
            current = keep(current)
            newest = summary.newest_time
            cutoff = None if newest is None else _utc(newest.timestamp() - retention_seconds)
            _append_deleted_keys(spark, _markers(current, _marking(), newer), target.deleted_keys, cutoff, commit)
        truncate = truncates[-1][0] if truncates else None
        if truncate is None and not summary.row_changes:
            return MergeCounts(history_versions=versions)
        counts = _merge_current(spark, current.drop(MARKER, KEY, ORDER), target, truncate, commit)
        return MergeCounts(**counts, history_versions=versions, truncated=truncate is not None)
    finally:
        for frame in kept:
            frame.unpersist()


def _utc(seconds: float) -> datetime:
    """A moment as an aware UTC datetime (Spark hands timestamps back naive, in local time)."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _deleted_keys(spark: SparkSession, table: Location) -> tuple[DataFrame, str | None]:
    """(key, marker sequence) of the table's deleted keys, and its last truncate's sequence
    (read by delta-rs: a row per truncate recorded, no Spark job). The table is a log of
    markers: a key's marker is the newest of its rows."""
    from pyspark.sql import functions as F

    if not is_table(table):
        return spark.createDataFrame([], f"{KEY} string, {MARKER} string"), None
    whole = read_delta(table, columns=["sequence"], filters=[("key", "=", TRUNCATE_KEY)]).column(0).to_pylist()
    markers = spark.read.format("delta").load(str(table))
    keys = (
        markers.where(F.col("key") != TRUNCATE_KEY)
        .groupBy(F.col("key").alias(KEY))
        .agg(F.max("sequence").alias(MARKER))
    )
    return keys, max(whole, default=None)


def _last_per_key(changes: DataFrame) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest = Window.partitionBy(KEY).orderBy(F.col(SEQUENCE).desc(), F.col(ORDER).desc())
    return changes.withColumn("_rank", F.row_number().over(newest)).where(F.col("_rank") == 1).drop("_rank")


def _marking() -> Column:
    """Whether a decided row adds a marker: a delete newer than its key's marker. An upsert of a
    marked key leaves the marker (the reference removes it): every use of a marker compares it
    with a newer sequence, the upsert's, which the current state then holds, so an older marker
    decides nothing a removed one would not."""
    from pyspark.sql import functions as F

    return (F.col(OP) == "d") & (F.col(MARKER).isNull() | (F.col(MARKER) < F.col(SEQUENCE)))


def _markers(current: DataFrame, marking: Column, newer: list[tuple[str, Any]]) -> DataFrame:
    """The deleted keys' new markers: the rows `marking` picks, and the newest of the `newer`
    truncates (the whole table's marker)."""
    from pyspark.sql import functions as F

    marks = current.where(marking).select(
        *[F.col(change).alias(column) for column, change in tables.DELETED_KEYS_COLUMNS.items()]
    )
    if newer:
        whole = current.sparkSession.createDataFrame([(TRUNCATE_KEY, newer[-1][0], "t", newer[-1][1])], marks.schema)
        marks = marks.unionByName(whole)
    return marks


def _between(truncates: list[tuple[str, Any]], after: Column, before: Column) -> Column:
    """The first of the batch's truncates after `after` and before `before` (no limit when null)."""
    from pyspark.sql import functions as F

    if not truncates:
        return F.lit(None).cast("struct<s:string,t:timestamp>")
    candidates = F.array(*[F.struct(F.lit(s).alias("s"), F.lit(t).cast("timestamp").alias("t")) for s, t in truncates])
    return F.get(F.filter(candidates, lambda x: (x["s"] > after) & (before.isNull() | (x["s"] < before))), 0)


def _history(
    spark: SparkSession,
    marked: DataFrame,
    target: tables.CdcTarget,
    truncated: str | None,
    truncates: list[tuple[str, Any]],
) -> DataFrame:
    """The history's MERGE source (insert and close rows), as change_apply.history makes it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = list(target.keys)
    if is_table(target.current):
        held = spark.read.format("delta").load(str(target.current)).select(*keys, F.col(SEQUENCE).alias(HELD))
        marked = marked.join(held, keys, "left")
    else:
        marked = marked.withColumn(HELD, F.lit(None).cast("string"))
    state = F.greatest(F.coalesce(HELD, F.lit("")), F.coalesce(MARKER, F.lit("")), F.lit(truncated or ""))
    fresh = marked.where(F.col(SEQUENCE) > state)
    order = Window.partitionBy(KEY).orderBy(SEQUENCE, ORDER)
    fresh = (
        fresh.withColumn("_next", F.lead(SEQUENCE).over(order))
        .withColumn("_next_time", F.lead(EVENT_TIME).over(order))
        .withColumn("_first", F.row_number().over(order) == 1)
    )
    cut = _between(truncates, F.col(SEQUENCE), F.col("_next"))
    inserts = fresh.where(F.col(OP) != "d").select(
        "*",
        F.lit("insert").alias(ACTION),
        F.col(SEQUENCE).alias(MATCH_FROM),
        F.col(SEQUENCE).alias(VALID_FROM),
        F.col(EVENT_TIME).alias(VALID_FROM_TIME),
        F.coalesce(cut["s"], F.col("_next")).alias(VALID_TO),
        F.when(cut.isNotNull(), cut["t"]).otherwise(F.col("_next_time")).alias(VALID_TO_TIME),
    )
    before = _between(truncates, F.col(HELD), F.col(SEQUENCE))
    closes = fresh.where(F.col("_first") & F.col(HELD).isNotNull()).select(
        "*",
        F.lit("close").alias(ACTION),
        F.col(HELD).alias(MATCH_FROM),
        F.lit(None).cast("string").alias(VALID_FROM),
        F.lit(None).cast("timestamp").alias(VALID_FROM_TIME),
        F.coalesce(before["s"], F.col(SEQUENCE)).alias(VALID_TO),
        F.when(before.isNotNull(), before["t"]).otherwise(F.col(EVENT_TIME)).alias(VALID_TO_TIME),
    )
    columns = [
        c for c in inserts.columns if c not in ("_next", "_next_time", "_first", HELD, MARKER, KEY, ORDER, SEQUENCE)
    ]
    return inserts.select(*columns).unionByName(closes.select(*columns))


def _batch_session(spark: SparkSession, commit: BatchCommitInfo) -> SparkSession:
    """A session of its own for one MERGE, its settings carrying the batch's txn and identity:
    delta-spark takes them from the session running the MERGE (its API has no per-call options),
    so each MERGE gets a new session of the same SparkContext (no job, no copy of data) and the
    MERGEs of different tables run side by side with nothing set on a session another commit
    uses."""
    session = spark.newSession()
    session.conf.set(TXN_APP_ID, commit.stream)
    session.conf.set(TXN_VERSION, str(commit.batch_id))
    session.conf.set(USER_METADATA, commit.to_user_metadata())
    return session


def _create(
    spark: SparkSession, table: Location, schema: StructType, target: tables.CdcTarget | None, cdf: bool
) -> None:
    """Create `table` unless it exists; its columns marked as `target` says (None: unmarked)."""
    from pyspark.sql.types import StructField, StructType

    fields = [
        StructField(f.name, f.dataType, True, target.column_metadata(f.name) if target else {}) for f in schema.fields
    ]
    configuration = (
        {**tables.CDC_TABLE_CONFIGURATION, **NATIVE_TABLE_CONFIGURATION} if cdf else NATIVE_TABLE_CONFIGURATION
    )
    with table_access(table, "create"):
        create_native_table(spark, table, StructType(fields), configuration)


def _merger(source: DataFrame, table: Location, condition: str, commit: BatchCommitInfo) -> DeltaMergeBuilder:
    """A MERGE of `source` (alias `s`) into `table` (alias `t`) as batch `commit`'s."""
    from delta.tables import DeltaTable as SparkDeltaTable

    session = _batch_session(source.sparkSession, commit)
    return SparkDeltaTable.forPath(session, str(table)).alias("t").merge(source.alias("s"), condition)


def _merge_metrics(table: Location, before: int) -> dict[str, int]:
    """Rows the MERGE committed after version `before` inserted, updated and deleted (none when
    delta-spark skipped it: the table already held the batch)."""
    handle = open_table(table)
    if handle.version() == before:
        return {"inserted": 0, "updated": 0, "deleted": 0, "silver_version": None}
    metrics = handle.history(1)[0].get("operationMetrics") or {}
    return {
        "inserted": int(metrics.get("numTargetRowsInserted", 0)),
        "updated": int(metrics.get("numTargetRowsUpdated", 0)),
        "deleted": int(metrics.get("numTargetRowsDeleted", 0)),
        "silver_version": handle.version(),
    }


def _merge_current(
    spark: SparkSession, current: DataFrame, target: tables.CdcTarget, truncate: str | None, commit: BatchCommitInfo
) -> dict[str, Any]:
    columns = [c for c in current.columns if c not in tables.CURRENT_EXTRA] + list(tables.CURRENT_EXTRA)
    source = current.select(*columns)
    _create(spark, target.current, source.schema, target, cdf=True)
    if table_holds_batch(target.current, commit):
        return {"inserted": 0, "updated": 0, "deleted": 0, "silver_version": None}
    before = open_table(target.current).version()
    predicates = tables.current_predicates(DIALECT)
    with table_access(target.current, f"merge batch {commit.batch_id} into"):
        merger = (
            _merger(source, target.current, tables.keys_match(target.keys, DIALECT), commit)
            .withSchemaEvolution()
            .whenMatchedDelete(predicates["delete"])
            .whenMatchedUpdateAll(predicates["update"])
            .whenNotMatchedInsertAll(predicates["insert"])
        )
        if truncate is not None:
            merger = merger.whenNotMatchedBySourceDelete(tables.truncated_rows(truncate, DIALECT))
        merger.execute()
        checkpoint_if_due(spark, target.current)
    return _merge_metrics(target.current, before)


def _append_deleted_keys(
    spark: SparkSession, markers: DataFrame, table: Location, cutoff: datetime | None, commit: BatchCommitInfo
) -> None:
    """Record the batch's markers as the native connector appends silver rows (files written by
    the executors, one delta-spark transaction carrying the batch's txn), then, on a checkpoint's
    version (the commit checkpointed it, before the upkeep's commits move past it), the log's
    upkeep (`_deleted_keys_upkeep`).

    A replayed batch finds the same markers: the order is history, deleted keys, current state,
    and what the log adds for a batch are deletes that are each their key's last change in the
    batch, which the current state's MERGE applies whatever the markers say; the history's MERGE,
    the one source that reads markers to decide which changes are fresh, committed before the
    append, so a replay skips it by its txn."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    _create(spark, table, from_arrow_schema(tables.DELETED_KEYS_SCHEMA), None, cdf=False)
    names = tables.DELETED_KEYS_SCHEMA.names
    plan = WritePlan(
        commit=commit,
        tables={
            MARKERS_ROUTE: TableTarget(
                str(table), columns={n: n for n in names}, report_version=True, files_in_checksum=True
            )
        },
        commit_stages=((MARKERS_ROUTE,),),
        report_path="",
    )
    with table_access(table, f"append batch {commit.batch_id} to"):
        report = NativeDelta(spark).write_routes(markers.select(F.lit(MARKERS_ROUTE).alias(ROUTE_COLUMN), *names), plan)
        written = report.tables.get(MARKERS_ROUTE)
        if written is not None and written.version is not None and written.version % CHECKPOINT_EVERY == 0:
            _deleted_keys_upkeep(spark, table, cutoff)


UPKEEP_SMALL_FILE_BYTES = 16 * 1024 * 1024
"""Files of the deleted keys under this size are compacted together; larger ones are left, so an
upkeep rewrites what the appends added since the last, not the whole log."""


def _deleted_keys_upkeep(spark: SparkSession, table: Location, cutoff: datetime | None) -> None:
    """Drop the markers of deletes older than `cutoff` (only when the files' statistics say one
    may be), then compact the appends' small files. Neither changes what the log decides, so
    they carry no batch identity, and a crash between them leaves the next upkeep to finish."""
    from delta.tables import DeltaTable as SparkDeltaTable

    session = spark.newSession()
    session.conf.set("spark.databricks.delta.optimize.minFileSize", str(UPKEEP_SMALL_FILE_BYTES))
    log = SparkDeltaTable.forPath(session, str(table))
    if cutoff is not None and may_hold_older(open_table(table), "deleted_at", cutoff):
        log.delete(tables.expired_deleted_keys(cutoff.isoformat(), DIALECT, alias=""))
    log.optimize().executeCompaction()


def _merge_history(
    spark: SparkSession,
    history: DataFrame,
    target: tables.CdcTarget,
    closes_all: tuple[str, Any] | None,
    commit: BatchCommitInfo,
) -> int:
    assert target.history is not None
    own = [c for c in history.columns if c not in tables.HISTORY_EXTRA and c not in tables.HISTORY_HELPERS]
    columns = own + list(tables.HISTORY_EXTRA)
    _create(spark, target.history, history.select(*columns).schema, target, cdf=True)
    if table_holds_batch(target.history, commit):
        return 0
    _add_columns(spark, target.history, history.select(*columns))
    before = open_table(target.history).version()
    predicates = tables.history_predicates(DIALECT)
    inserted = tables.source_values(columns, DIALECT)
    with table_access(target.history, f"merge batch {commit.batch_id} into"):
        merger = (
            _merger(history, target.history, tables.history_match(target.keys, DIALECT), commit)
            .whenMatchedUpdate(predicates["close"], tables.close_values(DIALECT))
            .whenNotMatchedInsert(predicates["insert"], inserted)
        )
        if closes_all is not None:
            end = tables.truncate_close_values(closes_all[0], closes_all[1].isoformat(), DIALECT)
            merger = merger.whenNotMatchedBySourceUpdate(tables.open_versions_before(closes_all[0], DIALECT), end)
        merger.execute()
        checkpoint_if_due(spark, target.history)
    return _merge_metrics(target.history, before)["inserted"]


def _add_columns(spark: SparkSession, table: Location, rows: DataFrame) -> None:
    """Columns the history lacks, added by a metadata-only commit (its MERGE assigns each column
    by name, which delta-spark's schema evolution does not extend to new ones)."""
    present = set(spark.read.format("delta").load(str(table)).columns)
    if set(rows.columns) <= present:
        return
    rows.limit(0).write.format("delta").mode("append").option("mergeSchema", "true").save(str(table))
