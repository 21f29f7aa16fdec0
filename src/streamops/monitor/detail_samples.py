"""The exporter's per-source, per-operator, watermark and batch-phase samples of one stream.

Each family gets a sample only where the stream has the value: a stream without state has no
state series, a source that reports no offsets no offset series, a query without a watermark no
watermark series (never a 0 that would read as "caught up").
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, get_args

from streamops.core.delta_format.change_commits import ChangeKind
from streamops.monitor import metric_catalog as catalog
from streamops.monitor.fleet import StreamView
from streamops.monitor.metric_catalog import RETENTION_KINDS, MetricSpec
from streamops.monitor.progress_event import operator_labels
from streamops.monitor.source_lag import estimated_seconds, read_rate
from streamops.monitor.state_counters import ROCKSDB_SST_BYTES, rocksdb_commit_phases

Add = Callable[[MetricSpec, list[str], object], None]


def add_source_samples(add: Add, view: StreamView) -> None:
    samples = view.observation.samples
    for lag in view.sources:
        labels = [view.stream, str(lag.source), lag.kind]
        add(catalog.SOURCE_INFO, labels, {"description": lag.description})
        for spec, value in (
            (catalog.BACKLOG_VERSIONS, lag.versions),
            (catalog.BACKLOG_FILES, lag.files),
            (catalog.BACKLOG_BYTES, lag.bytes),
            (catalog.BACKLOG_SECONDS, lag.seconds),
            (catalog.BACKLOG_OFFSETS, lag.offsets),
            (catalog.BACKLOG_MAX_PARTITION_OFFSETS, lag.max_partition_offsets),
            (catalog.BACKLOG_ESTIMATED_SECONDS, estimated_seconds(lag.offsets, read_rate(samples, lag.source))),
        ):
            if value is not None:
                add(spec, labels, value)
        for topic, partition, behind in lag.partitions:
            add(catalog.PARTITION_BACKLOG_OFFSETS, labels + [topic, str(partition)], behind)
        for retention, headroom in zip(RETENTION_KINDS, (lag.retention_files_seconds, lag.retention_log_seconds)):
            if headroom is not None:
                add(catalog.SOURCE_RETENTION_HEADROOM, labels + [retention], headroom)
        if lag.measured and lag.kind == "delta":
            kinds = Counter(change.kind for change in lag.change_commits)
            for change in get_args(ChangeKind):
                add(catalog.SOURCE_CHANGE_COMMITS, labels + [change], kinds[change])


def add_state_samples(add: Add, view: StreamView) -> None:
    """Gauges from the last batch's `stateOperators`; counters from every batch seen."""
    progress = view.last_progress
    if progress is not None and progress.state_operators:
        operators = progress.state_operators
        for label, op in zip(operator_labels(operators), operators):
            labels = [view.stream, label]
            add(catalog.STATE_ROWS, labels, op.num_rows_total)
            add(catalog.STATE_MEMORY, labels, op.memory_used_bytes)
            for phase, seconds in rocksdb_commit_phases(op).items():
                add(catalog.ROCKSDB_COMMIT_SECONDS, labels + [phase], seconds)
            if ROCKSDB_SST_BYTES in op.custom_metrics:
                add(catalog.ROCKSDB_SST_BYTES, labels, op.custom_metrics[ROCKSDB_SST_BYTES])
    for label, totals in view.state_totals:
        labels = [view.stream, label]
        add(catalog.STATE_ROWS_UPDATED, labels, totals.rows_updated)
        add(catalog.STATE_ROWS_REMOVED, labels, totals.rows_removed)
        add(catalog.STATE_ROWS_DROPPED, labels, totals.rows_dropped_by_watermark)
        if totals.rocksdb:
            add(catalog.ROCKSDB_CHECKPOINT_BYTES, labels, totals.checkpoint_bytes)


def add_time_samples(add: Add, view: StreamView) -> None:
    """Watermark and event-time lags, and the batch-phase histogram."""
    if view.watermark_lag is not None:
        add(catalog.WATERMARK_LAG, [view.stream], view.watermark_lag)
    if view.event_time_lag is not None:
        add(catalog.EVENT_TIME_MAX_LAG, [view.stream], view.event_time_lag)
    for distribution in view.phases:
        add(
            catalog.BATCH_PHASE_SECONDS,
            [view.stream, distribution.phase],
            (distribution.buckets, distribution.sum_seconds),
        )
