"""Identity of the micro-batch a `foreachBatch` call is processing.

Spark does not hand foreachBatch its query id or offsets; the query id is a local property of
the driver thread running the batch, and the offsets are in the checkpoint's offset log, which
Spark writes before it runs the batch (write-ahead). Both go into every commit's metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from streamops.core.checkpoint_format.offset_log import read_batch_offsets
from streamops.core.delta_format.commit_metadata import BatchCommitInfo

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

QUERY_ID_PROPERTY = "sql.streaming.queryId"


def batch_commit_info(spark: SparkSession, stream: str, batch_id: int, checkpoint: Path) -> BatchCommitInfo:
    return BatchCommitInfo(
        stream=stream,
        batch_id=batch_id,
        query_id=spark.sparkContext.getLocalProperty(QUERY_ID_PROPERTY),
        source_start=_source_offset(checkpoint, batch_id - 1),
        source_end=_source_offset(checkpoint, batch_id),
    )


def _source_offset(checkpoint: Path, batch_id: int) -> str | None:
    batch = read_batch_offsets(checkpoint, batch_id) if batch_id >= 0 else None
    return batch.sources[0].raw if batch is not None and batch.sources else None
