"""Every metric streamops exports, defined once.

The exporter builds its metric families from these specs; the Grafana dashboards, the alert
rules and the console refer to metrics only through them, and a test checks that every metric
a dashboard or rule uses is in this catalog. Names follow Prometheus conventions: base units
in the name (`_seconds`, `_bytes`), `_total` for counters, one `stream` label per query (plus
`group` / `event_type` where meaningful), never a label per batch or run id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from streamops.monitor.status_severity import STREAM_STATUSES

MetricKind = Literal["gauge", "counter", "stateset", "info", "histogram"]
StreamWarningCode = Literal[
    "state_unbounded", "watermark_stalled", "late_rows_dropped", "source_retention_low", "source_change_commits"
]
STREAM_WARNINGS: tuple[str, ...] = get_args(StreamWarningCode)
BATCH_PHASES: tuple[str, ...] = (
    "addBatch",
    "commitOffsets",
    "getBatch",
    "latestOffset",
    "queryPlanning",
    "walCommit",
    "triggerExecution",
)


DEFAULT_METRICS_HOST = "127.0.0.1"
DEFAULT_METRICS_PORT = 9108
"""Where the exporter listens unless told otherwise; the sample Prometheus config scrapes it."""


@dataclass(frozen=True)
class MetricSpec:
    """`states` are a stateset's states; `info_keys` the keys of an info metric's value."""

    name: str
    kind: MetricKind
    help: str
    labels: tuple[str, ...]
    states: tuple[str, ...] = ()
    info_keys: tuple[str, ...] = ()


STREAM = ("stream",)
SOURCE = ("stream", "source", "kind")
"""A stream's source: its position in the query's sources (`0`, `1`, ...: Spark's own numbering
of `sources/<id>` in the checkpoint) and its kind (`streamops.monitor.source_kinds`, `unknown` included)."""
OPERATOR = ("stream", "operator")
"""A stateful operator: its name, plus its position in the plan when the query has several."""

STREAM_UP = MetricSpec("streamops_stream_up", "gauge", "1 while the streaming query is active, else 0", STREAM)
STREAM_STATUS = MetricSpec(
    "streamops_stream_status",
    "stateset",
    "Current status of the stream (one state is 1)",
    STREAM,
    states=STREAM_STATUSES,
)
STREAM_WARNING = MetricSpec(
    "streamops_stream_warning",
    "stateset",
    "Warnings about a running stream (each state is 1 while it holds): unbounded state, stalled watermark, "
    "late rows dropped, unread source data close to its retention, unread source commits that are not appends",
    STREAM,
    states=STREAM_WARNINGS,
)
STREAM_INFO_KEYS: tuple[str, ...] = ("query_id", "run_id", "group", "delta_connector")
"""Keys of STREAM_INFO's value, exposed as labels of `streamops_stream_info`; dashboards filter
streams by `group` through them (empty for streams that serve no event group).
`delta_connector` is the Delta connector the pipeline runs on (`native`, `embedded`; empty for
an application that does not say)."""
STREAM_INFO = MetricSpec(
    "streamops_stream",
    "info",
    "Identity of the stream: query id, run id, group and Delta connector",
    STREAM,
    info_keys=STREAM_INFO_KEYS,
)
SOURCE_INFO = MetricSpec(
    "streamops_stream_source",
    "info",
    "Each source of the stream: its kind and description (topic, table or path)",
    SOURCE,
    info_keys=("description",),
)
INPUT_ROWS = MetricSpec("streamops_stream_input_rows_total", "counter", "Rows read by the stream", STREAM)
INPUT_ROWS_PER_SECOND = MetricSpec(
    "streamops_stream_input_rows_per_second",
    "gauge",
    "Input rate of the last batch: its rows over the time since the previous batch started",
    STREAM,
)
PROCESSED_ROWS_PER_SECOND = MetricSpec(
    "streamops_stream_processed_rows_per_second",
    "gauge",
    "Processing rate of the last batch: its rows over its duration",
    STREAM,
)
BATCH_DURATION = MetricSpec("streamops_stream_batch_duration_seconds", "gauge", "Wall time of the last batch", STREAM)
BATCH_PHASE_DURATION = MetricSpec(
    "streamops_stream_batch_phase_duration_seconds",
    "gauge",
    "Time the last batch spent in each phase (Spark durationMs)",
    STREAM + ("phase",),
)
LAST_PROGRESS = MetricSpec(
    "streamops_stream_last_progress_timestamp_seconds",
    "gauge",
    "Unix time the last batch finished (its progress event)",
    STREAM,
)
BATCH_ID = MetricSpec("streamops_stream_batch_id", "gauge", "Id of the last completed batch", STREAM)
BACKLOG_VERSIONS = MetricSpec(
    "streamops_stream_backlog_versions", "gauge", "Source Delta versions not yet processed", SOURCE
)
BACKLOG_FILES = MetricSpec("streamops_stream_backlog_files", "gauge", "Source files not yet processed", SOURCE)
BACKLOG_BYTES = MetricSpec("streamops_stream_backlog_bytes", "gauge", "Source bytes not yet processed", SOURCE)
BACKLOG_SECONDS = MetricSpec(
    "streamops_stream_backlog_seconds",
    "gauge",
    "Age of the oldest unprocessed source data (0 when caught up)",
    SOURCE,
)
BACKLOG_OFFSETS = MetricSpec(
    "streamops_stream_backlog_offsets",
    "gauge",
    "Records behind the source's latest offset, summed over its partitions",
    SOURCE,
)
BACKLOG_MAX_PARTITION_OFFSETS = MetricSpec(
    "streamops_stream_backlog_max_partition_offsets",
    "gauge",
    "Records the most lagging partition of the source is behind its latest offset",
    SOURCE,
)
PARTITION_BACKLOG_OFFSETS = MetricSpec(
    "streamops_source_partition_backlog_offsets",
    "gauge",
    "Records behind the latest offset in one partition of a Kafka-shaped source (the broker's latest "
    "offset, as the source last saw it, minus the offset the stream processed up to)",
    SOURCE + ("topic", "partition"),
)
BACKLOG_ESTIMATED_SECONDS = MetricSpec(
    "streamops_stream_backlog_estimated_seconds",
    "gauge",
    "Estimate: seconds to read the source's offset backlog at the rate it read over recent batches",
    SOURCE,
)
RETENTION_KINDS: tuple[str, ...] = ("deleted_files", "log")
"""Label `retention` of SOURCE_RETENTION_HEADROOM: VACUUM's (delta.deletedFileRetentionDuration)
or log cleanup's (delta.logRetentionDuration)."""
SOURCE_RETENTION_HEADROOM = MetricSpec(
    "streamops_stream_source_retention_headroom_seconds",
    "gauge",
    "Delta source: seconds until the table's retention may remove the oldest unread data "
    "(its commit time + the retention - now; negative once passed)",
    SOURCE + ("retention",),
)
SOURCE_CHANGE_COMMITS = MetricSpec(
    "streamops_stream_source_unread_change_commits",
    "gauge",
    "Delta source: unread commits that are not appends (delete, rewrite, schema_change), which "
    "stop a stream unless its options skip them",
    SOURCE + ("change",),
)
FRESHNESS = MetricSpec(
    "streamops_stream_freshness_seconds",
    "gauge",
    "Now minus the newest event time the stream has committed",
    STREAM,
)
WATERMARK_LAG = MetricSpec(
    "streamops_stream_watermark_lag_seconds",
    "gauge",
    "Start of the last batch minus its event-time watermark",
    STREAM,
)
EVENT_TIME_MAX_LAG = MetricSpec(
    "streamops_stream_event_time_max_lag_seconds",
    "gauge",
    "Start of the last batch that read rows minus the newest event time it read",
    STREAM,
)
BATCH_PHASE_SECONDS = MetricSpec(
    "streamops_stream_batch_phase_seconds",
    "histogram",
    "Batch durations per phase (Spark durationMs; triggerExecution is the whole batch)",
    STREAM + ("phase",),
)
STATE_ROWS = MetricSpec(
    "streamops_stream_state_rows", "gauge", "Rows held in the operator's state after the last batch", OPERATOR
)
STATE_MEMORY = MetricSpec(
    "streamops_stream_state_memory_bytes",
    "gauge",
    "Memory the operator's state stores used after the last batch",
    OPERATOR,
)
STATE_ROWS_UPDATED = MetricSpec(
    "streamops_stream_state_rows_updated_total", "counter", "State rows the operator added or updated", OPERATOR
)
STATE_ROWS_REMOVED = MetricSpec(
    "streamops_stream_state_rows_removed_total",
    "counter",
    "State rows the operator evicted (watermark, timeout or TTL)",
    OPERATOR,
)
STATE_ROWS_DROPPED = MetricSpec(
    "streamops_stream_state_rows_dropped_by_watermark_total",
    "counter",
    "Input rows the operator dropped as later than the watermark",
    OPERATOR,
)
ROCKSDB_COMMIT_SECONDS = MetricSpec(
    "streamops_stream_state_rocksdb_commit_seconds",
    "gauge",
    "RocksDB state store: time each phase of the last batch's state commit took",
    OPERATOR + ("phase",),
)
ROCKSDB_SST_BYTES = MetricSpec(
    "streamops_stream_state_rocksdb_sst_bytes",
    "gauge",
    "RocksDB state store: bytes of the operator's live SST files",
    OPERATOR,
)
ROCKSDB_CHECKPOINT_BYTES = MetricSpec(
    "streamops_stream_state_rocksdb_checkpoint_bytes_total",
    "counter",
    "RocksDB state store: bytes uploaded to the checkpoint location",
    OPERATOR,
)
OBSERVED = ("stream", "observation", "metric")
"""A named observation of the query (`df.observe(name, ...)`) and one of its metrics (the
aggregate's alias): one series per metric of each observation of each query."""
OBSERVED_METRIC = MetricSpec(
    "streamops_stream_observed_metric",
    "gauge",
    "A metric of one of the query's named observations (df.observe) in the last batch that reported it: "
    "numbers, booleans as 1 and 0; other values are kept in the progress log only",
    OBSERVED,
)
EVENT_TYPE_ROWS = MetricSpec(
    "streamops_event_type_rows_total",
    "counter",
    "Rows committed to the event type's silver table",
    ("event_type", "group"),
)
EVENT_TYPE_LAST_COMMIT = MetricSpec(
    "streamops_event_type_last_commit_timestamp_seconds",
    "gauge",
    "Unix time of the last commit to the event type's silver table",
    ("event_type", "group"),
)
EVENT_TYPE_SCHEMA_VERSION = MetricSpec(
    "streamops_event_type_schema_version",
    "gauge",
    "Latest schema version of the event type in the schema registry",
    ("event_type", "group"),
)
EVENT_TYPE_FRESHNESS = MetricSpec(
    "streamops_event_type_freshness_seconds",
    "gauge",
    "Now minus the newest event time committed to the event type's silver table",
    ("event_type", "group"),
)
QUARANTINED_ROWS = MetricSpec(
    "streamops_quarantined_rows_total", "counter", "Rows sent to quarantine, by reason", STREAM + ("reason",)
)
KAFKA_LOST_OFFSETS = MetricSpec(
    "streamops_kafka_lost_offsets_total",
    "counter",
    "Kafka offsets a stream run with --allow-data-loss skipped because retention deleted them before "
    "they were read (each range is in _system/kafka_data_loss)",
    STREAM + ("topic", "partition"),
)
CDC_CHANGES: tuple[str, ...] = ("inserted", "updated", "deleted", "ignored")
"""Label `change` of CDC_ROWS."""
CDC_ROWS = MetricSpec(
    "streamops_cdc_rows_total",
    "counter",
    "CDC: rows the MERGEs of a source table's silver table inserted, updated and deleted; `ignored` counts "
    "the changes that changed nothing (superseded in their batch, older than the table's state, replayed)",
    STREAM + ("table", "change"),
)
EXPECTATION_OUTCOMES: tuple[str, ...] = ("passed", "failed")
"""Label `outcome` of EXPECTATION_RECORDS."""
EXPECTATION_RECORDS = MetricSpec(
    "streamops_expectation_records_total",
    "counter",
    "Data-quality expectations: rows of a table that passed and failed each rule (whatever its action: "
    "warn kept them, drop quarantined them, fail stopped the group); every batch is in _system/expectations",
    STREAM + ("table", "expectation", "outcome"),
)
CDC_LAG = MetricSpec(
    "streamops_cdc_lag_seconds",
    "gauge",
    "CDC: the last batch's silver commit time minus the source database's commit time of the newest "
    "change it applied to the table",
    STREAM + ("table",),
)
SCHEMA_ALERTS = MetricSpec(
    "streamops_schema_alerts_total",
    "counter",
    "Incompatible schema changes recorded in _system/schema_alerts",
    ("event_type",),
)
STREAM_FAILURES = MetricSpec(
    "streamops_stream_failures_total", "counter", "Times the stream terminated with an exception", STREAM
)

