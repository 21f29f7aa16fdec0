"""A CDC group stream: bronze changes -> each source table's current state (and history).

The group's stream reads bronze like an event group's (same checkpoint, same `silver_<group>`
name, the same event groups and registry), but each batch MERGEs instead of appending:

1. the bronze rows of the group's tables are read back into changes (pipeline/cdc/change_reader.py)
   and typed with each table's applied schema from the registry, unfit fields rescued into
   `_rescued_data` as in event silver tables (or, by policy, quarantined or the group stopped);
2. a change that cannot be applied (its key columns are not its table's, or it is not a change
   at all) goes to bronze/quarantine with a reason;
3. each table's changes are applied by the connector's own MERGEs (pipeline/cdc/table_merges.py:
   merge_embedded.py or merge_native.py), the tables of the batch side by side; then the schema
   alerts and one `_system/cdc_applies` row per table are written, txn-idempotent like every
   commit of the batch.

A table's key is fixed when its silver table is created (its key columns carry the column
metadata `streamops.cdc.key`): `--cdc-keys`, else the key columns of the table's first change.
So is its order (`_cdc_sequence` carries `streamops.cdc.sequence_by`): `--cdc-sequence`, else
the source position.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable

import pyarrow as pa

from streamops.core.delta_format.read import is_table, open_table
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.cdc import cdc_tables as tables
from streamops.pipeline.cdc.cdc_settings import CdcSettings
from streamops.pipeline.cdc.change_apply import EVENT_TIME, ORDER, SEQUENCE, BatchSummary
from streamops.pipeline.cdc.change_reader import (
    CHANGE_SCHEMA,
    DETAIL,
    IMAGE,
    KEY_COLUMNS,
    KEY_SEPARATOR,
    READ_COLUMNS,
    REASON,
    ChangeReader,
)
from streamops.pipeline.cdc.debezium_envelope import UPSERT_OPS, declared_for
from streamops.pipeline.cdc.merge_embedded import MergeCounts
from streamops.pipeline.cdc.table_merges import TableMerges
from streamops.pipeline.delta_connector.flat_columns import flat_columns
from streamops.pipeline.delta_connector.write_plan import ROUTE_COLUMN, TALLY_ITEMS_COLUMN, TableTarget, WritePlan
from streamops.pipeline.exceptions import IncompatibleSchemaError, PipelineConfigError
from streamops.pipeline.expectations.counts_table import ExpectationCount, counts_rows, expectation_counts
from streamops.pipeline.expectations.rule_columns import (
    FAILED_COLUMN,
    TableCounts,
    TableRules,
    counted,
    rule_selects,
)
from streamops.pipeline.lake_tables import table_access
from streamops.pipeline.pipeline_events import CdcBatchResult, CdcTableApply, PipelineEvents
from streamops.pipeline.records.column_names import LINEAGE_COLUMNS, RESCUED_DATA_COLUMN, column_name
from streamops.pipeline.registry.schema_alerts import SchemaAlert, alert_rows
from streamops.pipeline.registry.silver_schemas import SilverSchema
from streamops.pipeline.runtime.spark_threads import side_by_side
from streamops.pipeline.runtime.sql_literals import is_in
from streamops.pipeline.silver.payload_parser import rescued_data, typed_payload
from streamops.pipeline.silver.silver_stream import (
    ACTION_OF,
    HALT_ROUTE,
    QUARANTINE_COLUMNS,
    QUARANTINE_ROUTE,
    TYPED_COLUMN,
    GroupWriter,
    SilverSettings,
    rule_layers,
    table_rules_outcome,
    unfit_variation,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from streamops.core.delta_format.commit_metadata import BatchCommitInfo
    from streamops.pipeline.delta_connector.connector import DeltaConnector


EVALUATED_COLUMN = "_expect_evaluated"
"""Whether a change's table evaluated its rules on it (an upsert bound for the table)."""


@dataclass(frozen=True)
class RoutedCount:
    route: str
    table: str
    schema_hash: str | None
    reason: str | None
    rows: int
    oldest: datetime | None
    newest: datetime | None
    evaluated: bool = False
    """Whether its table's rules were evaluated on these changes (upserts bound for the table)."""
    items: tuple[str, ...] = ()
    """Their tally items: the rules they failed (rule_columns.tally_items)."""
    deletes: int = 0
    truncates: tuple[tuple[str, datetime], ...] = ()
    """Their truncates (sequence, source time), in order."""


