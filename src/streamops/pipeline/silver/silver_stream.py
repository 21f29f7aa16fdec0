"""A silver group stream: bronze -> one typed Delta table per event type of its group.

Every batch resolves the group's event types and their applied schemas from the registry
(re-read only when it changed) and hands Spark one write job for all of them: the executors
read each payload with Spark's `from_json` and its type's applied schema (streamops.pipeline.silver.payload_parser),
and the sink's tasks split the rows by event type, flatten nested structs into `parent__child`
columns (dlt's convention), add lineage columns that tie each row to its bronze batch and
landing file, and write one file per table; the commit makes one txn-idempotent commit per
table (appId = this stream). Only counts come back to the driver.

Fields a variation's table cannot hold (a type change, a widening, a colliding name) are kept
in the row's `_rescued_data` and alerted (on_incompatible="rescue", the default), or the
variation's rows are quarantined and alerted ("quarantine"), or the group stops ("fail_group").
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal

from streamops.core.lake_layout import LakeLayout, silver_stream
from streamops.pipeline.delta_connector.batch_report import BatchReport
from streamops.pipeline.delta_connector.write_plan import (
    BATCH_ID_VALUE,
    BYTES_SUFFIX,
    ROUTE_COLUMN,
    STREAM_VALUE,
    TALLY_COLUMN,
    TALLY_ITEMS_COLUMN,
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
from streamops.pipeline.expectations.rule_columns import (
    EXPECTATION_REASON,
    FAILED_COLUMN,
    KEYS_COLUMN,
    RuleOutcome,
    RuleResolver,
    RuleScope,
    TableRules,
    counted,
    counted_by_key,
    held_rows,
    rule_outcome,
    rule_scopes,
    rule_selects,
    rule_struct,
)
from streamops.pipeline.expectations.rules import NO_EXPECTATIONS, ExpectationSet
from streamops.pipeline.pipeline_events import PipelineEvents, SilverBatchResult
from streamops.pipeline.records.column_names import LINEAGE_COLUMNS, RESCUED_DATA_COLUMN
from streamops.pipeline.registry.event_groups import DEFAULT_TYPES_PER_GROUP
from streamops.pipeline.registry.schema_alerts import AlertAction, SchemaAlert, alert_rows
from streamops.pipeline.registry.silver_schemas import GroupSchemas, SilverSchema
from streamops.pipeline.runtime.batch_context import batch_commit_info
from streamops.pipeline.runtime.batch_function import batch_function
from streamops.pipeline.runtime.sql_literals import is_in
from streamops.pipeline.silver.group_rows import group_row_filter
from streamops.pipeline.silver.payload_parser import (
    PICKED_FIELD,
    TYPED_FIELD,
    parse_layers,
    rescued_data,
    typed_and_picked,
    typed_payload,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from streamops.core.delta_format.commit_metadata import BatchCommitInfo
    from streamops.pipeline.delta_connector.connector import DeltaConnector

OnIncompatible = Literal["rescue", "quarantine", "fail_group"]
ON_INCOMPATIBLE: tuple[OnIncompatible, ...] = ("rescue", "quarantine", "fail_group")
QUARANTINE_ROUTE = "__quarantine__"
HALT_ROUTE = "__halt__"
"""Rows of an unfit variation under fail_group, or failing a `fail` rule: not a table, so the
batch writes nothing."""
log = logging.getLogger(__name__)
ACTION_OF: dict[OnIncompatible, AlertAction] = {
    "rescue": "rescued",
    "quarantine": "quarantined",
    "fail_group": "group_failed",
}
TALLY_SEPARATOR = "\x00"
TYPED_COLUMN = "_typed_payload"
QUARANTINE_COLUMNS = {
    "stream": STREAM_VALUE,
    "batch_id": BATCH_ID_VALUE,
    "reason": "_q_reason",
    "detail": "_q_detail",
    "event_type": "event_type",
    "schema_hash": "_schema_hash",
    "raw_text": "payload",
    "raw_bytes": "payload" + BYTES_SUFFIX,
    "source_file": "_source_file",
    "ingest_time": "_ingest_time",
}


POLL_SECONDS = 1.0
"""How often the streams that read what bronze commits (the silver groups, the management stream)
look for a new commit, at most every trigger. Spark starts processing-time batches on multiples
of the interval, so with the trigger's interval a silver batch would start with bronze's, just
before bronze commits, and its rows would wait a whole interval for the next. Polling every
second starts a batch within a second of each bronze commit, still one batch per commit in
steady flow (BENCHMARKS.md, "Silver follows bronze"). A poll that finds no new
commit lists the log from its newest entry: on an object store, a listing a second per stream."""


@dataclass(frozen=True)
class SilverSettings:
    types_per_group: int = DEFAULT_TYPES_PER_GROUP
    on_incompatible: OnIncompatible = "rescue"
    trigger_seconds: float = 5.0
    max_files_per_trigger: int = 1000
    available_now: bool = False
    poll_seconds: float = POLL_SECONDS
    expectations: ExpectationSet = field(default=NO_EXPECTATIONS, compare=False)
    """Data-quality rules the group's tables are checked against, in the pass that writes them."""

    def interval(self) -> float:
        """The processing-time trigger of a stream that follows bronze's commits."""
        return min(self.trigger_seconds, self.poll_seconds)


