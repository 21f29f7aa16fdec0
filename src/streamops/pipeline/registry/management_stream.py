"""The management stream: watches the schema registry and gives new event types a group.

It reads the registry through the Delta source like any other stream (so it has a checkpoint
and shows up in the monitor), filters registry rows down to event types no group serves yet,
and appends their assignments to `_system/event_groups` (txn-idempotent per batch). Schema
changes of known types need nothing here: silver streams read the latest schema every batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

from streamops.core.lake_layout import MANAGEMENT_STREAM, LakeLayout
from streamops.pipeline.registry.event_groups import (
    EVENT_GROUPS_SCHEMA,
    EventGroupsReader,
    assign_groups,
    assignment_rows,
)
from streamops.pipeline.registry.schema_registry import REGISTRY_SCHEMA, RegistryReader
from streamops.pipeline.runtime.batch_context import batch_commit_info
from streamops.pipeline.runtime.batch_function import batch_function

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from streamops.pipeline.delta_connector.connector import DeltaConnector


class ManagementBatchWriter:
    def __init__(
        self,
        lake: LakeLayout,
        connector: DeltaConnector,
        types_per_group: int,
        on_assigned: Callable[[Mapping[str, str]], None] | None = None,
    ) -> None:
        self.lake = lake
        self.connector = connector
        self.types_per_group = types_per_group
        self.on_assigned = on_assigned
        self.groups = EventGroupsReader(lake.event_groups)
        self.registry = RegistryReader(lake.schema_registry)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        """Assign the batch's new event types to groups. A batch whose types all have a group
        (new variations of known types) commits its txn alone, so it is provably done."""
        seen = {row.event_type for row in df.select("event_type").distinct().collect()}
        if not seen:
            return
        _, registry = self.registry.read()
        order = [t for t in registry.type_order() if t in seen]
        assigned = assign_groups(self.groups.read().by_type, order, self.types_per_group)
        commit = batch_commit_info(
            df.sparkSession, MANAGEMENT_STREAM, batch_id, self.lake.checkpoint(MANAGEMENT_STREAM)
        )
        if assigned:
            self.connector.write_batch(self.lake.event_groups, assignment_rows(assigned, batch_id), commit)
        else:
            self.connector.mark_batch(self.lake.event_groups, commit)
        if self.on_assigned:
            self.on_assigned(assigned)


def create_management_tables(lake: LakeLayout, connector: DeltaConnector) -> None:
    """The registry and the event groups, empty until written: the management stream reads the
    one and silver the other from their first start."""
    connector.create_table(lake.schema_registry, REGISTRY_SCHEMA)
    connector.create_table(lake.event_groups, EVENT_GROUPS_SCHEMA)


def start_management(
    spark: SparkSession,
    lake: LakeLayout,
    connector: DeltaConnector,
    writer: ManagementBatchWriter,
    trigger_seconds: float,
    available_now: bool = False,
) -> StreamingQuery:
    create_management_tables(lake, connector)
    stream = (
        connector.read_stream(spark, lake.schema_registry)
        .select("event_type")
        .writeStream.queryName(MANAGEMENT_STREAM)
        .foreachBatch(batch_function(writer))
        .option("checkpointLocation", str(lake.checkpoint(MANAGEMENT_STREAM)))
    )
    stream = (
        stream.trigger(availableNow=True)
        if available_now
        else stream.trigger(processingTime=f"{trigger_seconds} seconds")
    )
    return stream.start()
