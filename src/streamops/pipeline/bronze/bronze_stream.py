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
from streamops.core.lake_layout import BRONZE_EVENTS_TABLE, BRONZE_STREAM, LakeLayout
from streamops.pipeline.bronze.bronze_classifier import RecordLimits
from streamops.pipeline.bronze.events_mode import EVENTS
from streamops.pipeline.bronze.ingest_mode import IngestMode
from streamops.pipeline.bronze.kafka_retention import loss_rows
from streamops.pipeline.bronze.line_sources import LineInput
from streamops.pipeline.delta_connector.batch_report import BatchReport, FirstRowsFound
from streamops.pipeline.delta_connector.write_plan import (
    BATCH_ID_VALUE,
    INGEST_TIME_VALUE,
    ROUTE_COLUMN,
    STREAM_VALUE,
    TALLY_COLUMN,
    TALLY_ITEMS_COLUMN,
    TEXT_SUFFIX,
    FirstRows,
    TableTarget,
    WritePlan,
)
from streamops.pipeline.exceptions import ExpectationFailedError, IncompatibleSchemaError
from streamops.pipeline.expectations.counts_table import (
    ExpectationCount,
    counts_rows,
    expectation_counts,
    fail_rule_stop_line,
    failing_fail_rules,
)
from streamops.pipeline.expectations.rule_columns import TableRules, column_rule_selects, counted, rule_outcome
from streamops.pipeline.expectations.rules import Expectation
from streamops.pipeline.lake_tables import BRONZE_RULE_COLUMNS, BRONZE_SCHEMA, QUARANTINE_SCHEMA, table_access
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
    expectations: tuple[Expectation, ...] = ()
    """Data-quality rules on bronze's rows, checked in the pass that writes them."""


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
        on_policy_stop: Callable[[IncompatibleSchemaError], None] | None = None,
    ) -> None:
        """`on_policy_stop` hears of a stop by a `fail` rule before the batch raises it (as a
        silver group's writer does)."""
        self.lake = lake
        self.connector = connector
        self.registry = registry
        self.events = events
        self.settings = settings
        self.after_batch = after_batch
        self.on_policy_stop = on_policy_stop
        self.rules = TableRules(BRONZE_EVENTS_TABLE, 0, settings.expectations)
        """Every rule applies: bronze's columns are known before the run, which refuses a rule
        naming another (rule_checks.check_expectations)."""
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
            self._routes = (known, bronze_routes(known, prototype_column=self._prototype, rules=self.rules.applicable))
        registered: list[Registration] = []

        def register(first_rows: FirstRowsFound) -> None:
            registration = self.registry.register(
                spark, self.connector, new_variations(first_rows), next_version, commit
            )
            registered.append(registration)
            if registration.rejected:
                raise VariationsRejected()

        plan = bronze_plan(self.lake, commit, ingest_time, self.rules)
        try:
            report = self.connector.write_routes(
                projected(df, self._routes[1]), replace(plan, first_rows=self.first_rows), register
            )
        except VariationsRejected:
            rejected = registered[-1].rejected
            routes = bronze_routes(known, rejected, self._prototype, self.rules.applicable)
            report = self.connector.write_routes(projected(df, routes), plan)
        counts = self._expectation_counts(report, commit)
        result = BronzeBatchResult(
            batch_id=batch_id,
            bronze_rows=report.rows(EVENTS_ROUTE),
            quarantined={r: n for r, n in report.tallies.get(QUARANTINE_ROUTE, {}).items() if n},
            new_variations=len(registered[-1].entries) if registered else 0,
            kafka_lost=lost,
            expectations=counts,
        )
        events = report.tables.get(EVENTS_ROUTE)
        self.events.bronze_committed(result, events.newest if events is not None else None)
        if self.after_batch:
            self.after_batch(result)

    def _expectation_counts(self, report: BatchReport, commit: BatchCommitInfo) -> tuple[ExpectationCount, ...]:
        """The batch's counts per rule, written to `_system/expectations`; the stop when rows
        failed a `fail` rule (the batch wrote nothing)."""
        if not self.rules.applicable:
            return ()
        tallies = {BRONZE_EVENTS_TABLE: report.tallies.get(EVENTS_ROUTE, {})}
        events = report.tables.get(EVENTS_ROUTE)
        counts = expectation_counts(
            counted(tallies, report.item_tallies, {BRONZE_EVENTS_TABLE}),
            {BRONZE_EVENTS_TABLE: self.rules},
            {BRONZE_EVENTS_TABLE: events.version if events is not None else None},
        )
        if report.halted:
            stop = ExpectationFailedError(
                fail_rule_stop_line("bronze", failing_fail_rules(counts), commit.batch_id), BRONZE_STREAM
            )
            if self.on_policy_stop is not None:
                self.on_policy_stop(stop)
            raise stop
        if counts:
            self.connector.write_batch(
                self.lake.expectations, counts_rows(counts, BRONZE_STREAM, commit.batch_id), commit
            )
        return counts

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
HALT_ROUTE = "halt"
"""Lines failing a `fail` rule: not a table, so the batch writes nothing."""
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