class GroupWriter(ABC):
    """The foreachBatch function of a group's stream: event tables (SilverGroupWriter) or CDC
    tables (pipeline/cdc/cdc_stream.py's CdcGroupWriter). Both read the group's schemas as of the
    batch, skip a batch before the group has any, and write each commit with the batch's identity."""

    def __init__(
        self,
        lake: LakeLayout,
        connector: DeltaConnector,
        group: str,
        settings: SilverSettings,
        events: PipelineEvents,
        on_policy_stop: Callable[[IncompatibleSchemaError], None] | None = None,
    ) -> None:
        """`on_policy_stop` hears of a fail_group stop before the batch raises it: the query's
        exception reaches its owner through Py4J as text, without the Python type."""
        self.lake = lake
        self.connector = connector
        self.group = group
        self.stream = silver_stream(group)
        self.settings = settings
        self.events = events
        self.on_policy_stop = on_policy_stop
        self._schemas = GroupSchemas(lake.schema_registry, lake.event_groups, group, settings.types_per_group)
        self._rules: dict[tuple[str, int], TableRules] = {}
        """The rules of each table as of a schema version (which of them its columns resolve)."""
        self._resolver: RuleResolver | None = None

    def schemas(self) -> dict[str, SilverSchema]:
        """Applied schema of every event type this group serves, as of now."""
        return self._schemas.read()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        schemas = self.schemas()
        if not schemas:
            return
        self.process(
            df, schemas, batch_commit_info(df.sparkSession, self.stream, batch_id, self.lake.checkpoint(self.stream))
        )

    @abstractmethod
    def process(self, bronze: DataFrame, schemas: dict[str, SilverSchema], commit: BatchCommitInfo) -> None:
        """Write the batch's rows and report what was written to `self.events`."""

    def table_rules(self, spark: SparkSession, schemas: dict[str, SilverSchema]) -> dict[str, TableRules]:
        """The rules of each table that has any, as of its schema version; a rule its columns do
        not resolve is logged once per table, rule and schema version."""
        found = {}
        for table, schema in sorted(schemas.items()):
            rules = self.settings.expectations.for_table(table)
            if not rules:
                continue
            key = (table, schema.schema_version)
            if key not in self._rules:
                if self._resolver is None:
                    self._resolver = RuleResolver(spark)
                self._rules[key] = self._resolver.table_rules(table, schema.schema_version, schema.applied, rules)
                for rule in self._rules[key].not_applicable:
                    log.warning(
                        "%s: expectation `%s` is not applicable to table `%s` at schema version %d: "
                        "it names a column the table does not have",
                        self.stream,
                        rule.name,
                        table,
                        schema.schema_version,
                    )
            found[table] = self._rules[key]
        return found

    def stop_for(
        self, alerts: list[SchemaAlert], counts: tuple[ExpectationCount, ...], batch_id: int, fix: str
    ) -> IncompatibleSchemaError:
        """The stop of a batch that held rows back: for the `fail` rules its rows failed, unless
        an unfit variation stopped it under fail_group (`alerts`, already written); told to
        `on_policy_stop`; the caller raises it."""
        failing = failing_fail_rules(counts)
        if not failing or any(a.action == "group_failed" for a in alerts):
            return self.policy_stop(alerts, fix)
        stop = ExpectationFailedError(fail_rule_stop_line(f"group `{self.group}`", failing, batch_id), self.stream)
        if self.on_policy_stop is not None:
            self.on_policy_stop(stop)
        return stop

    def policy_stop(self, alerts: list[SchemaAlert], fix: str) -> IncompatibleSchemaError:
        """The fail_group stop for `alerts` (already written), told to `on_policy_stop`; the caller raises it."""
        stop = IncompatibleSchemaError(
            f"group `{self.group}` stopped on an incompatible schema change "
            f"({'; '.join(sorted({a.describe() for a in alerts}))}); see _system/schema_alerts, "
            f"then restart it with on_incompatible=rescue or {fix}",
            self.stream,
        )
        if self.on_policy_stop is not None:
            self.on_policy_stop(stop)
        return stop


