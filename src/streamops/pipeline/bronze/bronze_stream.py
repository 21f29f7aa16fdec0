"""The bronze stream: the lines of its input (landing files, Kafka records) -> bronze/events,
bronze/quarantine, schema registry.

Each micro-batch is read, classified and written in one Spark job: its tasks write the bronze
and quarantine files and report, besides the files, the first line of each schema variation the
registry does not know (its prototype). Then the driver commits in a fixed order: schema
registry first (so no bronze row's schema is ever unknown downstream), then quarantine, then
bronze. Every commit is txn-idempotent for (appId "bronze", batch id): a batch replayed after a
crash at any point between those commits writes only what is missing. If the registry rejects a
variation, the written files are deleted and the batch is written again with that variation's
lines routed to quarantine (rare: a second job only then). Invariant: bronze rows + quarantine
rows = input lines.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from streamops.core.checkpoint_format.kafka_positions import LostRange
from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import open_table
from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout
from streamops.pipeline.bronze.bronze_classifier import RecordLimits
from streamops.pipeline.bronze.events_mode import EVENTS
from streamops.pipeline.bronze.ingest_mode import IngestMode
from streamops.pipeline.bronze.kafka_retention import loss_rows
from streamops.pipeline.bronze.line_sources import LineInput
from streamops.pipeline.delta_connector.batch_report import FirstRowsFound
from streamops.pipeline.delta_connector.write_plan import (
    BATCH_ID_VALUE,
    INGEST_TIME_VALUE,
    ROUTE_COLUMN,
    STREAM_VALUE,
    TALLY_COLUMN,
    TEXT_SUFFIX,
    FirstRows,
    TableTarget,
    WritePlan,
)
from streamops.pipeline.lake_tables import BRONZE_SCHEMA, QUARANTINE_SCHEMA, table_access
from streamops.pipeline.pipeline_events import BronzeBatchResult, PipelineEvents
from streamops.pipeline.registry.schema_registry import REGISTRY_STAGE, NewVariation, Registration, SchemaRegistry
from streamops.pipeline.runtime.batch_context import batch_commit_info
from streamops.pipeline.runtime.batch_function import batch_function
from streamops.pipeline.runtime.sql_literals import is_in, string_literal

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from streamops.pipeline.delta_connector.connector import DeltaConnector


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class BronzeSettings:
    """Where bronze reads its lines (`input`) and what they are (`mode`)."""

    input: LineInput
    mode: IngestMode = EVENTS
    trigger_seconds: float = 5.0
    limits: RecordLimits = RecordLimits()
    available_now: bool = False


class BronzeBatchWriter:
    """The foreachBatch function of the bronze stream: Spark jobs and metadata, no rows."""

    def __init__(
        self,
        lake: LakeLayout,
        connector: DeltaConnector,
        registry: SchemaRegistry,
        events: PipelineEvents,
        settings: BronzeSettings,
        after_batch: Callable[[BronzeBatchResult], None] | None = None,
    ) -> None:
        self.lake = lake
        self.connector = connector
        self.registry = registry
        self.events = events
        self.settings = settings
        self.after_batch = after_batch
        self._prototype = settings.mode.prototype_column
        self.first_rows = replace(FIRST_ROWS, value_column=self._prototype) if self._prototype else FIRST_ROWS
        self._routes: tuple[frozenset[tuple[str, str]], list[Column]] | None = None

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        spark = df.sparkSession
        commit = batch_commit_info(spark, BRONZE_STREAM, batch_id, self.lake.checkpoint(BRONZE_STREAM))
        ingest_time = datetime.now(timezone.utc)
        with table_access(self.lake.bronze_events, "read"):
            next_version = open_table(self.lake.bronze_events).version() + 1
        lost = self._record_loss(df, commit)
        known = frozenset(self.registry.known())
        if self._routes is None or self._routes[0] != known:
            self._routes = (known, bronze_routes(known, prototype_column=self._prototype))
        registered: list[Registration] = []

        def register(first_rows: FirstRowsFound) -> None:
            registration = self.registry.register(
                spark, self.connector, new_variations(first_rows), next_version, commit
            )
            registered.append(registration)
            if registration.rejected:
                raise VariationsRejected()

        plan = replace(bronze_plan(self.lake, commit, ingest_time), first_rows=self.first_rows)
        try:
            report = self.connector.write_routes(df.select(*self._routes[1]), plan, register)
        except VariationsRejected:
            rejected = registered[-1].rejected
            report = self.connector.write_routes(
                df.select(*bronze_routes(known, rejected, self._prototype)), bronze_plan(self.lake, commit, ingest_time)
            )
        result = BronzeBatchResult(
            batch_id=batch_id,
            bronze_rows=report.rows(EVENTS_ROUTE),
            quarantined={r: n for r, n in report.tallies.get(QUARANTINE_ROUTE, {}).items() if n},
            new_variations=len(registered[-1].entries) if registered else 0,
            kafka_lost=lost,
        )
        events = report.tables.get(EVENTS_ROUTE)
        self.events.bronze_committed(result, events.newest if events is not None else None)
        if self.after_batch:
            self.after_batch(result)

    def _record_loss(self, df: DataFrame, commit: BatchCommitInfo) -> tuple[LostRange, ...]:
        """What the batch was planned to read and the input no longer held, each range recorded."""
        lost = self.settings.input.lost_in_batch(df, commit)
        if lost:
            self.connector.write_batch(self.lake.kafka_data_loss, loss_rows(lost, commit), commit)
        return tuple(lost)


class VariationsRejected(Exception):
    """The registry rejected some of the batch's new variations: their lines go to quarantine."""