def bronze_plan(lake: LakeLayout, commit: BatchCommitInfo, ingest_time: datetime, rules: TableRules) -> WritePlan:
    """Quarantine and bronze commit at the same time, each under the batch's txn: a replay after
    a crash that committed one of them writes only the other. (In sequence, the quarantine's
    delta-spark append, whatever its size, added a second to every native batch.) A row failing
    a `fail` rule holds the whole batch back."""
    events = TableTarget(
        str(lake.bronze_events),
        columns=EVENT_COLUMNS,
        time_column="event_time",
        report_version=bool(rules.applicable),
    )
    return WritePlan(
        commit=commit,
        tables={
            QUARANTINE_ROUTE: TableTarget(str(lake.bronze_quarantine), columns=QUARANTINE_COLUMNS),
            EVENTS_ROUTE: events,
        },
        commit_stages=((QUARANTINE_ROUTE, EVENTS_ROUTE),),
        report_path="",
        halt_on_held_rows=bool(rules.names("fail")),
        ingest_time_us=(ingest_time - EPOCH) // timedelta(microseconds=1),
    )


INPUT_COLUMNS = (
    "event_type",
    "event_id",
    "event_time",
    "schema_hash",
    "payload",
    "source_file",
    "source_mtime",
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
    "kafka_key",
    "quarantine_reason",
    "quarantine_detail",
)
"""The classified line's columns the routes read (with the prototype column, if any)."""
RULE_ORDER = ("source_mtime", "source_file", "kafka_partition", "kafka_offset", LINE_COLUMN)
"""Arrival order of a batch's lines, which a `unique` rule keeps the first of."""


def rule_columns() -> dict[str, Column]:
    """Bronze's table columns a rule may name (BRONZE_RULE_COLUMNS), over a classified line's
    columns: the payload as the text bronze keeps, the Kafka timestamp where bronze takes it."""
    from pyspark.sql import functions as F

    made = {
        "payload": F.col("payload").cast("string"),
        "kafka_timestamp": F.when(F.col("kafka_topic").isNotNull(), F.col("source_mtime")),
    }
    return {name: made[name] if name in made else F.col(name) for name in BRONZE_RULE_COLUMNS}


def projected(lines: DataFrame, selects: list[tuple[Column, ...]]) -> DataFrame:
    for columns in selects:
        lines = lines.select(*columns)
    return lines


def bronze_routes(
    known: Iterable[tuple[str, str]],
    rejected: Mapping[tuple[str, str], str] | None = None,
    prototype_column: str | None = None,
    rules: tuple[Expectation, ...] = (),
) -> list[tuple[Column, ...]]:
    """The projection of a classified line into a bronze or quarantine row (`_route`), flagged
    when its variation is not in `known`: one select, or three when `rules` are evaluated (the
    first two write the rules a line fails, rule_columns.column_rule_selects). A line travels to
    the sink once: as text for bronze, as bytes for quarantine (which may not be UTF-8). Rows of
    a variation the registry rejected go to quarantine as `unprocessable`; a line bound for
    bronze that fails a `drop` rule goes to quarantine as `expectation`, one failing a `fail`
    rule holds the batch. `prototype_column` travels along when the registry learns variations
    from it rather than from the payload. Built once while the known variations stay the same
    (Columns hold no data; each costs Py4J calls)."""
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
    selects: list[tuple[Column, ...]] = []
    line, items = F.monotonically_increasing_id(), None
    if rules:
        working = (*INPUT_COLUMNS, *([prototype_column] if prototype_column else []), LINE_COLUMN)
        numbered = tuple(F.col(name) for name in working[:-1]) + (line.alias(LINE_COLUMN),)
        selects += [numbered, *column_rule_selects(rules, working, rule_columns(), RULE_ORDER)]
        line = F.col(LINE_COLUMN)
        route = F.when(reason.isNull(), F.lit(EVENTS_ROUTE)).otherwise(F.lit(QUARANTINE_ROUTE))
        outcome = rule_outcome(
            reason.isNull(),
            F.lit(BRONZE_EVENTS_TABLE),
            route,
            reason,
            detail,
            HALT_ROUTE,
            QUARANTINE_ROUTE,
            {rule.action for rule in rules},
        )
        reason, detail, items = outcome.reason, outcome.detail, outcome.items
        route = outcome.route
    else:
        route = F.when(reason.isNull(), F.lit(EVENTS_ROUTE)).otherwise(F.lit(QUARANTINE_ROUTE))
    new = reason.isNull() & ~is_in(key_sql, (f"{t}{KEY_SEPARATOR}{h}" for t, h in known))
    selects.append(
        (
            route.alias(ROUTE_COLUMN),
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
            line.alias(LINE_COLUMN),
            new.alias(NEW_VARIATION_COLUMN),
            *([items.alias(TALLY_ITEMS_COLUMN)] if rules else []),
            *([F.col(prototype_column)] if prototype_column else []),
        )
    )
    return selects


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