class SilverGroupWriter(GroupWriter):
    """The foreachBatch function of one group's stream: one Spark job, metadata back."""

    _routes: tuple[dict[str, SilverSchema], SilverRoutes] | None = None
    """The routing expressions of the schemas last seen (rebuilt when the schemas change)."""

    def process(self, bronze: DataFrame, schemas: dict[str, SilverSchema], commit: BatchCommitInfo) -> None:
        self.events.silver_committed(self.write(bronze, schemas, commit), schemas)

    def write(self, bronze: DataFrame, schemas: dict[str, SilverSchema], commit: BatchCommitInfo) -> SilverBatchResult:
        if self._routes is None or self._routes[0] is not schemas:
            rules = self.table_rules(bronze.sparkSession, schemas)
            self._routes = (schemas, silver_routes(schemas, self.settings.on_incompatible, rules))
        routes = self._routes[1]
        if routes.shuffles:
            # A `unique` rule's window shuffles the batch; adaptive execution would run that
            # shuffle as a Spark job of its own before the write's, and the batch has no other
            # shuffle for it to tune. The session is the query's own (Structured Streaming clones
            # one per query), so no other query is affected.
            bronze.sparkSession.conf.set("spark.sql.adaptive.enabled", "false")
        rows = routes.of(bronze)
        return self.finish(self.connector.write_routes(rows, self.plan(schemas, commit, routes)), schemas, commit)

    def plan(self, schemas: dict[str, SilverSchema], commit: BatchCommitInfo, routes: SilverRoutes) -> WritePlan:
        extra = {RESCUED_DATA_COLUMN: RESCUED_DATA_COLUMN, **{name: name for name in LINEAGE_COLUMNS}}
        tables = {
            event_type: TableTarget(
                str(self.lake.silver(event_type)),
                rows="typed_json",
                columns=extra,
                schema=schema.applied,
                payload_column=TYPED_COLUMN,
                reject_route=QUARANTINE_ROUTE,
                time_column="_event_time",
                report_version=event_type in routes.rules,
            )
            for event_type, schema in schemas.items()
        }
        tables[QUARANTINE_ROUTE] = TableTarget(str(self.lake.bronze_quarantine), columns=QUARANTINE_COLUMNS)
        return WritePlan(
            commit=commit,
            tables=tables,
            commit_stages=((QUARANTINE_ROUTE,), tuple(sorted(schemas))),
            report_path="",
            halt_on_held_rows=self.settings.on_incompatible == "fail_group" or routes.can_fail,
        )

    def finish(
        self, report: BatchReport, schemas: dict[str, SilverSchema], commit: BatchCommitInfo
    ) -> SilverBatchResult:
        """Alerts for the unfit variations the batch met, then the fail_group stop, if any."""
        alerts = self._alerts(report, schemas)
        if alerts:
            self.connector.write_batch(
                self.lake.schema_alerts, alert_rows(alerts, self.stream, commit.batch_id), commit
            )
        rules = self._routes[1].rules if self._routes is not None else {}
        versions = {table: written.version for table, written in report.tables.items()}
        counts = expectation_counts(counted(report.tallies, report.item_tallies, set(rules)), rules, versions)
        if report.halted:
            raise self.stop_for(alerts, counts, commit.batch_id, "fix the producer")
        if counts:
            self.connector.write_batch(
                self.lake.expectations, counts_rows(counts, self.stream, commit.batch_id), commit
            )
        written = {t: report.tables[t] for t in schemas if t in report.tables and report.rows(t)}
        return SilverBatchResult(
            group=self.group,
            batch_id=commit.batch_id,
            rows_by_type={t: table.rows for t, table in written.items()},
            max_event_time={t: table.newest for t, table in written.items() if table.newest is not None},
            quarantined=quarantine_reasons(report),
            alerts=tuple(alerts),
            expectations=counts,
        )

    def _alerts(self, report: BatchReport, schemas: dict[str, SilverSchema]) -> list[SchemaAlert]:
        alerts = []
        for counts in report.tallies.values():
            for tally, rows in sorted(counts.items()):
                if TALLY_SEPARATOR not in tally:
                    continue
                action, event_type, variation = tally.split(TALLY_SEPARATOR)
                schema = schemas[event_type]
                alerts += [
                    SchemaAlert(
                        event_type=event_type,
                        field=change.path,
                        old_type=change.old_type or "",
                        new_type=change.new_type,
                        variation_hash=variation,
                        first_bronze_version=schema.variation_first_bronze_version[variation],
                        rows_affected=rows,
                        action=action,  # type: ignore[arg-type]
                    )
                    for change in schema.unfit[variation]
                ]
        return alerts


