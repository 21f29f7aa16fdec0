"""One table's batch of changes as the MERGEs of either Delta engine: the connector runs its own
(`DeltaConnector.merge`), so the CDC stream never asks which connector it runs on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.pipeline.cdc.cdc_tables import CdcTarget
from streamops.pipeline.cdc.change_apply import BatchSummary
from streamops.pipeline.cdc.merge_embedded import MergeCounts, apply_embedded
from streamops.pipeline.cdc.merge_native import apply_native

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class TableMerges:
    """The MERGEs of `target` for the batch `commit` (`DeltaConnector.merge`'s `EngineMerges`).
    `summary` is what the stream counted of the table's changes: the native apply decides from it
    without a job of its own; the embedded one holds the rows on the driver and reads them."""

    target: CdcTarget
    commit: BatchCommitInfo
    retention_seconds: float
    summary: BatchSummary

    def with_delta_rs(self, rows: pa.Table) -> MergeCounts:
        return apply_embedded(rows, self.target, self.commit, self.retention_seconds)

    def with_delta_spark(self, rows: DataFrame) -> MergeCounts:
        return apply_native(rows, self.target, self.commit, self.retention_seconds, self.summary)
