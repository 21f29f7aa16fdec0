"""The bronze stream: landing NDJSON files -> bronze/events, bronze/quarantine, schema registry.

Each micro-batch is classified in Spark's Python workers, collected once as Arrow, then
committed in a fixed order: schema registry first (so no bronze row's schema is ever
unknown downstream), then quarantine, then bronze. Every commit is txn-idempotent for
(appId "bronze", batch id): a batch replayed after a crash at any point between those
commits writes only what is missing. Invariant: bronze rows + quarantine rows = input lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from pipeline import jvm_classifier
from pipeline.batch_function import batch_function
from pipeline.batch_context import batch_commit_info
from pipeline.bronze_classifier import CLASSIFIED_SCHEMA, BatchClassifier, RecordLimits
from pipeline.delta_connector.batch_writer import create_table
from pipeline.exceptions import PipelineConfigError
from pipeline.lake_tables import BRONZE_SCHEMA, QUARANTINE_SCHEMA, newest_epoch, table_access
from pipeline.pipeline_events import BronzeBatchResult, PipelineEvents
from pipeline.record_rules import UTF8_BOM
from pipeline.schema_registry import REGISTRY_STAGE, NewVariation, SchemaRegistry
from streamops.lake_layout import BRONZE_STREAM, LakeLayout

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from pipeline.delta_connector.connector import DeltaConnector


Classifier = Literal["auto", "jvm", "python"]


@dataclass(frozen=True)
class BronzeSettings:
    landing: Path
    trigger_seconds: float = 5.0
    max_files_per_trigger: int = 100
    limits: RecordLimits = RecordLimits()
    available_now: bool = False
    classifier: Classifier = "auto"
    """`auto`: the JVM classifier when the JDK could build it, else the Python one."""


class BronzeBatchWriter:
    """The foreachBatch function of the bronze stream."""

    def __init__(
        self,
        lake: LakeLayout,
        connector: "DeltaConnector",
        registry: SchemaRegistry,
        events: PipelineEvents,
        after_batch: Callable[[BronzeBatchResult], None] | None = None,
    ) -> None:
        self.lake = lake
        self.connector = connector
        self.registry = registry
        self.events = events
        self.after_batch = after_batch

    def __call__(self, df: "DataFrame", batch_id: int) -> None:
        spark = df.sparkSession
        commit = batch_commit_info(spark, BRONZE_STREAM, batch_id, self.lake.checkpoint(BRONZE_STREAM))
        table = df.toArrow()
        ingest_time = datetime.now(timezone.utc)
        is_good = pc.is_null(table.column("quarantine_reason"))
        good = table.filter(is_good)
        bad = table.filter(pc.invert(is_good))
        new = self._new_variations(good)
        with table_access(self.lake.bronze_events, "read"):
            next_version = DeltaTable(str(self.lake.bronze_events)).version() + 1
        registration = self.registry.register(spark, self.connector, new, next_version, commit)
        if registration.rejected:
            good, bad = _unprocessable(good, bad, registration.rejected)
        self.connector.write_batch(self.lake.bronze_quarantine, _quarantine_rows(bad, batch_id, ingest_time), commit)
        self.connector.write_batch(self.lake.bronze_events, _bronze_rows(good, batch_id, ingest_time), commit)
        result = BronzeBatchResult(
            batch_id=batch_id,
            bronze_rows=good.num_rows,
            quarantined=_counts(bad.column("quarantine_reason")),
            new_variations=len(registration.entries),
        )
        self.events.bronze_committed(result, newest_epoch(good.column("event_time")))
        if self.after_batch:
            self.after_batch(result)

    def _new_variations(self, good: pa.Table) -> list[NewVariation]:
        """Unknown variations, each with its first message, in arrival order.

        Spark packs a batch's files into partitions by size, so collected row order is not
        arrival order; arrival is (file modification time, file path, line within the file).
        """
        if good.num_rows == 0:
            return []
        arrival = good.select(["event_type", "schema_hash", "source_mtime", "source_file"]).append_column(
            "row", pa.array(range(good.num_rows), pa.int64())
        )
        arrival = arrival.sort_by([("source_mtime", "ascending"), ("source_file", "ascending"), ("row", "ascending")])
        arrival = arrival.append_column("rank", pa.array(range(arrival.num_rows), pa.int64()))
        keys = (
            arrival.group_by(["event_type", "schema_hash"], use_threads=False)
            .aggregate([("rank", "min")])
            .sort_by("rank_min")
        )
        rows = arrival.column("row").take(keys.column("rank_min"))
        payloads = good.column("payload")
        return [
            NewVariation(event_type, variation_hash, payloads[row].as_py().decode("utf-8"))
            for event_type, variation_hash, row in zip(
                keys.column("event_type").to_pylist(), keys.column("schema_hash").to_pylist(), rows.to_pylist()
            )
            if not self.registry.is_known(event_type, variation_hash)
        ]


def _unprocessable(
    good: pa.Table, bad: pa.Table, rejected: dict[tuple[str, str], str]
) -> tuple[pa.Table, pa.Table]:
    """Move the rows of variations the registry rejected from `good` to `bad` (`unprocessable`)."""
    keys = [f"{t}\x00{h}" for t, h in rejected]
    row_keys = pc.binary_join_element_wise(good.column("event_type"), good.column("schema_hash"), "\x00")
    is_rejected = pc.is_in(row_keys, pa.array(keys, pa.string()))
    moved = good.filter(is_rejected)
    details = {f"{t}\x00{h}": f"stage {REGISTRY_STAGE}: {why}" for (t, h), why in rejected.items()}
    moved = moved.set_column(
        moved.schema.get_field_index("quarantine_reason"),
        "quarantine_reason",
        pa.array(["unprocessable"] * moved.num_rows, pa.string()),
    ).set_column(
        moved.schema.get_field_index("quarantine_detail"),
        "quarantine_detail",
        pa.array([details[k] for k in row_keys.filter(is_rejected).to_pylist()], pa.string()),
    )
    return good.filter(pc.invert(is_rejected)), pa.concat_tables([bad, moved.cast(bad.schema)])


def _bronze_rows(good: pa.Table, batch_id: int, ingest_time: datetime) -> pa.Table:
    rows = good.num_rows
    return pa.Table.from_arrays(
        [
            good.column("event_type"),
            good.column("event_id"),
            good.column("event_time"),
            good.column("schema_hash"),
            good.column("payload").cast(pa.string()),
            pa.array([ingest_time] * rows, BRONZE_SCHEMA.field("ingest_time").type),
            good.column("source_file"),
            pa.array([batch_id] * rows, pa.int64()),
        ],
        schema=BRONZE_SCHEMA,
    )


def _quarantine_rows(bad: pa.Table, batch_id: int, ingest_time: datetime) -> pa.Table:
    rows = bad.num_rows
    raw = bad.column("payload").to_pylist()
    return pa.Table.from_arrays(
        [
            pa.array([BRONZE_STREAM] * rows, pa.string()),
            pa.array([batch_id] * rows, pa.int64()),
            bad.column("quarantine_reason"),
            bad.column("quarantine_detail"),
            bad.column("event_type"),
            bad.column("schema_hash"),
            pa.array([None if b is None else b.decode("utf-8", "replace") for b in raw], pa.string()),
            bad.column("payload"),
            bad.column("source_file"),
            pa.array([ingest_time] * rows, QUARANTINE_SCHEMA.field("ingest_time").type),
        ],
        schema=QUARANTINE_SCHEMA,
    )


def _counts(column: pa.ChunkedArray) -> dict[str, int]:
    if len(column) == 0:
        return {}
    counted = pc.value_counts(column.combine_chunks())
    return {item["values"]: item["counts"] for item in counted.to_pylist()}


def create_bronze_tables(lake: LakeLayout) -> None:
    create_table(lake.bronze_events, BRONZE_SCHEMA)
    create_table(lake.bronze_quarantine, QUARANTINE_SCHEMA)


def classify_lines(spark: "SparkSession", lines: "DataFrame", settings: BronzeSettings) -> "DataFrame":
    """Lines (value, source_file, source_mtime) -> CLASSIFIED_SCHEMA, in the JVM when possible."""
    from pyspark.sql import functions as F

    use_jvm = settings.classifier != "python" and jvm_classifier.register(spark)
    if settings.classifier == "jvm" and not use_jvm:
        raise PipelineConfigError(
            "the JVM classifier needs a JDK (`javac`) to build it: install openjdk-17-jdk-headless "
            "or use the python classifier"
        )
    if not use_jvm:
        return lines.mapInArrow(BatchClassifier(settings.limits), CLASSIFIED_SCHEMA)
    limits = settings.limits
    bom = UTF8_BOM.hex().upper()
    payload = F.expr(f"CASE WHEN substring(value, 1, {len(UTF8_BOM)}) = X'{bom}' THEN substring(value, {len(UTF8_BOM) + 1}) ELSE value END")
    call = F.expr(f"{jvm_classifier.FUNCTION_NAME}(value, {limits.max_record_bytes}, {limits.max_depth})")
    return lines.select(payload.alias("value"), "source_file", "source_mtime").select(call.alias("c"), "value", "source_file", "source_mtime").select(
        "c.event_type",
        "c.event_id",
        "c.event_time_text",
        "c.schema_hash",
        F.col("value").alias("payload"),
        "source_file",
        "source_mtime",
        "c.quarantine_reason",
        "c.quarantine_detail",
    )


def start_bronze(
    spark: "SparkSession", lake: LakeLayout, settings: BronzeSettings, writer: BronzeBatchWriter
) -> "StreamingQuery":
    from pyspark.sql import functions as F

    settings.landing.mkdir(parents=True, exist_ok=True)
    create_bronze_tables(lake)
    lines = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", str(settings.max_files_per_trigger))
        .load(str(settings.landing))
        .select(
            F.col("value").cast("binary").alias("value"),
            F.col("_metadata.file_path").alias("source_file"),
            F.col("_metadata.file_modification_time").alias("source_mtime"),
        )
    )
    classified = (
        classify_lines(spark, lines, settings)
        .withColumn("event_time", F.expr("try_to_timestamp(event_time_text)"))
        .drop("event_time_text")
    )
    stream = classified.writeStream.queryName(BRONZE_STREAM).foreachBatch(batch_function(writer)).option(
        "checkpointLocation", str(lake.checkpoint(BRONZE_STREAM))
    )
    if settings.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{settings.trigger_seconds} seconds")
    return stream.start()