def quarantine_reasons(report: BatchReport) -> dict[str, int]:
    """Rows the batch quarantined by reason: those drop rules held out, and those of variations
    their tables cannot hold."""
    dropped = held_rows(report.item_tallies.get(QUARANTINE_ROUTE, {}))
    reasons = {EXPECTATION_REASON: dropped, "incompatible_type": report.rows(QUARANTINE_ROUTE) - dropped}
    return {reason: rows for reason, rows in reasons.items() if rows}


@dataclass(frozen=True)
class SilverRoutes:
    """The projection that turns a group's bronze rows into silver routes, as Spark Columns: a
    filter, then one select, or a few when rules are evaluated (pipeline/expectations/rule_columns.py).

    Built once per change of the group's schemas and applied to every batch: a Column holds no
    data, and building one costs a Py4J call per function (for 64 event types, hundreds of them,
    each a reflective lookup in the JVM), a noticeable share of a short batch."""

    condition: Column
    selects: tuple[tuple[Column, ...], ...]
    rules: dict[str, TableRules] = field(default_factory=dict)
    """The rules of each table that has any."""

    @property
    def can_fail(self) -> bool:
        return any(rules.names("fail") for rules in self.rules.values())

    @property
    def shuffles(self) -> bool:
        return judged_in_a_window(self.rules)

    def of(self, bronze: DataFrame) -> DataFrame:
        rows = bronze.where(self.condition)
        for columns in self.selects:
            rows = rows.select(*columns)
        return rows


def silver_routes(
    schemas: dict[str, SilverSchema], on_incompatible: OnIncompatible, rules: dict[str, TableRules] | None = None
) -> SilverRoutes:
    """Each of the group's bronze rows with its table (`_route`), its payload as Spark reads it
    with its type's applied schema, its rescued fields and lineage columns; with `rules`, the
    rules of its table evaluated (drop: its route is the quarantine; fail: the halt route)."""
    from pyspark.sql import functions as F

    rules = rules or {}
    event_type, schema_hash, payload = F.col("event_type"), F.col("schema_hash"), F.col("payload")
    unfit = unfit_variation(schemas, event_type, schema_hash)
    action = ACTION_OF[on_incompatible]
    tally = F.when(unfit.isNotNull(), F.concat_ws(TALLY_SEPARATOR, F.lit(action), event_type, schema_hash))
    if on_incompatible == "rescue":
        route: Column = event_type
    else:
        held = F.lit(QUARANTINE_ROUTE if on_incompatible == "quarantine" else HALT_ROUTE)
        route = F.when(unfit.isNotNull(), held).otherwise(event_type)
    rescued = (
        rescued_data(schemas, event_type, schema_hash, payload, F.col("source_file"))
        if on_incompatible == "rescue"
        else F.lit(None).cast("string")
    )
    lineage = [F.col(source).alias(name) for name, source in LINEAGE_COLUMNS.items()]
    reason = F.when(unfit.isNotNull(), F.lit("incompatible_type"))
    condition = is_in("event_type", schemas)
    if not rules:
        columns = (
            route.alias(ROUTE_COLUMN),
            tally.alias(TALLY_COLUMN),
            event_type,
            payload,
            typed_payload(schemas, "event_type", schema_hash, payload).alias(TYPED_COLUMN),
            rescued.alias(RESCUED_DATA_COLUMN),
            *lineage,
            reason.alias("_q_reason"),
            unfit.alias("_q_detail"),
        )
        return SilverRoutes(condition, (columns,))
    typed_first = not judged_in_a_window(rules)
    parsed, scopes = rule_layers(schemas, rules, event_type, payload, typed_first)
    covered = {t for members, _ in parsed.values() for t in members}
    first = (
        route.alias(ROUTE_COLUMN),
        tally.alias(TALLY_COLUMN),
        event_type,
        schema_hash,
        payload,
        rescued.alias(RESCUED_DATA_COLUMN),
        *lineage,
        reason.alias("_q_reason"),
        unfit.alias("_q_detail"),
        F.lit(None).cast("array<string>").alias(FAILED_COLUMN),
        F.lit(None).cast("array<string>").alias(KEYS_COLUMN),
        *[struct.alias(name) for name, (_, struct) in parsed.items()],
        *(
            [typed_payload(schemas, "event_type", schema_hash, payload, covered).alias(TYPED_COLUMN)]
            if typed_first
            else []
        ),
    )
    working = (
        *([TYPED_COLUMN] if typed_first else []),
        ROUTE_COLUMN,
        TALLY_COLUMN,
        "event_type",
        "schema_hash",
        "payload",
        RESCUED_DATA_COLUMN,
        *LINEAGE_COLUMNS,
        "_q_reason",
        "_q_detail",
        FAILED_COLUMN,
        KEYS_COLUMN,
        *parsed,
    )
    return SilverRoutes(
        condition,
        (
            first,
            *([_typed_from_layers(working, parsed)] if typed_first else []),
            *rule_selects(scopes, working, "event_type"),
            _routed_by_rules(schemas, rules, typed_first),
        ),
        rules,
    )