class CdcGroupWriter(GroupWriter):
    """The foreachBatch function of one CDC group's stream."""

    def __init__(
        self,
        lake: LakeLayout,
        connector: DeltaConnector,
        group: str,
        settings: SilverSettings,
        cdc: CdcSettings,
        events: PipelineEvents,
        on_policy_stop: Callable[[IncompatibleSchemaError], None] | None = None,
    ) -> None:
        super().__init__(lake, connector, group, settings, events, on_policy_stop)
        self.cdc = cdc
        self._recorded: dict[str, tuple[tuple[str, ...] | None, str]] = {}

    def process(self, bronze: DataFrame, schemas: dict[str, SilverSchema], commit: BatchCommitInfo) -> None:
        self.events.cdc_applied(self.apply(bronze, schemas, commit))

    def apply(self, bronze: DataFrame, schemas: dict[str, SilverSchema], commit: BatchCommitInfo) -> CdcBatchResult:
        from pyspark.sql import functions as F

        changes = (
            bronze.where(F.col("event_type").isin(sorted(schemas)))
            .select(*READ_COLUMNS)
            .mapInArrow(ChangeReader(self.cdc.keys, self.cdc.sequences), CHANGE_SCHEMA)
            .withColumn(ORDER, F.monotonically_increasing_id())
            .persist()
        )
        kept = [changes]
        try:
            keys = self.table_keys(changes, schemas)
            rules = self.table_rules(bronze.sparkSession, schemas)
            routed = changes
            for columns in _routes(schemas, keys, self.settings, rules):
                routed = routed.select(*columns)
            routed = routed.persist()
            kept.append(routed)
            counts = _counts(routed, bool(rules))
            alerts = _alerts(counts, schemas, self.settings)
            evaluated = _evaluated(counts, rules)
            if any(c.route == HALT_ROUTE for c in counts):
                self._halt(alerts, expectation_counts(evaluated, rules, {}), commit)
            quarantined: dict[str, int] = {}
            for count in (c for c in counts if c.route == QUARANTINE_ROUTE):
                quarantined[count.reason or ""] = quarantined.get(count.reason or "", 0) + count.rows
            if quarantined:
                self.connector.write_routes(routed.where(F.col(ROUTE_COLUMN) == QUARANTINE_ROUTE), self._plan(commit))
            applied = self._apply_tables(routed, schemas, keys, counts, commit)
            if alerts:
                self.connector.write_batch(
                    self.lake.schema_alerts, alert_rows(alerts, self.stream, commit.batch_id), commit
                )
            if applied:
                self.connector.write_batch(self.lake.cdc_applies, _apply_rows(applied, commit), commit)
            versions = {a.table: done.silver_version for a, done in applied}
            checked = expectation_counts(evaluated, rules, versions)
            if checked:
                self.connector.write_batch(
                    self.lake.expectations, counts_rows(checked, self.stream, commit.batch_id), commit
                )
            return CdcBatchResult(
                self.group, commit.batch_id, tuple(a for a, _ in applied), quarantined, tuple(alerts), checked
            )
        finally:
            for frame in kept:
                frame.unpersist()

    def table_keys(self, changes: DataFrame, schemas: dict[str, SilverSchema]) -> dict[str, tuple[str, ...]]:
        """Each table's key columns: recorded in its silver table, else declared, else its first
        change's in this batch. A declaration that contradicts the table (its key, or the column its
        changes are ordered by) is a one-line error."""
        from pyspark.sql import functions as F

        keys: dict[str, tuple[str, ...]] = {}
        for table in schemas:
            recorded, ordered_by = self._recorded_table(table) or (None, None)
            declared, wanted_order = declared_for(self.cdc.keys, table), self._sequence_by(table)
            if recorded and declared and recorded != declared:
                raise PipelineConfigError(
                    f"table `{table}` is keyed by ({', '.join(recorded)}) in the lake, but --cdc-keys declares "
                    f"({', '.join(declared)}): a table's key is fixed when its silver table is created"
                )
            if ordered_by is not None and ordered_by != wanted_order:
                raise PipelineConfigError(
                    f"table `{table}` is ordered by {_ordering(ordered_by)} in the lake, but this run orders it by "
                    f"{_ordering(wanted_order)}: a table's order is fixed when its silver table is created"
                )
            found = recorded or declared
            if found:
                keys[table] = found
        unknown = sorted(t for t in schemas if t not in keys)
        if unknown:
            firsts = (
                changes.where(
                    F.col("event_type").isin(unknown) & F.col(REASON).isNull() & F.col(KEY_COLUMNS).isNotNull()
                )
                .groupBy("event_type")
                .agg(F.min_by(KEY_COLUMNS, F.struct(SEQUENCE, ORDER)).alias("keys"))
                .collect()
            )
            keys.update({row["event_type"]: tuple(row["keys"].split(KEY_SEPARATOR)) for row in firsts})
        return keys

    def _recorded_table(self, table: str) -> tuple[tuple[str, ...] | None, str] | None:
        """(key columns, ordering) the table's silver table records; None before it exists."""
        if table not in self._recorded:
            location = self.lake.silver(table)
            with table_access(location, "read"):
                if not is_table(location):
                    return None
                fields = [(f.name, f.metadata) for f in open_table(location).schema().fields]
            self._recorded[table] = (tables.recorded_keys(fields), tables.recorded_sequence(fields))
        return self._recorded[table]

    def _sequence_by(self, table: str) -> str:
        return declared_for(self.cdc.sequences, table) or ""

    def _plan(self, commit: BatchCommitInfo) -> WritePlan:
        return WritePlan(
            commit=commit,
            tables={QUARANTINE_ROUTE: TableTarget(str(self.lake.bronze_quarantine), columns=QUARANTINE_COLUMNS)},
            commit_stages=((QUARANTINE_ROUTE,),),
            report_path="",
        )

    def _halt(self, alerts: list[SchemaAlert], counts: tuple[ExpectationCount, ...], commit: BatchCommitInfo) -> None:
        if alerts:
            self.connector.write_batch(
                self.lake.schema_alerts, alert_rows(alerts, self.stream, commit.batch_id), commit
            )
        raise self.stop_for(alerts, counts, commit.batch_id, "fix the source")

    def _apply_tables(
        self,
        routed: DataFrame,
        schemas: dict[str, SilverSchema],
        keys: dict[str, tuple[str, ...]],
        counts: list[RoutedCount],
        commit: BatchCommitInfo,
    ) -> list[tuple[CdcTableApply, MergeCounts]]:
        by_table: dict[str, list[RoutedCount]] = {}
        for count in counts:
            if count.route not in (QUARANTINE_ROUTE, HALT_ROUTE):
                by_table.setdefault(count.route, []).append(count)

        def apply(table: str) -> tuple[CdcTableApply, MergeCounts]:
            columns = [column_name(k) for k in keys[table]]
            target = tables.CdcTarget.of(self.lake, table, tuple(columns), self.cdc.history, self._sequence_by(table))
            rows = routed.where(routed[ROUTE_COLUMN] == table).select(*_typed_columns(schemas[table]))
            seen = by_table[table]
            oldest = min((c.oldest for c in seen if c.oldest), default=None)
            newest = max((c.newest for c in seen if c.newest), default=None)
            changes = sum(c.rows for c in seen)
            truncates = tuple(sorted(t for c in seen for t in c.truncates))
            summary = BatchSummary(changes - len(truncates), sum(c.deletes for c in seen), truncates, newest)
            done = self._merge(rows, target, summary, commit)
            return CdcTableApply(
                table=table,
                changes=changes,
                inserted=done.inserted,
                updated=done.updated,
                deleted=done.deleted,
                ignored=max(0, changes - done.inserted - done.updated - done.deleted),
                truncated=done.truncated,
                history_versions=done.history_versions,
                oldest_source_time=oldest.timestamp() if oldest else None,
                newest_source_time=newest.timestamp() if newest else None,
                committed_at=time.time(),
            ), done

        return side_by_side(routed.sparkSession, apply, sorted(by_table))

    def _merge(
        self, rows: DataFrame, target: tables.CdcTarget, summary: BatchSummary, commit: BatchCommitInfo
    ) -> MergeCounts:
        merges = TableMerges(target, commit, self.cdc.deleted_keys_retention_seconds, summary)
        return self.connector.merge(rows, merges)


