"""Events: each line is one event, classified by the line and event rules (in the JVM when it
can be built, else in Python) and written to its event type's silver table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Literal

from streamops.pipeline.bronze import jvm_classifier
from streamops.pipeline.bronze.bronze_classifier import CLASSIFIED_SCHEMA, KAFKA_FIELDS, BatchClassifier, RecordLimits
from streamops.pipeline.bronze.line_sources import LINE_BYTES, LINE_OFFSET
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.records.record_rules import UTF8_BOM
from streamops.pipeline.silver.silver_stream import SilverGroupWriter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from streamops.core.lake_layout import LakeLayout
    from streamops.pipeline.delta_connector.connector import DeltaConnector
    from streamops.pipeline.exceptions import IncompatibleSchemaError
    from streamops.pipeline.pipeline_events import PipelineEvents
    from streamops.pipeline.silver.silver_stream import GroupWriter, SilverSettings

Classifier = Literal["auto", "jvm", "python"]


@dataclass(frozen=True)
class EventsMode:
    """`classifier`: `auto` is the JVM classifier when the JDK could build it, else the Python one."""

    classifier: Classifier = "auto"
    prototype_column: ClassVar[str | None] = None

    def classify(self, spark: SparkSession, lines: DataFrame, limits: RecordLimits) -> DataFrame:
        from pyspark.sql import functions as F

        use_jvm = self.classifier != "python" and jvm_classifier.register(spark)
        if self.classifier == "jvm" and not use_jvm:
            raise PipelineConfigError(
                "the JVM classifier needs a JDK (`javac`) to build it: install openjdk-17-jdk-headless "
                "or use the python classifier"
            )
        if not use_jvm:
            return lines.mapInArrow(BatchClassifier(limits), CLASSIFIED_SCHEMA)
        bom = UTF8_BOM.hex().upper()
        payload = F.expr(
            f"CASE WHEN substring(value, 1, {len(UTF8_BOM)}) = X'{bom}' THEN substring(value, {len(UTF8_BOM) + 1}) ELSE value END"
        )
        call = F.expr(f"{jvm_classifier.FUNCTION_NAME}(value, {limits.max_record_bytes}, {limits.max_depth})")
        kafka = [name for name, _ in KAFKA_FIELDS]
        sizes = [LINE_OFFSET, LINE_BYTES] if LINE_BYTES in lines.columns else []
        too_large = F.concat(
            F.col(LINE_BYTES).cast("string"),
            F.lit(f" bytes > limit {limits.max_record_bytes}"),
            F.coalesce(F.concat(F.lit(" at byte offset "), F.col(LINE_OFFSET).cast("string")), F.lit("")),
        )
        return (
            lines.select(payload.alias("value"), "source_file", "source_mtime", *kafka, *sizes)
            .select(call.alias("c"), "value", "source_file", "source_mtime", *kafka, *sizes)
            .select(
                "c.event_type",
                "c.event_id",
                "c.event_time_text",
                "c.schema_hash",
                F.col("value").alias("payload"),
                "source_file",
                "source_mtime",
                "c.quarantine_reason",
                F.when(F.col("c.quarantine_reason") == "too_large", too_large)
                .otherwise(F.col("c.quarantine_detail"))
                .alias("quarantine_detail")
                if sizes
                else F.col("c.quarantine_detail"),
                *kafka,
            )
        )

    def group_writer(
        self,
        lake: LakeLayout,
        connector: DeltaConnector,
        group: str,
        settings: SilverSettings,
        events: PipelineEvents,
        on_policy_stop: Callable[[IncompatibleSchemaError], None] | None,
    ) -> GroupWriter:
        return SilverGroupWriter(lake, connector, group, settings, events, on_policy_stop=on_policy_stop)


EVENTS = EventsMode()
"""The mode a run has unless it is told its lines are something else."""