def _typed_from_layers(
    working: tuple[str, ...], parsed: dict[str, tuple[tuple[str, ...], Column]]
) -> tuple[Column, ...]:
    """The select after the first where each layer's one parse served the rules' fields and the
    typed payload (payload_parser.typed_and_picked): the layer's column becomes the rules' struct
    and a row's typed payload is its layer's, but for an unfit variation (a `_q_detail`), whose
    typed payload the first select read apart. It references each layer's column twice, so
    Spark keeps it a select of its own rather than evaluate the parse twice."""
    from pyspark.sql import functions as F

    typed = F.col(TYPED_COLUMN)
    from_layers = F.coalesce(*[F.col(name).getField(TYPED_FIELD) for name in parsed], typed)
    made = {
        TYPED_COLUMN: F.when(F.col("_q_detail").isNull(), from_layers).otherwise(typed),
        **{name: F.col(name).getField(PICKED_FIELD) for name in parsed},
    }
    return tuple(made.get(name, F.col(name)).alias(name) for name in working)


def judged_in_a_window(rules: dict[str, TableRules]) -> bool:
    """Whether a `unique` rule of `rules` is evaluated per row (a window over the batch's rows by
    key, which shuffles them), not counted by key (rule_columns.counted_by_key)."""
    return any(
        rule.unique and not counted_by_key(rule, tables.applicable)
        for tables in rules.values()
        for rule in tables.applicable
    )