def new_variations(first_rows: FirstRowsFound) -> list[NewVariation]:
    """Unknown variations, each with its first line, in arrival order.

    Arrival is (file modification time, file path, position in the file): a landing file is
    read by one task in line order, so Spark's monotonically increasing id orders its lines,
    and a replay of the batch plans the same files into the same tasks.
    """
    ordered = sorted(first_rows.items(), key=lambda item: item[1][0])
    return [NewVariation(event_type, schema_hash, prototype) for (event_type, schema_hash), (_, prototype) in ordered]


KEY_SEPARATOR = "\x00"
NEW_VARIATION_COLUMN = "_new_variation"
LINE_COLUMN = "_line"
FIRST_ROWS = FirstRows(
    flag_column=NEW_VARIATION_COLUMN,
    key_columns=("event_type", "schema_hash"),
    order_columns=("source_mtime", "source_file", LINE_COLUMN),
    value_column="payload_text",
)
"""The first line of each variation the registry does not know: its prototype."""
EVENTS_ROUTE = "events"
QUARANTINE_ROUTE = "quarantine"
KAFKA_COLUMNS = {
    name: name for name in ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp", "kafka_key")
}
"""The Kafka record a bronze or quarantine row came from (null for a landing file's line)."""
EVENT_COLUMNS = {
    "event_type": "event_type",
    "event_id": "event_id",
    "event_time": "event_time",
    "schema_hash": "schema_hash",
    "payload": "payload_text",
    "ingest_time": INGEST_TIME_VALUE,
    "source_file": "source_file",
    "batch_id": BATCH_ID_VALUE,
    **KAFKA_COLUMNS,
}
QUARANTINE_COLUMNS = {
    "stream": STREAM_VALUE,
    "batch_id": BATCH_ID_VALUE,
    "reason": TALLY_COLUMN,
    "detail": "detail",
    "event_type": "event_type",
    "schema_hash": "schema_hash",
    "raw_text": "payload" + TEXT_SUFFIX,
    "raw_bytes": "payload",
    "source_file": "source_file",
    "ingest_time": INGEST_TIME_VALUE,
    **KAFKA_COLUMNS,
}


def bronze_plan(lake: LakeLayout, commit: BatchCommitInfo, ingest_time: datetime) -> WritePlan:
    """Quarantine and bronze commit at the same time, each under the batch's txn: a replay after
    a crash that committed one of them writes only the other. (In sequence, the quarantine's
    delta-spark append, whatever its size, added a second to every native batch.)"""
    return WritePlan(
        commit=commit,
        tables={
            QUARANTINE_ROUTE: TableTarget(str(lake.bronze_quarantine), columns=QUARANTINE_COLUMNS),
            EVENTS_ROUTE: TableTarget(str(lake.bronze_events), columns=EVENT_COLUMNS, time_column="event_time"),
        },
        commit_stages=((QUARANTINE_ROUTE, EVENTS_ROUTE),),
        report_path="",
        ingest_time_us=(ingest_time - EPOCH) // timedelta(microseconds=1),
    )