MONITOR_EVENTS_DROPPED = MetricSpec(
    "streamops_monitor_events_dropped_total",
    "counter",
    "Listener events the monitor dropped because its queue was full (raise queue_size)",
    (),
)
MONITOR_PROGRESS_LOG_FAILURES = MetricSpec(
    "streamops_monitor_progress_log_write_failures_total",
    "counter",
    "Failed commits to the _system/query_progress log (rows are kept and retried)",
    (),
)

MONITOR_WORKER_CPU = MetricSpec(
    "streamops_monitor_worker_cpu_seconds_total",
    "counter",
    "CPU time of the monitor's worker thread (parsing, backlog, progress log)",
    (),
)

CATALOG: tuple[MetricSpec, ...] = (
    STREAM_UP,
    STREAM_STATUS,
    STREAM_WARNING,
    STREAM_INFO,
    SOURCE_INFO,
    INPUT_ROWS,
    INPUT_ROWS_PER_SECOND,
    PROCESSED_ROWS_PER_SECOND,
    BATCH_DURATION,
    BATCH_PHASE_DURATION,
    LAST_PROGRESS,
    BATCH_ID,
    BACKLOG_VERSIONS,
    BACKLOG_FILES,
    BACKLOG_BYTES,
    BACKLOG_SECONDS,
    BACKLOG_OFFSETS,
    BACKLOG_MAX_PARTITION_OFFSETS,
    PARTITION_BACKLOG_OFFSETS,
    BACKLOG_ESTIMATED_SECONDS,
    SOURCE_RETENTION_HEADROOM,
    SOURCE_CHANGE_COMMITS,
    FRESHNESS,
    WATERMARK_LAG,
    EVENT_TIME_MAX_LAG,
    BATCH_PHASE_SECONDS,
    STATE_ROWS,
    STATE_MEMORY,
    STATE_ROWS_UPDATED,
    STATE_ROWS_REMOVED,
    STATE_ROWS_DROPPED,
    ROCKSDB_COMMIT_SECONDS,
    ROCKSDB_SST_BYTES,
    ROCKSDB_CHECKPOINT_BYTES,
    OBSERVED_METRIC,
    EVENT_TYPE_ROWS,
    EVENT_TYPE_LAST_COMMIT,
    EVENT_TYPE_SCHEMA_VERSION,
    EVENT_TYPE_FRESHNESS,
    QUARANTINED_ROWS,
    KAFKA_LOST_OFFSETS,
    CDC_ROWS,
    CDC_LAG,
    EXPECTATION_RECORDS,
    SCHEMA_ALERTS,
    STREAM_FAILURES,
    MONITOR_EVENTS_DROPPED,
    MONITOR_PROGRESS_LOG_FAILURES,
    MONITOR_WORKER_CPU,
)
