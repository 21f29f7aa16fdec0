"""The alert rules on lag and health, defined once for Prometheus and for Grafana.

Each rule is a value expression (one number per stream or event type), a comparison with a
threshold and a pending period. Prometheus alerts on `value <op> threshold`; Grafana queries the
value, reduces it to its last point and applies the same threshold, so both fire on the same
series. Thresholds live in `AlertThresholds`; change them there and rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from streamops.dashboards import promql
from streamops.monitor.metric_catalog import (
    BACKLOG_ESTIMATED_SECONDS,
    BACKLOG_SECONDS,
    SOURCE_CHANGE_COMMITS,
    SOURCE_RETENTION_HEADROOM,
)

Comparison = Literal[">", "<"]
Severity = Literal["critical", "warning"]
ValueFormat = Literal["humanizeDuration", "humanizePercentage", "humanize"]

VALUE = "$VALUE"
"""Where a summary shows the alerting value; each target renders it in its own template syntax."""
RULE_GROUP = "streamops"
SERVICE_LABEL = {"service": "streamops"}


@dataclass(frozen=True)
class AlertThresholds:
    """When each alert fires. Durations are Prometheus durations (`10m`, `6h`)."""

    backlog_seconds: float = 600
    backlog_for: str = "10m"
    stalled_for: str = "5m"
    failure_window: str = "15m"
    silent_seconds: float = 900
    silent_lookback: str = "6h"
    silent_for: str = "5m"
    processing_ratio: float = 1.0
    processing_for: str = "15m"
    schema_window: str = "15m"
    quarantine_ratio: float = 0.05
    quarantine_window: str = "10m"
    quarantine_for: str = "10m"
    source_lag_seconds: float = 600
    source_lag_for: str = "10m"
    state_unbounded_for: str = "30m"
    watermark_stalled_for: str = "10m"
    late_rows_window: str = "15m"
    retention_headroom_seconds: float = 86400
    retention_headroom_for: str = "5m"
    kafka_loss_window: str = "15m"
    cdc_lag_seconds: float = 300
    cdc_lag_for: str = "10m"
    expectation_failure_ratio: float = 0.05
    expectation_window: str = "10m"
    expectation_for: str = "5m"


@dataclass(frozen=True)
class AlertRule:
    name: str
    value: str
    comparison: Comparison
    threshold: float
    pending: str
    severity: Severity
    summary: str
    description: str
    value_format: ValueFormat = "humanize"

    @property
    def expr(self) -> str:
        """The Prometheus alerting expression."""
        return f"{self.value} {self.comparison} {format_number(self.threshold)}"

    def summary_with(self, value_reference: str) -> str:
        """The summary with `$VALUE` rendered as `value_reference` piped through the format."""
        return self.summary.replace(VALUE, f"{{{{ {value_reference} | {self.value_format} }}}}")


def format_number(value: float) -> str:
    return f"{value:g}"


STATUS = "`streamops status --lake <lake>`"
DOCTOR = "`streamops checkpoint doctor --lake <lake>`"
VACUUM = "`streamops lake vacuum --lake <lake>`"


def build_alert_rules(thresholds: AlertThresholds = AlertThresholds()) -> tuple[AlertRule, ...]:
    t = thresholds
    return (
        AlertRule(
            name="BacklogSecondsHigh",
            value=promql.per_stream(BACKLOG_SECONDS),
            comparison=">",
            threshold=t.backlog_seconds,
            pending=t.backlog_for,
            severity="warning",
            summary=f"Stream {{{{ $labels.stream }}}} is {VALUE} behind its source",
            description=(
                "The oldest source commit stream {{ $labels.stream }} has not processed is older "
                f"than {format_number(t.backlog_seconds)}s, and has been for {t.backlog_for}. Run "
                f"{STATUS} for its backlog in versions, files and bytes; the Stream detail dashboard "
                "shows which batch phase grew. If batches are slow, give the query more executors "
                f"or fewer files per trigger; if it makes no progress at all, run {DOCTOR}."
            ),
            value_format="humanizeDuration",
        ),
        AlertRule(
            name="StreamStalled",
            value=promql.in_status("stalled"),
            comparison=">",
            threshold=0,
            pending=t.stalled_for,
            severity="critical",
            summary="Stream {{ $labels.stream }} is stalled: its source has data it does not process",
            description=(
                f"Stream {{{{ $labels.stream }}}} has been stalled for {t.stalled_for}: it runs but "
                f"its backlog does not shrink. Run {STATUS}, then {DOCTOR}: it finds a batch planned "
                "but never committed, or source versions removed by log cleanup. Check the driver "
                "log for a batch that hangs before restarting the stream."
            ),
        ),
        AlertRule(
            name="StreamFailed",
            value=promql.failing(t.failure_window),
            comparison=">",
            threshold=0,
            pending="0m",
            severity="critical",
            summary="Stream {{ $labels.stream }} failed",
            description=(
                "Stream {{ $labels.stream }} terminated with an exception, now or within the last "
                f"{t.failure_window} (a restart loop counts). Run {STATUS} to read the exception and "
                f"{DOCTOR} before restarting it with `streamops run`."
            ),
        ),
        AlertRule(
            name="StreamAbsent",
            value=promql.seconds_since_last_seen_progress(t.silent_lookback),
            comparison=">",
            threshold=t.silent_seconds,
            pending=t.silent_for,
            severity="critical",
            summary=f"Stream {{{{ $labels.stream }}}} has reported no progress for {VALUE}",
            description=(
                "Stream {{ $labels.stream }} has sent no progress event for more than "
                f"{format_number(t.silent_seconds)}s, or its metrics disappeared (query gone, "
                "process or exporter down, scrape failing). Check the Prometheus target of the "
                f"streamops exporter first, then run {STATUS}. If the process is gone, run {DOCTOR} "
                "and restart it with `streamops run`."
            ),
            value_format="humanizeDuration",
        ),
        AlertRule(
            name="ProcessingBelowInput",
            value=promql.processing_to_input_ratio(),
            comparison="<",
            threshold=t.processing_ratio,
            pending=t.processing_for,
            severity="warning",
            summary=f"Stream {{{{ $labels.stream }}}} processes rows at {VALUE} of the rate they arrive",
            description=(
                f"For {t.processing_for}, stream {{{{ $labels.stream }}}} has processed rows more "
                f"slowly than they arrived, so its backlog grows. Run {STATUS}; the Stream detail "
                "dashboard shows batch duration by phase. Add executors, or lengthen the trigger "
                "interval so each batch amortises its fixed cost."
            ),
            value_format="humanizePercentage",
        ),
        AlertRule(
            name="IncompatibleSchemaChange",
            value=promql.schema_alerts_recent(t.schema_window),
            comparison=">",
            threshold=0,
            pending="0m",
            severity="warning",
            summary="Incompatible schema change for event type {{ $labels.event_type }}",
            description=(
                "Event type {{ $labels.event_type }} received a schema change its silver table "
                f"cannot take (within the last {t.schema_window}). The pipeline isolated it and "
                "recorded it in <lake>/_system/schema_alerts; other event types are unaffected. Read "
                "the alert rows for the change and what was done with it, then fix the producer or "
                f"evolve the table. {STATUS} lists the affected streams."
            ),
        ),
        AlertRule(
            name="QuarantineSpike",
            value=promql.quarantine_ratio(t.quarantine_window),
            comparison=">",
            threshold=t.quarantine_ratio,
            pending=t.quarantine_for,
            severity="warning",
            summary=f"Stream {{{{ $labels.stream }}}} quarantines {VALUE} of the rows it reads",
            description=(
                f"Over {t.quarantine_window}, more than {format_number(t.quarantine_ratio * 100)}% "
                "of the rows stream {{ $labels.stream }} read went to <lake>/bronze/quarantine. The "
                "Fleet overview's quarantine panel shows which reason grew; query the quarantine "
                "table by reason for the raw records and fix the producer. Run "
                f"{STATUS} for the stream's input. Tombstones (Kafka records without a value, which "
                "Debezium sends after each delete) are left out: they carry no data."
            ),
            value_format="humanizePercentage",
        ),
        AlertRule(
            name="CdcLagHigh",
            value=promql.cdc_lag(),
            comparison=">",
            threshold=t.cdc_lag_seconds,
            pending=t.cdc_lag_for,
            severity="warning",
            summary=(
                f"CDC table {{{{ $labels.table }}}} of stream {{{{ $labels.stream }}}} lands changes {VALUE} "
                "after its database committed them"
            ),
            description=(
                "The last batches of stream {{ $labels.stream }} committed changes of source table "
                f"{{{{ $labels.table }}}} more than {format_number(t.cdc_lag_seconds)}s after the database "
                f"committed them, for {t.cdc_lag_for}: the silver table is that far behind the database. The "
                "Stream detail dashboard shows the stream's backlog and batch phases: if batches are slow, give it "
                "executors or shorten the trigger; if its Kafka source lags, so does Debezium's topic (check the "
                f"connector). <lake>/_system/cdc_applies has each batch's lag per table; {STATUS} shows the stream."
            ),
            value_format="humanizeDuration",
        ),
        AlertRule(
            name="ExpectationFailureRatioHigh",
            value=promql.expectation_failure_ratio(t.expectation_window),
            comparison=">",
            threshold=t.expectation_failure_ratio,
            pending=t.expectation_for,
            severity="warning",
            summary=(
                f"{VALUE} of the rows of table {{{{ $labels.table }}}} (stream {{{{ $labels.stream }}}}) fail "
                "expectation {{ $labels.expectation }}"
            ),
            description=(
                f"Over {t.expectation_window}, more than {format_number(t.expectation_failure_ratio * 100)}% of the "
                "rows stream {{ $labels.stream }} wrote to table {{ $labels.table }} failed the data-quality rule "
                "{{ $labels.expectation }}, and have for "
                f"{t.expectation_for}. <lake>/_system/expectations has each batch's passed and failed rows per rule "
                "and the Delta version it wrote; a `drop` rule's rows are in <lake>/bronze/quarantine with reason "
                "`expectation` and their raw payload (the console's Expectations page shows examples). "
                f"{STATUS} lists the table's failing rules since when. Fix the producer, or the rule if the data "
                "is right; dropped rows can be replayed from the quarantine."
            ),
            value_format="humanizePercentage",
        ),
        AlertRule(
            name="KafkaOffsetsLost",
            value=promql.kafka_offsets_lost(t.kafka_loss_window),
            comparison=">",
            threshold=0,
            pending="0m",
            severity="critical",
            summary=(
                f"Stream {{{{ $labels.stream }}}} lost {VALUE} offsets of topic {{{{ $labels.topic }}}} "
                "partition {{ $labels.partition }}"
            ),
            description=(
                "Kafka retention deleted records of topic {{ $labels.topic }} partition "
                "{{ $labels.partition }} before stream {{ $labels.stream }} read them (it runs with "
                f"--allow-data-loss, so it went on; within the last {t.kafka_loss_window}). Each lost "
                "range is a row of <lake>/_system/kafka_data_loss: replay those offsets from their "
                f"producer, and lengthen the topic's retention.ms or speed up the stream ({STATUS} "
                "shows how far behind it is)."
            ),
        ),
        AlertRule(
            name="SourceLagEstimateHigh",
            value=promql.per_stream(BACKLOG_ESTIMATED_SECONDS),
            comparison=">",
            threshold=t.source_lag_seconds,
            pending=t.source_lag_for,
            severity="warning",
            summary=f"Stream {{{{ $labels.stream }}}} needs about {VALUE} to read what waits in its source",
            description=(
                "A source of stream {{ $labels.stream }} (Kafka or another offset-based source) is so "
                "far behind its latest offset that reading it at the rate of recent batches takes "
                f"more than {format_number(t.source_lag_seconds)}s, and has for {t.source_lag_for}. "
                f"Run {STATUS} for each source's records behind; the Stream detail dashboard shows "
                "which source and partition. Raise maxOffsetsPerTrigger or add executors."
            ),
            value_format="humanizeDuration",
        ),
        AlertRule(
            name="StateUnbounded",
            value=promql.warning_raised("state_unbounded"),
            comparison=">",
            threshold=0,
            pending=t.state_unbounded_for,
            severity="warning",
            summary="Stream {{ $labels.stream }} keeps state that only grows",
            description=(
                f"For {t.state_unbounded_for}, the state rows of stream {{{{ $labels.stream }}}} have "
                "grown batch after batch with no row evicted: state memory and checkpoint size will "
                "grow until the driver or executors fail. Add a watermark to the aggregation or "
                "deduplication (dropDuplicatesWithinWatermark), or a state TTL; the Stream detail "
                f"dashboard shows which operator grows and {STATUS} the state after the last batch."
            ),
        ),
        AlertRule(
            name="WatermarkStalled",
            value=promql.warning_raised("watermark_stalled"),
            comparison=">",
            threshold=0,
            pending=t.watermark_stalled_for,
            severity="warning",
            summary="The watermark of stream {{ $labels.stream }} does not advance while rows arrive",
            description=(
                f"For {t.watermark_stalled_for}, stream {{{{ $labels.stream }}}} has read rows but its "
                "event-time watermark has not moved: windows do not close, nothing is emitted in "
                "append mode and state is not evicted. Usually one idle source of a join or union "
                "holds the global watermark (set spark.sql.streaming.multipleWatermarkPolicy=max "
                f"or feed the idle source), or event times stopped advancing. {STATUS} shows the "
                "watermark lag."
            ),
        ),
        AlertRule(
            name="LateRowsDropped",
            value=promql.late_rows_recent(t.late_rows_window),
            comparison=">",
            threshold=0,
            pending="0m",
            severity="warning",
            summary=f"Stream {{{{ $labels.stream }}}} dropped {VALUE} late rows",
            description=(
                f"Within the last {t.late_rows_window}, stateful operators of stream "
                "{{ $labels.stream }} dropped input rows whose event time was behind the watermark; "
                "they are missing from its results. If they must count, raise the watermark delay; "
                f"otherwise find the producer that sends old events. {STATUS} lists the warning."
            ),
        ),
        AlertRule(
            name="SourceRetentionHeadroomLow",
            value=promql.least_per_stream(SOURCE_RETENTION_HEADROOM),
            comparison="<",
            threshold=t.retention_headroom_seconds,
            pending=t.retention_headroom_for,
            severity="critical",
            summary=f"Unread source data of stream {{{{ $labels.stream }}}} can be deleted by retention in {VALUE}",
            description=(
                "Stream {{ $labels.stream }} has not read Delta source data committed so long ago that, "
                f"within {format_number(t.retention_headroom_seconds)}s, VACUUM may delete its files "
                "(delta.deletedFileRetentionDuration) or log cleanup its commits "
                "(delta.logRetentionDuration); a restart after that fails and the data is lost to the "
                f"stream. Catch the stream up first ({STATUS} shows why it lags); vacuum with {VACUUM}, "
                "which keeps what streams still need, or raise the source table's retention."
            ),
            value_format="humanizeDuration",
        ),
        AlertRule(
            name="SourceChangeCommitsUnread",
            value=promql.stream_sum(SOURCE_CHANGE_COMMITS),
            comparison=">",
            threshold=0,
            pending="0m",
            severity="warning",
            summary=f"Stream {{{{ $labels.stream }}}} has {VALUE} unread source commits that are not appends",
            description=(
                "A Delta source of stream {{ $labels.stream }} holds commits it has not read yet that "
                "delete, rewrite (UPDATE, MERGE, OVERWRITE) or change the schema of the table. With "
                "Delta's default options the stream fails when it reaches the first; with "
                "skipChangeCommits it skips them, with ignoreChanges it reads rewritten files again "
                f"(duplicates); a schema change stops it whatever the options. {DOCTOR} and {STATUS} "
                "name each version and operation: decide before the stream gets there."
            ),
        ),
    )