def _ordering(sequence_by: str) -> str:
    return f"`{sequence_by}` (--cdc-sequence)" if sequence_by else "its source position"


def _routes(
    schemas: dict[str, SilverSchema],
    keys: dict[str, tuple[str, ...]],
    settings: SilverSettings,
    rules: dict[str, TableRules],
) -> list[tuple[Column, ...]]:
    """The selects that give each change its route (its table, quarantine or halt), the reason
    and detail it is quarantined with, its typed row and its rescued fields: one, or more when
    `rules` are evaluated. A table's rules check the row an upsert (insert, update, snapshot
    read) would write; a delete or truncate writes no row and is not checked."""
    from pyspark.sql import functions as F

    columns = _route_columns(schemas, keys, settings)
    if not rules:
        return [tuple(columns)]
    event_type, route = F.col("event_type"), F.col(ROUTE_COLUMN)
    parsed, scopes = rule_layers(schemas, rules, event_type, F.col(IMAGE))
    first = (
        *columns,
        F.lit(None).cast("array<string>").alias(FAILED_COLUMN),
        *[struct.alias(name) for name, (_, struct) in parsed.items()],
    )
    names = [ROUTE_COLUMN, "_q_reason", "_q_detail", "event_type", "payload", TYPED_COLUMN, RESCUED_DATA_COLUMN]
    names += [*tables.CHANGE_COLUMNS, *LINEAGE_COLUMNS]
    working = (*names, FAILED_COLUMN, *parsed)
    upsert = F.col(tables.OP).isin(sorted(UPSERT_OPS))
    evaluated = (route == event_type) & is_in("event_type", rules) & upsert
    outcome = table_rules_outcome(evaluated, rules)
    made = {ROUTE_COLUMN: outcome.route, "_q_reason": outcome.reason, "_q_detail": outcome.detail}
    last = (
        *[made[name].alias(name) if name in made else F.col(name) for name in names],
        evaluated.alias(EVALUATED_COLUMN),
        outcome.items.alias(TALLY_ITEMS_COLUMN),
    )
    return [first, *rule_selects(scopes, working, "event_type"), last]


