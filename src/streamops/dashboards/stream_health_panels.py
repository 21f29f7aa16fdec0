"""Per-source lag, stateful operators, watermark and batch-time percentiles: the panels that
cover any Structured Streaming query (Kafka, files, Delta, joins, aggregations), for the stream
detail dashboard (one stream) and the fleet overview (the worst streams).

Each panel draws only series the exporter has for the stream, so a stateless query shows empty
state panels rather than zeros that would read as "no state".
"""

from __future__ import annotations

from streamops.core.extras import require

require("dashboards", __name__)

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from streamops.dashboards import panels, promql
from streamops.dashboards.exposition import state_label
from streamops.monitor.metric_catalog import (
    BACKLOG_ESTIMATED_SECONDS,
    BACKLOG_MAX_PARTITION_OFFSETS,
    BACKLOG_OFFSETS,
    EVENT_TIME_MAX_LAG,
    PARTITION_BACKLOG_OFFSETS,
    ROCKSDB_CHECKPOINT_BYTES,
    ROCKSDB_COMMIT_SECONDS,
    ROCKSDB_SST_BYTES,
    SOURCE_CHANGE_COMMITS,
    SOURCE_RETENTION_HEADROOM,
    STATE_MEMORY,
    STATE_ROWS,
    STATE_ROWS_DROPPED,
    STATE_ROWS_REMOVED,
    STATE_ROWS_UPDATED,
    STREAM_WARNING,
    WATERMARK_LAG,
)

SOURCE_LEGEND = "source {{source}} ({{kind}})"
OPERATOR_LEGEND = "{{operator}}"
TOP = 10
P95 = 0.95


def with_stream_health_panels(builder: Dashboard, scope: promql.Scope) -> Dashboard:
    """The stream detail's rows for one stream's sources, state, watermark and batch times."""
    warning = state_label(STREAM_WARNING)
    return (
        builder.with_row(Row("Sources"))
        .with_panel(
            panels.table_of(
                "Sources",
                "Each source of the query: its position (Spark's sources/<id>), kind (`unknown` for a "
                "source streamops does not recognise) and Spark's description.",
                [panels.query(promql.source_descriptions(scope), as_table=True)],
                rename={"source": "source", "kind": "kind", "description": "description"},
                sort_by="source",
                hide=("stream", "Value"),
                height=6,
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "Records behind latest offset",
                "Per source, records between the offset processed and the source's latest (Kafka: "
                "summed over partitions), as reported after each batch.",
                "none",
                promql.per_source(BACKLOG_OFFSETS, scope),
                SOURCE_LEGEND,
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "Source lag (estimated seconds)",
                "Estimated seconds to read each source's offset backlog at the rate it read over "
                "recent batches (an estimate: it ignores what arrives meanwhile).",
                "s",
                promql.per_source(BACKLOG_ESTIMATED_SECONDS, scope),
                SOURCE_LEGEND,
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "Worst partition behind",
                "Records the most lagging partition of each source is behind its latest offset "
                "(`maxOffsetsBehindLatest`): one slow partition hides in the sum.",
                "none",
                promql.per_source(BACKLOG_MAX_PARTITION_OFFSETS, scope),
                SOURCE_LEGEND,
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "Kafka lag by partition",
                "Records each partition of a Kafka source is behind the broker's latest offset (as the "
                "source last saw it) after the stream's last batch; what Burrow or kafka_exporter show "
                "for a consumer group that commits.",
                "none",
                promql.per_source(PARTITION_BACKLOG_OFFSETS, scope, "topic", "partition"),
                SOURCE_LEGEND + " {{topic}}/{{partition}}",
                width=12,
            )
        )
        .with_panel(
            panels.series_panel(
                "Retention headroom",
                "Per Delta source: time left before VACUUM (deleted_files) or log cleanup (log) may "
                "remove the oldest data the stream has not read (its commit time + the table's "
                "retention - now). Under a day fires SourceRetentionHeadroomLow.",
                "s",
                promql.per_source(SOURCE_RETENTION_HEADROOM, scope, "retention"),
                SOURCE_LEGEND + " {{retention}}",
                width=12,
            )
        )
        .with_panel(
            panels.series_panel(
                "Unread change commits",
                "Per Delta source: unread commits that delete, rewrite or change the schema of the "
                "table. By default the stream fails when it reaches one; `streamops checkpoint "
                "doctor` names them.",
                "none",
                promql.per_source(SOURCE_CHANGE_COMMITS, scope, "change"),
                SOURCE_LEGEND + " {{change}}",
                width=12,
            )
        )
        .with_panel(
            panels.time_series(
                "Watermark and event-time lag",
                "Batch start minus the event-time watermark (how far windows trail real time) and "
                "minus the newest event time read. A watermark lag that only grows while rows "
                "arrive is a stalled watermark.",
                "s",
                [
                    panels.query(promql.per_stream(WATERMARK_LAG, scope), "watermark lag"),
                    panels.query(promql.per_stream(EVENT_TIME_MAX_LAG, scope), "newest event lag"),
                ],
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "Warnings",
                "1 while a warning holds: unbounded state, stalled watermark, late rows dropped, "
                "source retention low, unread source change commits (rules in the docs: Monitoring).",
                "none",
                promql.current_warnings(scope),
                f"{{{{{warning}}}}}",
                width=8,
            )
        )
        .with_row(Row("State"))
        .with_panel(
            panels.series_panel(
                "State rows",
                "Rows each stateful operator holds after each batch: growth without eviction is unbounded state.",
                "none",
                promql.per_operator(STATE_ROWS, scope),
                OPERATOR_LEGEND,
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "State memory",
                "Memory each operator's state stores use (for RocksDB, its memtables and caches).",
                "bytes",
                promql.per_operator(STATE_MEMORY, scope),
                OPERATOR_LEGEND,
                width=8,
            )
        )
        .with_panel(
            panels.time_series(
                "State rows updated, evicted, dropped late",
                "Per operator, rows per second added or updated, evicted (watermark, timeout, TTL) "
                "and input rows dropped as later than the watermark.",
                "rowsps",
                [
                    panels.query(promql.operator_rate(STATE_ROWS_UPDATED, scope), "updated {{operator}}"),
                    panels.query(promql.operator_rate(STATE_ROWS_REMOVED, scope), "evicted {{operator}}"),
                    panels.query(promql.operator_rate(STATE_ROWS_DROPPED, scope), "late {{operator}}"),
                ],
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "RocksDB commit by phase",
                "RocksDB state store only: time each phase of the last batch's state commit took; "
                "a growing checkpoint or compact phase slows every batch.",
                "s",
                promql.per_operator(ROCKSDB_COMMIT_SECONDS, scope, "phase"),
                "{{operator}} {{phase}}",
                width=8,
                stacked=True,
            )
        )
        .with_panel(
            panels.time_series(
                "RocksDB files",
                "RocksDB state store only: bytes of live SST files (state on disk) and bytes per "
                "second uploaded to the checkpoint location.",
                "bytes",
                [
                    panels.query(promql.per_operator(ROCKSDB_SST_BYTES, scope), "SST {{operator}}"),
                    panels.query(promql.operator_rate(ROCKSDB_CHECKPOINT_BYTES, scope), "uploaded/s {{operator}}"),
                ],
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "Batch p95 by phase",
                "95th percentile of each batch phase over the rate interval, from every batch "
                "(the phase histogram), not only the last one per scrape.",
                "s",
                promql.phase_quantile(P95, scope, "phase"),
                "{{phase}}",
                width=8,
            )
        )
    )


