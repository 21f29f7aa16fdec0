"""A silver group stream: bronze -> one typed Delta table per event type of its group.

Every batch resolves the group's event types and their applied schemas from the registry
(re-read only when it changed), collects the group's bronze rows once as Arrow, parses each
type's payloads with its applied schema (pipeline.payload_parser), and fans out: nested
structs become `parent__child` columns (dlt's convention), lineage columns tie each row to its
bronze batch and landing file, and each table gets one txn-idempotent commit (appId = this
stream). Rows of a variation that is incompatible with the table's schema are quarantined and
alerted (on_incompatible="quarantine") or stop the group (on_incompatible="fail_group").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.batch_context import batch_commit_info
from pipeline.batch_function import batch_function
from pipeline.column_names import LINEAGE_COLUMNS, NESTED_SEPARATOR, column_name
from pipeline.event_groups import DEFAULT_TYPES_PER_GROUP, EventGroupsReader, resolve_groups
from pipeline.exceptions import IncompatibleSchemaError
from pipeline.lake_tables import QUARANTINE_SCHEMA, newest_epoch
from pipeline.payload_parser import PARSE_STAGE, parse_payloads, select, typed_payload
from pipeline.pipeline_events import PipelineEvents, SilverBatchResult
from pipeline.schema_alerts import SchemaAlert, alert_rows
from pipeline.schema_registry import RegistryReader
from pipeline.silver_schemas import SilverSchema, silver_schemas
from streamops.lake_layout import LakeLayout, silver_stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from pipeline.delta_connector.connector import DeltaConnector
    from streamops.commit_metadata import BatchCommitInfo

OnIncompatible = Literal["quarantine", "fail_group"]


@dataclass(frozen=True)
class SilverSettings:
    types_per_group: int = DEFAULT_TYPES_PER_GROUP
    on_incompatible: OnIncompatible = "quarantine"
    trigger_seconds: float = 5.0
    max_files_per_trigger: int = 1000
    available_now: bool = False


class SilverGroupWriter:
    """The foreachBatch function of one group's stream."""

    def __init__(
        self,
        lake: LakeLayout,
        connector: "DeltaConnector",
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
        self.registry = RegistryReader(lake.schema_registry)
        self.groups = EventGroupsReader(lake.event_groups)
        self._cached: tuple[tuple[int, int], dict[str, SilverSchema]] = ((-1, -1), {})

    def schemas(self) -> dict[str, SilverSchema]:
        """Applied schema of every event type this group serves, as of now."""
        registry_version, registry = self.registry.read()
        recorded = self.groups.read()
        key = (registry_version, recorded.version)
        if key != self._cached[0]:
            groups = resolve_groups(recorded.by_type, registry.type_order(), self.settings.types_per_group)
            members = sorted(t for t, g in groups.items() if g == self.group)
            self._cached = (key, silver_schemas(registry, members))
        return self._cached[1]

    def __call__(self, df: "DataFrame", batch_id: int) -> None:
        schemas = self.schemas()
        if not schemas:
            return
        spark = df.sparkSession
        commit = batch_commit_info(spark, self.stream, batch_id, self.lake.checkpoint(self.stream))
        result = self.commit_batch(group_rows(df, schemas).toArrow(), schemas, commit)
        self.events.silver_committed(result, schemas)

    def commit_batch(
        self, bronze: pa.Table, schemas: dict[str, SilverSchema], commit: "BatchCommitInfo"
    ) -> SilverBatchResult:
        event_types = bronze.column("event_type")
        quarantine: list[pa.Table] = []
        alerts: list[SchemaAlert] = []
        tables: dict[str, pa.Table] = {}
        for event_type, schema in sorted(schemas.items()):
            rows = bronze.filter(pc.equal(event_types, event_type))
            if rows.num_rows == 0:
                continue
            bad = pc.is_in(rows.column("_schema_hash"), pa.array(list(schema.incompatible), pa.string()))
            rejected = rows.filter(bad)
            if rejected.num_rows:
                alerts.extend(self._alerts(rejected, schema))
                details = _incompatible_details(schema, rejected)
                quarantine.append(_quarantine_rows(rejected, "incompatible_type", details, self.stream, commit.batch_id))
            accepted = rows.filter(pc.invert(bad))
            if accepted.num_rows == 0:
                continue
            parsed = parse_payloads(accepted.column("typed_payload"), accepted.column("_schema_hash"), schema.arrow)
            if parsed.errors:
                unparsed = accepted.filter(pc.invert(parsed.accepted))
                details = [f"stage {PARSE_STAGE}: {parsed.errors[row]}" for row in sorted(parsed.errors)]
                quarantine.append(_quarantine_rows(unparsed, "unprocessable", details, self.stream, commit.batch_id))
            if parsed.table.num_rows:
                tables[event_type] = silver_rows(parsed.table, select(accepted, parsed.accepted))
        if alerts:
            self.connector.write_batch(self.lake.schema_alerts, alert_rows(alerts, self.stream, commit.batch_id), commit)
            if self.settings.on_incompatible == "fail_group":
                stop = IncompatibleSchemaError(
                    f"group `{self.group}` stopped on an incompatible schema change "
                    f"({'; '.join(sorted({a.describe() for a in alerts}))}); see _system/schema_alerts, "
                    "then restart it with on_incompatible=quarantine or fix the producer",
                    self.stream,
                )
                if self.on_policy_stop is not None:
                    self.on_policy_stop(stop)
                raise stop
        if quarantine:
            self.connector.write_batch(self.lake.bronze_quarantine, pa.concat_tables(quarantine), commit)
        for event_type, table in tables.items():
            self.connector.write_batch(self.lake.silver(event_type), table, commit)
        return SilverBatchResult(
            group=self.group,
            batch_id=commit.batch_id,
            rows_by_type={t: table.num_rows for t, table in tables.items()},
            max_event_time={
                event_type: newest
                for event_type, newest in ((t, newest_epoch(table.column("_event_time"))) for t, table in tables.items())
                if newest is not None
            },
            quarantined=sum(t.num_rows for t in quarantine),
            alerts=tuple(alerts),
        )

    def _alerts(self, rejected: pa.Table, schema: SilverSchema) -> list[SchemaAlert]:
        action = "group_failed" if self.settings.on_incompatible == "fail_group" else "quarantined"
        counts = pc.value_counts(rejected.column("_schema_hash").combine_chunks()).to_pylist()
        return [
            SchemaAlert(
                event_type=schema.event_type,
                field=change.path,
                old_type=change.old_type or "",
                new_type=change.new_type,
                variation_hash=item["values"],
                first_bronze_version=schema.variation_first_bronze_version[item["values"]],
                rows_affected=item["counts"],
                action=action,
            )
            for item in counts
            for change in schema.incompatible[item["values"]]
        ]


def group_rows(df: "DataFrame", schemas: dict[str, SilverSchema]) -> "DataFrame":
    """The group's bronze rows, each payload as Spark reads it with its type's applied schema,
    with lineage columns under their silver names."""
    from pyspark.sql import functions as F

    typed = typed_payload({t: s.applied for t, s in schemas.items()}, F.col("event_type"), F.col("payload"))
    columns = [F.col("event_type"), F.col("payload"), typed.alias("typed_payload")]
    columns += [F.col(source).alias(name) for name, source in LINEAGE_COLUMNS.items()]
    return df.where(F.col("event_type").isin(sorted(schemas))).select(*columns)


def silver_rows(parsed: pa.Table, lineage: pa.Table) -> pa.Table:
    """Flat typed columns of one event type (named by pipeline/column_names.py), then the
    lineage columns."""
    names: list[str] = []
    arrays: list[Any] = []
    for field, column in zip(parsed.schema, parsed.columns):
        _flatten(field, column, "", names, arrays)
    for name in LINEAGE_COLUMNS:
        names.append(name)
        arrays.append(lineage.column(name))
    return pa.Table.from_arrays(arrays, names=names)


def _flatten(field: pa.Field, column: Any, prefix: str, names: list[str], arrays: list[Any]) -> None:
    name = prefix + column_name(field.name)
    if not pa.types.is_struct(field.type):
        names.append(name)
        arrays.append(_with_column_names(column))
        return
    for index, child in enumerate(field.type):
        _flatten(child, pc.struct_field(column, [index]), name + NESTED_SEPARATOR, names, arrays)


def _with_column_names(column: Any) -> Any:
    """Struct fields inside arrays take column names too (Delta checks nested names)."""
    data_type = column.type
    if _named(data_type) == data_type:
        return column
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return pa.chunked_array([_renamed(chunk) for chunk in chunks], _named(data_type))


def _named(data_type: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(data_type):
        return pa.struct([pa.field(column_name(f.name), _named(f.type), f.nullable) for f in data_type])
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        element = data_type.value_field
        wrap = pa.list_ if pa.types.is_list(data_type) else pa.large_list
        return wrap(pa.field(element.name, _named(element.type), element.nullable))
    return data_type


def _renamed(array: pa.Array) -> pa.Array:
    if pa.types.is_struct(array.type):
        children = [_renamed(array.field(i)) for i in range(array.type.num_fields)]
        names = [column_name(f.name) for f in array.type]
        return pa.StructArray.from_arrays(children, names=names, mask=array.is_null() if array.null_count else None)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        kind = pa.ListArray if pa.types.is_list(array.type) else pa.LargeListArray
        return kind.from_arrays(array.offsets, _renamed(array.values), mask=array.is_null() if array.null_count else None)
    return array


def _incompatible_details(schema: SilverSchema, rejected: pa.Table) -> list[str]:
    details = {
        variation: "; ".join(f"{c.path}: {c.old_type} -> {c.new_type}" for c in changes)
        for variation, changes in schema.incompatible.items()
    }
    return [details[h] for h in rejected.column("_schema_hash").to_pylist()]


def _quarantine_rows(rejected: pa.Table, reason: str, details: list[str], stream: str, batch_id: int) -> pa.Table:
    rows = rejected.num_rows
    payloads = rejected.column("payload")
    return pa.Table.from_arrays(
        [
            pa.array([stream] * rows, pa.string()),
            pa.array([batch_id] * rows, pa.int64()),
            pa.array([reason] * rows, pa.string()),
            pa.array(details, pa.string()),
            rejected.column("event_type").cast(pa.string()),
            rejected.column("_schema_hash").cast(pa.string()),
            payloads.cast(pa.string()),
            payloads.cast(pa.binary()),
            rejected.column("_source_file").cast(pa.string()),
            rejected.column("_ingest_time").cast(QUARANTINE_SCHEMA.field("ingest_time").type),
        ],
        schema=QUARANTINE_SCHEMA,
    )


def start_silver_group(
    spark: "SparkSession",
    lake: LakeLayout,
    connector: "DeltaConnector",
    writer: SilverGroupWriter,
) -> "StreamingQuery":
    settings = writer.settings
    stream = (
        connector.read_stream(
            spark, lake.bronze_events, {"maxFilesPerTrigger": str(settings.max_files_per_trigger)}
        )
        .writeStream.queryName(writer.stream)
        .foreachBatch(batch_function(writer))
        .option("checkpointLocation", str(lake.checkpoint(writer.stream)))
    )
    stream = stream.trigger(availableNow=True) if settings.available_now else stream.trigger(
        processingTime=f"{settings.trigger_seconds} seconds"
    )
    return stream.start()
