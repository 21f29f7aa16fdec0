"""Debezium changes: each line is a change of a database table, classified in Python (there is
no JVM version of cdc/cdc_classifier.py), learnt by the registry from its row image, and MERGEd
into its table's current state (and history) by the CDC group writer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar

from streamops.pipeline.cdc.cdc_classifier import CDC_CLASSIFIED_SCHEMA, ROW_IMAGE_COLUMN, CdcBatchClassifier
from streamops.pipeline.cdc.cdc_settings import CdcSettings
from streamops.pipeline.cdc.cdc_stream import CdcGroupWriter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from streamops.core.lake_layout import LakeLayout
    from streamops.pipeline.bronze.bronze_classifier import RecordLimits
    from streamops.pipeline.delta_connector.connector import DeltaConnector
    from streamops.pipeline.exceptions import IncompatibleSchemaError
    from streamops.pipeline.pipeline_events import PipelineEvents
    from streamops.pipeline.silver.silver_stream import GroupWriter, SilverSettings


@dataclass(frozen=True)
class DebeziumChanges:
    """`settings`: the declared keys, sequences and history of `streamops run --cdc debezium`."""

    settings: CdcSettings = CdcSettings()
    prototype_column: ClassVar[str | None] = ROW_IMAGE_COLUMN

    def classify(self, spark: SparkSession, lines: DataFrame, limits: RecordLimits) -> DataFrame:
        classifier = CdcBatchClassifier(self.settings.keys, limits, self.settings.sequences)
        return lines.mapInArrow(classifier, CDC_CLASSIFIED_SCHEMA)

    def group_writer(
        self,
        lake: LakeLayout,
        connector: DeltaConnector,
        group: str,
        settings: SilverSettings,
        events: PipelineEvents,
        on_policy_stop: Callable[[IncompatibleSchemaError], None] | None,
    ) -> GroupWriter:
        return CdcGroupWriter(lake, connector, group, settings, self.settings, events, on_policy_stop)