def with_fleet_health_panels(builder: Dashboard, scope: promql.Scope) -> Dashboard:
    """The fleet overview's row: the streams furthest behind in records, the largest state, the
    furthest watermarks, the slowest batches and how many streams carry each warning."""
    warning = state_label(STREAM_WARNING)
    return (
        builder.with_row(Row("Sources, state and watermarks"))
        .with_panel(
            panels.ranking(
                f"Top {TOP} by records behind",
                "Records behind the latest offset, summed over each stream's sources (Kafka and "
                "other offset-based sources).",
                "none",
                f"topk({TOP}, {promql.stream_sum(BACKLOG_OFFSETS, scope)})",
                ((None, "green"),),
                width=8,
            )
        )
        .with_panel(
            panels.ranking(
                f"Top {TOP} by state rows",
                "Rows held by each stream's stateful operators, summed.",
                "none",
                f"topk({TOP}, {promql.stream_sum(STATE_ROWS, scope)})",
                ((None, "green"),),
                width=8,
            )
        )
        .with_panel(
            panels.ranking(
                f"Top {TOP} by watermark lag",
                "Batch start minus the event-time watermark of each watermarked stream.",
                "s",
                promql.top_by_stream(WATERMARK_LAG, TOP, scope),
                ((None, "green"),),
                width=8,
            )
        )
        .with_panel(
            panels.series_panel(
                "Streams with each warning",
                "How many streams carry each warning (unbounded state, stalled watermark, late rows "
                "dropped); the Stream detail dashboard shows which.",
                "none",
                promql.streams_with_warning(scope),
                f"{{{{{warning}}}}}",
            )
        )
        .with_panel(
            panels.series_panel(
                "Batch duration p95",
                "95th percentile of whole-batch duration per stream over the rate interval.",
                "s",
                promql.whole_batch_quantile(P95, scope),
                "{{stream}}",
            )
        )
    )