def _route_columns(
    schemas: dict[str, SilverSchema], keys: dict[str, tuple[str, ...]], settings: SilverSettings
) -> list[Column]:
    """Each change with its route, quarantine reason and detail, typed row and rescued fields."""
    from pyspark.sql import functions as F

    event_type, schema_hash, image = F.col("event_type"), F.col("schema_hash"), F.col(IMAGE)
    wanted = F.create_map(*[F.lit(x) for t, k in sorted(keys.items()) for x in (t, KEY_SEPARATOR.join(k))])[event_type]
    wrong_key = F.col(REASON).isNull() & (
        wanted.isNull() | ((F.col(tables.OP) != "t") & ~F.col(KEY_COLUMNS).eqNullSafe(wanted))
    )
    unfit = unfit_variation(schemas, event_type, schema_hash)
    policy = settings.on_incompatible
    reason = F.coalesce(
        F.col(REASON),
        F.when(wrong_key, F.lit("cdc_missing_key")),
        F.when(unfit.isNotNull() & F.lit(policy == "quarantine"), F.lit("incompatible_type")),
    )
    detail = F.coalesce(
        F.col(DETAIL),
        F.when(
            wrong_key,
            F.concat(
                F.lit("key columns ("), F.coalesce(F.col(KEY_COLUMNS), F.lit("")), F.lit(") are not the table's ("),
                F.coalesce(wanted, F.lit("none known")), F.lit(")"),
            ),
        ),
        F.when(reason.isNotNull(), unfit),
    )  # fmt: skip
    route = (
        F.when(reason.isNotNull(), F.lit(QUARANTINE_ROUTE))
        .when(unfit.isNotNull() & F.lit(policy == "fail_group"), F.lit(HALT_ROUTE))
        .otherwise(event_type)
    )
    rescued = (
        rescued_data(schemas, event_type, schema_hash, image, F.col("source_file"))
        if policy == "rescue"
        else F.lit(None).cast("string")
    )
    return [
        route.alias(ROUTE_COLUMN),
        reason.alias("_q_reason"),
        detail.alias("_q_detail"),
        event_type,
        F.col("payload"),
        typed_payload(schemas, "event_type", schema_hash, image).alias(TYPED_COLUMN),
        rescued.alias(RESCUED_DATA_COLUMN),
        *[F.col(c) for c in tables.CHANGE_COLUMNS],
        *[F.col(source).alias(name) for name, source in LINEAGE_COLUMNS.items()],
    ]


