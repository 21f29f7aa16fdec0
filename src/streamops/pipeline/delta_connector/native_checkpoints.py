"""Checkpoints of the tables the native connector commits to, written without Spark.

delta-spark writes a table's checkpoint inside the commit that reaches the table's
`delta.checkpointInterval`: a state reconstruction and a Parquet write, several Spark jobs, on
the committing thread. A silver batch commits to every table of its group, so one batch in ten
paid that for each of its tables, and the freshness of all of them waited for it
(BENCHMARKS.md, "Native commits"). delta-rs writes the same checkpoint (a classic, single-file
Parquet checkpoint and `_last_checkpoint`) from the log in milliseconds, outside Spark.

So tables the native connector creates carry a large `delta.checkpointInterval`, which keeps
delta-spark's inline checkpoint rare, and the connector writes one itself every
`CHECKPOINT_EVERY` versions: through delta-rs when the table's protocol has only features
delta-rs writes checkpoints for, else through delta-spark. Readers (delta-spark, delta-rs,
Databricks) find the latest checkpoint through `_last_checkpoint` as always. A table whose
interval is `CHECKPOINT_EVERY` or less (an older lake's, a user's) is left to delta-spark.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from streamops.core.lake_layout import CHECKPOINT_INTERVAL_PROPERTY, TABLE_CONFIGURATION
from streamops.core.storage.location import Location, LocationLike

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = int(TABLE_CONFIGURATION[CHECKPOINT_INTERVAL_PROPERTY])
"""The lake's cadence: a checkpoint every 10 versions, whoever writes it."""
NATIVE_TABLE_CONFIGURATION = {**TABLE_CONFIGURATION, CHECKPOINT_INTERVAL_PROPERTY: "1000"}
"""Properties of the tables the native connector creates and commits to: delta-spark itself
checkpoints them every 1,000 commits, the connector every `CHECKPOINT_EVERY`."""
DELTA_SPARK_DEFAULT_INTERVAL = 10
EXPIRED_LOG_CLEANUP_PROPERTY = "delta.enableExpiredLogCleanup"
DELTA_RS_WRITER_FEATURES = frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "timestampNtz"})
"""Writer features whose tables delta-rs checkpoints as delta-spark would: they constrain rows
or add files beside the log, not the log's actions. Any other feature (deletion vectors, row
tracking, in-commit timestamps, v2 checkpoints, catalog-owned commits, ...) leaves the
checkpoint to delta-spark."""


def checkpoint_due(version: int, configuration: Mapping[str, str]) -> bool:
    """Whether the connector writes a checkpoint at `version`: a tenth version that delta-spark's
    own interval does not already checkpoint inside the commit."""
    interval = int(configuration.get(CHECKPOINT_INTERVAL_PROPERTY, DELTA_SPARK_DEFAULT_INTERVAL))
    return interval > CHECKPOINT_EVERY and version > 0 and version % CHECKPOINT_EVERY == 0 and version % interval != 0


def delta_rs_checkpoints(table: DeltaTable) -> bool:
    protocol = table.protocol()
    if protocol.min_reader_version > 1:
        return False
    if protocol.min_writer_version < 7:
        return True
    return set(protocol.writer_features or ()) <= DELTA_RS_WRITER_FEATURES


def write_checkpoint(spark: SparkSession, table: LocationLike, version: int) -> None:
    """A checkpoint of `table` at `version`, by delta-rs where its protocol
    allows, else by delta-spark (at its latest version); then, as delta-spark does at a
    checkpoint, commits older than the table's `delta.logRetentionDuration` are deleted unless
    `delta.enableExpiredLogCleanup` is false. A checkpoint that fails is logged, not raised: the
    commit it follows is in the log, and a later checkpoint covers it, as in delta-spark."""
    location = Location.of(table)
    try:
        handle = DeltaTable(str(location), version=version, storage_options=location.storage_options())
        if delta_rs_checkpoints(handle):
            handle.create_checkpoint()
            if handle.metadata().configuration.get(EXPIRED_LOG_CLEANUP_PROPERTY, "true").lower() != "false":
                handle.cleanup_metadata()
            return
    except (DeltaError, OSError) as error:
        log.warning(
            "%s: delta-rs could not write the checkpoint at version %d (%s); delta-spark writes it",
            table,
            version,
            error,
        )
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(location)).checkpoint()


def checkpoint_if_due(spark: SparkSession, table: LocationLike) -> None:
    """After a commit made by delta-spark's writer: the connector's checkpoint if its version is due."""
    location = Location.of(table)
    handle = DeltaTable(str(location), storage_options=location.storage_options())
    if checkpoint_due(handle.version(), handle.metadata().configuration):
        write_checkpoint(spark, location, handle.version())