def bronze_routes(
    known: Iterable[tuple[str, str]],
    rejected: Mapping[tuple[str, str], str] | None = None,
    prototype_column: str | None = None,
) -> list[Column]:
    """The projection of a classified line into a bronze or quarantine row (`_route`), flagged
    when its variation is not in `known`. A line travels to the sink once: as text for bronze,
    as bytes for quarantine (which may not be UTF-8). Rows of a variation the registry rejected
    go to quarantine as `unprocessable`. `prototype_column` travels along when the registry
    learns variations from it rather than from the payload. Built once while the known
    variations stay the same (Columns hold no data; each costs Py4J calls)."""
    from pyspark.sql import functions as F

    key_sql = f"concat_ws({string_literal(KEY_SEPARATOR)}, event_type, schema_hash)"
    key = F.expr(key_sql)
    reason, detail = F.col("quarantine_reason"), F.col("quarantine_detail")
    if rejected:
        why = F.create_map(
            *[
                F.lit(x)
                for (t, h), d in sorted(rejected.items())
                for x in (f"{t}{KEY_SEPARATOR}{h}", f"stage {REGISTRY_STAGE}: {d}")
            ]
        )[key]
        reason = F.coalesce(reason, F.when(why.isNotNull(), F.lit("unprocessable")))
        detail = F.coalesce(detail, why)
    new = reason.isNull() & ~is_in(key_sql, (f"{t}{KEY_SEPARATOR}{h}" for t, h in known))
    return [
        F.when(reason.isNull(), F.lit(EVENTS_ROUTE)).otherwise(F.lit(QUARANTINE_ROUTE)).alias(ROUTE_COLUMN),
        reason.alias(TALLY_COLUMN),
        detail.alias("detail"),
        F.col("event_type"),
        F.col("event_id"),
        F.col("event_time"),
        F.col("schema_hash"),
        F.when(reason.isNotNull(), F.col("payload")).alias("payload"),
        F.when(reason.isNull(), F.col("payload").cast("string")).alias("payload_text"),
        F.col("source_file"),
        F.col("source_mtime"),
        F.col("kafka_topic"),
        F.col("kafka_partition"),
        F.col("kafka_offset"),
        F.when(F.col("kafka_topic").isNotNull(), F.col("source_mtime")).alias("kafka_timestamp"),
        F.col("kafka_key"),
        F.monotonically_increasing_id().alias(LINE_COLUMN),
        new.alias(NEW_VARIATION_COLUMN),
        *([F.col(prototype_column)] if prototype_column else []),
    ]


def create_bronze_tables(lake: LakeLayout, connector: DeltaConnector) -> None:
    connector.create_table(lake.bronze_events, BRONZE_SCHEMA)
    connector.create_table(lake.bronze_quarantine, QUARANTINE_SCHEMA)


def classified_lines(spark: SparkSession, settings: BronzeSettings) -> DataFrame:
    """The input as a stream of classified lines (CLASSIFIED_SCHEMA with `event_time`)."""
    from pyspark.sql import functions as F

    return (
        settings.mode.classify(spark, settings.input.lines(spark, settings.limits.max_record_bytes), settings.limits)
        .withColumn("event_time", F.expr("try_to_timestamp(event_time_text)"))
        .drop("event_time_text")
    )


def start_bronze(spark: SparkSession, lake: LakeLayout, writer: BronzeBatchWriter) -> StreamingQuery:
    settings = writer.settings
    settings.input.prepare(lake.checkpoint(BRONZE_STREAM), BRONZE_STREAM)
    create_bronze_tables(lake, writer.connector)
    stream = (
        classified_lines(spark, settings)
        .writeStream.queryName(BRONZE_STREAM)
        .foreachBatch(batch_function(writer))
        .option("checkpointLocation", str(lake.checkpoint(BRONZE_STREAM)))
    )
    if settings.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{settings.trigger_seconds} seconds")
    return stream.start()