def _typed_columns(schema: SilverSchema) -> list[Column]:
    """A table's changes as flat typed columns, the change columns, lineage and rescued data."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    parsed = F.from_json(F.col(TYPED_COLUMN), StructType.fromJson(schema.applied))
    return [
        *flat_columns(parsed, schema.applied),
        *[F.col(c) for c in tables.CHANGE_COLUMNS],
        *[F.col(name) for name in LINEAGE_COLUMNS],
        F.col(RESCUED_DATA_COLUMN),
    ]


def _counts(routed: DataFrame, with_rules: bool) -> list[RoutedCount]:
    """The batch's changes counted by route, table, variation, reason and (`with_rules`) the
    rules they failed: one job, which also counts the rules and finds what each table's apply
    needs to know before deciding (its deletes, truncates and newest source time)."""
    from pyspark.sql import functions as F

    by = [ROUTE_COLUMN, "event_type", "_schema_hash", "_q_reason"]
    by += [EVALUATED_COLUMN, TALLY_ITEMS_COLUMN] if with_rules else []
    truncate = F.when(F.col(tables.OP) == "t", F.struct(F.col(SEQUENCE).alias("s"), F.col(EVENT_TIME).alias("t")))
    rows = (
        routed.groupBy(*by)
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.min(EVENT_TIME).alias("oldest"),
            F.max(EVENT_TIME).alias("newest"),
            F.count(F.when(F.col(tables.OP) == "d", 1)).alias("deletes"),
            F.collect_list(truncate).alias("truncates"),
        )
        .collect()
    )
    return [
        RoutedCount(
            r[ROUTE_COLUMN],
            r["event_type"],
            r["_schema_hash"],
            r["_q_reason"],
            r["rows"],
            r["oldest"],
            r["newest"],
            evaluated=bool(with_rules and r[EVALUATED_COLUMN]),
            items=tuple(r[TALLY_ITEMS_COLUMN] or ()) if with_rules else (),
            deletes=r["deletes"],
            truncates=tuple(sorted((t["s"], t["t"]) for t in r["truncates"])),
        )
        for r in rows
    ]


def _evaluated(counts: list[RoutedCount], rules: dict[str, TableRules]) -> dict[str, TableCounts]:
    """Of each table with rules: the changes they were evaluated on, and the failures per rule."""
    tallies: dict[str, dict[str, int]] = {}
    items: dict[str, dict[str, int]] = {}
    for count in counts:
        if count.evaluated and count.route == count.table:
            table = tallies.setdefault(count.table, {})
            table[""] = table.get("", 0) + count.rows
        for item in count.items:
            route = items.setdefault(count.route, {})
            route[item] = route.get(item, 0) + count.rows
    return counted(tallies, items, set(rules))


def _alerts(counts: list[RoutedCount], schemas: dict[str, SilverSchema], settings: SilverSettings) -> list[SchemaAlert]:
    """A schema alert per unfit variation and field the batch met, as event silver tables do."""
    affected: dict[tuple[str, str], int] = {}
    for count in counts:
        schema = schemas.get(count.table)
        if schema is None or count.schema_hash not in schema.unfit:
            continue
        if count.route == QUARANTINE_ROUTE and count.reason != "incompatible_type":
            continue
        key = (count.table, count.schema_hash)
        affected[key] = affected.get(key, 0) + count.rows
    action = ACTION_OF[settings.on_incompatible]
    return [
        SchemaAlert(
            event_type=table,
            field=change.path,
            old_type=change.old_type or "",
            new_type=change.new_type,
            variation_hash=variation,
            first_bronze_version=schemas[table].variation_first_bronze_version[variation],
            rows_affected=rows,
            action=action,
        )
        for (table, variation), rows in sorted(affected.items())
        for change in schemas[table].unfit[variation]
    ]


def _apply_rows(applied: list[tuple[CdcTableApply, MergeCounts]], commit: BatchCommitInfo) -> pa.Table:
    def moment(seconds: float | None) -> datetime | None:
        return None if seconds is None else datetime.fromtimestamp(seconds, tz=timezone.utc)

    return pa.Table.from_pylist(
        [
            {
                "stream": commit.stream,
                "batch_id": commit.batch_id,
                "table": a.table,
                "changes": a.changes,
                "inserted": a.inserted,
                "updated": a.updated,
                "deleted": a.deleted,
                "ignored": a.ignored,
                "truncated": a.truncated,
                "history_versions": a.history_versions,
                "oldest_source_time": moment(a.oldest_source_time),
                "newest_source_time": moment(a.newest_source_time),
                "committed_at": moment(a.committed_at),
                "lag_seconds": a.lag_seconds,
                "max_lag_seconds": None
                if a.oldest_source_time is None
                else max(0.0, a.committed_at - a.oldest_source_time),
                "silver_version": done.silver_version,
            }
            for a, done in applied
        ],
        schema=tables.APPLIES_SCHEMA,
    )
