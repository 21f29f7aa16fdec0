"""The state of a stream's stateful operators: what each batch reported, and the counters the
monitor keeps across batches (rows updated, removed and dropped as late, bytes RocksDB copied to
the checkpoint), so rates can be taken over any interval, not only the last batch's.

RocksDB's custom metrics are read by the names Spark's `RocksDBStateStoreProvider` reports
(Spark 3.2 and later, and the Databricks runtime); the default HDFS-backed provider reports
none of them, so those families simply have no sample for its operators.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from streamops.monitor.progress_event import StateOperatorProgress, operator_labels

ROCKSDB_COMMIT_PHASES: dict[str, str] = {
    "rocksdbCommitWriteBatchLatency": "write_batch",
    "rocksdbCommitFlushLatency": "flush",
    "rocksdbCommitCompactLatency": "compact",
    "rocksdbCommitPauseLatency": "pause",
    "rocksdbCommitCheckpointLatency": "checkpoint",
    "rocksdbCommitFileSyncLatencyMs": "file_sync",
}
"""RocksDB's commit of one batch, phase by phase (milliseconds, summed over the operator's state
store instances): which part of a slow state commit to tune."""
ROCKSDB_SST_BYTES = "rocksdbSstFileSize"
"""Bytes of the operator's live SST files: the state's size on disk."""
ROCKSDB_BYTES_COPIED = "rocksdbBytesCopied"
"""Bytes the batch uploaded to the checkpoint location (new SST and log files)."""


@dataclass
class OperatorTotals:
    rows_updated: int = 0
    rows_removed: int = 0
    rows_dropped_by_watermark: int = 0
    checkpoint_bytes: int = 0
    rocksdb: bool = False


@dataclass
class StateCounters:
    """Per operator label, the sums over every batch the monitor saw (the fleet's lock guards it)."""

    operators: dict[str, OperatorTotals] = field(default_factory=dict)

    def add(self, operators: tuple[StateOperatorProgress, ...]) -> None:
        for label, op in zip(operator_labels(operators), operators):
            totals = self.operators.setdefault(label, OperatorTotals())
            totals.rows_updated += op.num_rows_updated
            totals.rows_removed += op.num_rows_removed
            totals.rows_dropped_by_watermark += op.num_rows_dropped_by_watermark
            if ROCKSDB_BYTES_COPIED in op.custom_metrics:
                totals.rocksdb = True
                totals.checkpoint_bytes += max(0, op.custom_metrics[ROCKSDB_BYTES_COPIED])

    def snapshot(self) -> tuple[tuple[str, OperatorTotals], ...]:
        return tuple((label, replace(totals)) for label, totals in self.operators.items())


def rocksdb_commit_phases(op: StateOperatorProgress) -> dict[str, float]:
    """Seconds each RocksDB commit phase took in the batch (empty for other providers)."""
    return {
        phase: op.custom_metrics[name] / 1000.0
        for name, phase in ROCKSDB_COMMIT_PHASES.items()
        if name in op.custom_metrics
    }