def rule_layers(
    schemas: dict[str, SilverSchema],
    rules: dict[str, TableRules],
    event_type: Column,
    payload: Column,
    typed: bool = False,
) -> tuple[dict[str, tuple[tuple[str, ...], Column]], list[RuleScope]]:
    """The parse layers (payload_parser.parse_layers) holding tables with rules to evaluate, each
    with the struct of the fields its rules may name read into a column, and their scopes; with
    `typed`, that struct beside the layer's typed payload, from one parse
    (payload_parser.typed_and_picked; the caller picks them apart).

    Only those fields: a struct column is written into every row the projection passes on, and
    a layer's whole union (hundreds of fields, mostly null in any one row) cost more to write
    and read back than the rules to evaluate (BENCHMARKS.md)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    parsed: dict[str, tuple[tuple[str, ...], Column]] = {}
    scopes: list[RuleScope] = []
    for index, (members, union) in enumerate(parse_layers({t: s.applied for t, s in schemas.items()})):
        checked = tuple(rules[t] for t in members if t in rules and rules[t].applicable)
        if not checked:
            continue
        name = f"_layer_{index}"
        named = rule_struct(union, checked)
        if typed:
            struct = typed_and_picked(payload, union, named)
        else:
            struct = F.from_json(payload, StructType.fromJson(named)) if named["fields"] else F.lit(None)
        parsed[name] = (tuple(members), F.when(is_in("event_type", members), struct))
        scopes += rule_scopes(name, union, checked, {t.table: schemas[t.table].applied for t in checked})
    return parsed, scopes


def _routed_by_rules(
    schemas: dict[str, SilverSchema], rules: dict[str, TableRules], typed_first: bool
) -> tuple[Column, ...]:
    """The last select: each row with the route, quarantine reason and tally items its table's
    rules give it (rule_columns.rule_outcome), and its typed payload. That is read in the first
    select (`typed_first`), beside the rules' parse, so that this one has only expressions Spark
    generates code for and joins the rules' stage (a select outside it copies every row once
    more); but where a `unique` rule evaluated per row shuffles and sorts the rows, here, so the
    shuffled rows carry one JSON text, not two.

    A row its table's rules evaluated is one whose FAILED_COLUMN a scope wrote (a table without
    an applicable rule has none, and its rows' outcome would be the same either way): testing
    that, not the event type against every table with rules, keeps a list of hundreds of names
    out of an expression this select uses nine times, which Spark analyses every batch."""
    from pyspark.sql import functions as F

    event_type, route = F.col("event_type"), F.col(ROUTE_COLUMN)
    outcome = table_rules_outcome((route == event_type) & F.col(FAILED_COLUMN).isNotNull(), rules, F.col(KEYS_COLUMN))
    return (
        outcome.route.alias(ROUTE_COLUMN),
        F.col(TALLY_COLUMN),
        event_type,
        F.col("payload"),
        (
            F.col(TYPED_COLUMN)
            if typed_first
            else typed_payload(schemas, "event_type", F.col("schema_hash"), F.col("payload"))
        ).alias(TYPED_COLUMN),
        F.col(RESCUED_DATA_COLUMN),
        *[F.col(name) for name in LINEAGE_COLUMNS],
        outcome.reason.alias("_q_reason"),
        outcome.detail.alias("_q_detail"),
        outcome.items.alias(TALLY_ITEMS_COLUMN),
    )


def table_rules_outcome(evaluated: Column, rules: dict[str, TableRules], keys: Column | None = None) -> RuleOutcome:
    """rule_outcome of a group's rows (silver's or CDC's) whose tables have `rules`: rows with
    `event_type`, their route, `_q_reason` and `_q_detail`, a fail rule's rows halting the group
    and a drop rule's going to the quarantine."""
    from pyspark.sql import functions as F

    return rule_outcome(
        evaluated,
        F.col("event_type"),
        F.col(ROUTE_COLUMN),
        F.col("_q_reason"),
        F.col("_q_detail"),
        HALT_ROUTE,
        QUARANTINE_ROUTE,
        {rule.action for table in rules.values() for rule in table.applicable},
        keys,
    )


def unfit_variation(schemas: dict[str, SilverSchema], event_type: Column, schema_hash: Column) -> Column:
    """Per row: what its variation's table cannot hold (`player.level: long -> string`), or null."""
    from pyspark.sql import functions as F

    details = {
        (t, h): "; ".join(f"{c.path}: {c.old_type} -> {c.new_type}" for c in changes)
        for t, schema in schemas.items()
        for h, changes in schema.unfit.items()
    }
    if not details:
        return F.lit(None).cast("string")
    key = F.concat_ws(TALLY_SEPARATOR, event_type, schema_hash)
    return F.create_map(*[F.lit(x) for (t, h), d in sorted(details.items()) for x in (f"{t}{TALLY_SEPARATOR}{h}", d)])[
        key
    ]


BRONZE_READ_OPTIONS = {"ignoreDeletes": "true"}
"""Bronze is append-only: a commit that only removes files from it (`streamops lake fsck --yes`
dropping damaged files, a retention delete) is not carried to silver, which keeps its rows."""


def start_silver_group(
    spark: SparkSession,
    lake: LakeLayout,
    connector: DeltaConnector,
    writer: GroupWriter,
) -> StreamingQuery:
    settings = writer.settings
    stream = (
        connector.read_stream(
            spark,
            lake.bronze_events,
            {"maxFilesPerTrigger": str(settings.max_files_per_trigger), **BRONZE_READ_OPTIONS},
            row_filter=group_row_filter(lake, writer.group),
        )
        .writeStream.queryName(writer.stream)
        .foreachBatch(batch_function(writer))
        .option("checkpointLocation", str(lake.checkpoint(writer.stream)))
    )
    stream = (
        stream.trigger(availableNow=True)
        if settings.available_now
        else stream.trigger(processingTime=f"{settings.interval()} seconds")
    )
    return stream.start()
