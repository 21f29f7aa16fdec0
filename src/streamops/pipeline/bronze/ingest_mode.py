"""What bronze's lines are, and so what each stage does with them: one `IngestMode` per kind
(events: bronze/events_mode.py, the default; Debezium changes: cdc/debezium_mode.py, which
run/ingest_modes.py resolves from `--cdc debezium`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from streamops.core.lake_layout import LakeLayout
    from streamops.pipeline.bronze.bronze_classifier import RecordLimits
    from streamops.pipeline.delta_connector.connector import DeltaConnector
    from streamops.pipeline.exceptions import IncompatibleSchemaError
    from streamops.pipeline.pipeline_events import PipelineEvents
    from streamops.pipeline.silver.silver_stream import GroupWriter, SilverSettings


class IngestMode(Protocol):
    """How bronze classifies a line, what the registry learns a variation from, and what writes
    a silver group, so that neither bronze nor the supervisor asks which mode runs."""

    @property
    def prototype_column(self) -> str | None:
        """The classified column the registry learns a new variation from (None: the payload)."""
        ...

    def classify(self, spark: SparkSession, lines: DataFrame, limits: RecordLimits) -> DataFrame:
        """Lines (bronze/line_sources.py) -> CLASSIFIED_SCHEMA (bronze/bronze_classifier.py), with
        `prototype_column` when there is one."""
        ...

    def group_writer(
        self,
        lake: LakeLayout,
        connector: DeltaConnector,
        group: str,
        settings: SilverSettings,
        events: PipelineEvents,
        on_policy_stop: Callable[[IncompatibleSchemaError], None] | None,
    ) -> GroupWriter:
        """The foreachBatch function of `group`'s silver stream."""
        ...
