"""Every PromQL expression the dashboards and alert rules use, built from the metric catalog.

Dashboards and rules call the same functions; only the `Scope` differs (template-variable
filters on a dashboard, none in a rule). No metric name is typed here: selectors come from the
catalog specs through `streamops.dashboards.exposition`.

Grafana variables that may appear in an expression: `$stream`, `$group`, `$event_type`,
`$__rate_interval` and `$__range` (see `GRAFANA_VARIABLES`); everything else is plain PromQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamops.dashboards.exposition import BUCKET_LABEL, exposed_labels, sample_name, state_label
from streamops.monitor.metric_catalog import (
    BATCH_PHASE_DURATION,
    BATCH_PHASE_SECONDS,
    CDC_LAG,
    CDC_ROWS,
    EVENT_TYPE_LAST_COMMIT,
    EVENT_TYPE_ROWS,
    EVENT_TYPE_SCHEMA_VERSION,
    EXPECTATION_RECORDS,
    INPUT_ROWS,
    INPUT_ROWS_PER_SECOND,
    KAFKA_LOST_OFFSETS,
    LAST_PROGRESS,
    OBSERVED_METRIC,
    PROCESSED_ROWS_PER_SECOND,
    QUARANTINED_ROWS,
    SCHEMA_ALERTS,
    SOURCE_INFO,
    STATE_ROWS_DROPPED,
    STREAM_FAILURES,
    STREAM_INFO,
    STREAM_STATUS,
    STREAM_STATUSES,
    STREAM_WARNING,
    STREAM_WARNINGS,
    MetricSpec,
)

RATE_INTERVAL = "$__rate_interval"
DASHBOARD_RANGE = "$__range"
GRAFANA_VARIABLES: tuple[str, ...] = ("stream", "group", "event_type", "__rate_interval", "__range")
TOTAL_PHASE = "triggerExecution"
"""Spark's durationMs key covering the whole trigger (one of `BATCH_PHASES`); the other phases
are parts of it."""


@dataclass(frozen=True)
class Scope:
    """Label filters applied to every selector whose metric carries the label.

    One scope per dashboard (its template variables) and `UNSCOPED` for alert rules, so one
    expression function serves both.
    """

    matchers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, **matchers: str) -> Scope:
        return cls(tuple(sorted(matchers.items())))

    def for_labels(self, labels: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f"{label}{matcher}" for label, matcher in self.matchers if label in labels)


UNSCOPED = Scope()
FLEET = Scope.of(stream='=~"$stream"', group='=~"$group"', event_type='=~"$event_type"')
ONE_STREAM = Scope.of(stream='="$stream"')


def selector(spec: MetricSpec, scope: Scope = UNSCOPED, *extra: str) -> str:
    """`name{matchers}` for the series that hold the spec's value."""
    matchers = scope.for_labels(exposed_labels(spec)) + extra
    return sample_name(spec) + ("{" + ", ".join(matchers) + "}" if matchers else "")


def _state(status: str) -> str:
    if status not in STREAM_STATUSES:
        raise ValueError(f"`{status}` is not a stream status; use one of {', '.join(STREAM_STATUSES)}")
    return f'{state_label(STREAM_STATUS)}="{status}"'


def _status_selector(status: str, scope: Scope) -> str:
    return selector(STREAM_STATUS, scope, _state(status))


def per_stream(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    """One value per stream (`max` folds duplicate scrapes of the same exporter)."""
    return f"max by (stream) ({selector(spec, scope)})"


def fleet_total(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    return f"sum({selector(spec, scope)})"


def streams_in_status(status: str, scope: Scope = UNSCOPED) -> str:
    """How many streams are in `status` now (0, not empty, when none are)."""
    return f"sum({_status_selector(status, scope)})"


def in_status(status: str, scope: Scope = UNSCOPED) -> str:
    """1 for each stream in `status`, 0 for each stream in another status."""
    return f"max by (stream) ({_status_selector(status, scope)})"


def current_status(scope: Scope = UNSCOPED) -> str:
    """One series per stream, labelled with the state that is set."""
    label = state_label(STREAM_STATUS)
    return f"max by (stream, {label}) ({selector(STREAM_STATUS, scope)}) == 1"


def stream_groups(scope: Scope = UNSCOPED) -> str:
    """Which event group each stream serves (from the info metric's `group` label)."""
    return f"max by (stream, group) ({selector(STREAM_INFO, scope)})"


def top_by_stream(spec: MetricSpec, count: int, scope: Scope = UNSCOPED) -> str:
    return f"topk({count}, {per_stream(spec, scope)})"


def rows_read_per_second(scope: Scope = UNSCOPED, window: str = RATE_INTERVAL) -> str:
    """Rows read per second from the input counter (unlike the per-batch gauges, it averages)."""
    return f"sum by (stream) (rate({selector(INPUT_ROWS, scope)}[{window}]))"


def fleet_rows_read_per_second(scope: Scope = UNSCOPED) -> str:
    return f"sum(rate({selector(INPUT_ROWS, scope)}[{RATE_INTERVAL}]))"


def processing_to_input_ratio(scope: Scope = UNSCOPED) -> str:
    """Processed over input rate of the last batch: below 1 the stream reads faster than it works
    (NaN, never alerting, while a stream reads nothing)."""
    return f"{per_stream(PROCESSED_ROWS_PER_SECOND, scope)} / {per_stream(INPUT_ROWS_PER_SECOND, scope)}"


def seconds_since_progress(scope: Scope = UNSCOPED) -> str:
    return f"time() - {per_stream(LAST_PROGRESS, scope)}"


def seconds_since_commit(scope: Scope = UNSCOPED) -> str:
    """Per event type: seconds since its silver table last received a commit."""
    return f"time() - {per_event_type(EVENT_TYPE_LAST_COMMIT, scope)}"


def seconds_since_last_seen_progress(window: str, scope: Scope = UNSCOPED) -> str:
    """Age of the newest progress timestamp seen within `window`, excluding stopped streams.

    Taking `max_over_time` keeps a stream visible after its series disappear (query gone,
    exporter down, scrape failing), so silence itself makes the age grow. Parenthesised so a
    comparison appended to it applies to the whole.
    """
    last_seen = f"max by (stream) (max_over_time({selector(LAST_PROGRESS, scope)}[{window}]))"
    stopped = f"{in_status('stopped', scope)} == 1"
    return f"((time() - {last_seen}) unless on (stream) ({stopped}))"


def recent_increase(spec: MetricSpec, window: str, scope: Scope = UNSCOPED) -> str:
    """Counter increase over `window` that also counts a series born inside the window.

    `increase()` cannot see the first increment of a labelled counter created at 1 (it has no
    earlier sample), so a series absent `window` ago contributes its whole value instead.
    """
    series = selector(spec, scope)
    return f"({series} unless {series} offset {window}) or increase({series}[{window}])"


def failing(window: str, scope: Scope = UNSCOPED) -> str:
    """Above 0 while a stream is failed or has failed within `window` (a restarted crash loop
    never stays in `failed` long enough to be seen by status alone)."""
    failed_now = _status_selector("failed", scope)
    return f"max by (stream) ({failed_now} or {recent_increase(STREAM_FAILURES, window, scope)})"


def schema_alerts_recent(window: str, scope: Scope = UNSCOPED) -> str:
    return f"sum by (event_type) ({recent_increase(SCHEMA_ALERTS, window, scope)})"


def kafka_offsets_lost(window: str, scope: Scope = UNSCOPED) -> str:
    """Kafka offsets each stream's partitions lost to retention within `window`."""
    return f"sum by (stream, topic, partition) ({recent_increase(KAFKA_LOST_OFFSETS, window, scope)})"


TOMBSTONE_REASON = "tombstone"
"""A Kafka record without a value: Debezium sends one after every delete (for log compaction),
so a CDC stream quarantines them by the thousand and loses nothing; the ratio leaves them out."""


def quarantine_ratio(window: str, scope: Scope = UNSCOPED) -> str:
    """Share of a stream's input rows sent to quarantine over `window` (tombstones aside)."""
    rows = selector(QUARANTINED_ROWS, scope, f'reason!="{TOMBSTONE_REASON}"')
    quarantined = f"sum by (stream) (rate({rows}[{window}]))"
    return f"{quarantined} / {rows_read_per_second(scope, window)}"


def quarantine_rate_by_reason(scope: Scope = UNSCOPED) -> str:
    return f"sum by (reason) (rate({selector(QUARANTINED_ROWS, scope)}[{RATE_INTERVAL}]))"


def observed_metrics(scope: Scope = UNSCOPED) -> str:
    """Each metric of each named observation of the stream's query (`df.observe`)."""
    return f"max by (stream, observation, metric) ({selector(OBSERVED_METRIC, scope)})"


def phase_durations(scope: Scope = UNSCOPED) -> str:
    """Duration of each batch phase except the total, so stacking them adds up to the batch."""
    parts = selector(BATCH_PHASE_DURATION, scope, f'phase!="{TOTAL_PHASE}"')
    return f"max by (phase) ({parts})"


def increase_in_range(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    """How much a counter rose over the dashboard's time range, summed over its series."""
    return f"sum(increase({selector(spec, scope)}[{DASHBOARD_RANGE}]))"


def counter_rate(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    """Per-second rate of a counter, summed over its series (CPU seconds/s = cores busy)."""
    return f"sum(rate({selector(spec, scope)}[{RATE_INTERVAL}]))"


def event_type_rows_per_second(scope: Scope = UNSCOPED) -> str:
    return f"sum by (event_type) (rate({selector(EVENT_TYPE_ROWS, scope)}[{RATE_INTERVAL}]))"


def per_event_type(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    return f"max by (event_type, group) ({selector(spec, scope)})"


def schema_versions(scope: Scope = UNSCOPED) -> str:
    return per_event_type(EVENT_TYPE_SCHEMA_VERSION, scope)


def schema_alerts_in_range(scope: Scope = UNSCOPED) -> str:
    return f"sum by (event_type) ({recent_increase(SCHEMA_ALERTS, DASHBOARD_RANGE, scope)})"


def label_values(spec: MetricSpec, label: str, scope: Scope = UNSCOPED) -> str:
    """A Grafana template-variable query (not PromQL): the values `label` takes on the spec."""
    return f"label_values({selector(spec, scope)}, {label})"


def per_source(spec: MetricSpec, scope: Scope = UNSCOPED, *by: str) -> str:
    """One value per source of each stream, labelled with the source's position and kind (and
    per `by` label, e.g. `retention`)."""
    labels = ", ".join(("stream", "source", "kind", *by))
    return f"max by ({labels}) ({selector(spec, scope)})"


def least_per_stream(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    """The smallest value over a stream's series (the source with the least headroom)."""
    return f"min by (stream) ({selector(spec, scope)})"


def stream_sum(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    """A per-source or per-operator measure added up per stream (records behind, state rows)."""
    return f"sum by (stream) ({selector(spec, scope)})"


def per_operator(spec: MetricSpec, scope: Scope = UNSCOPED, *by: str) -> str:
    """One value per stateful operator of each stream (and per `by` label, e.g. `phase`)."""
    labels = ", ".join(("stream", "operator", *by))
    return f"max by ({labels}) ({selector(spec, scope)})"


def operator_rate(spec: MetricSpec, scope: Scope = UNSCOPED) -> str:
    """Per-second rate of a per-operator counter (rows updated, evicted, dropped as late)."""
    return f"sum by (stream, operator) (rate({selector(spec, scope)}[{RATE_INTERVAL}]))"


def source_descriptions(scope: Scope = UNSCOPED) -> str:
    """Each source of each stream with its kind and description (the info metric's labels)."""
    return f"max by (stream, source, kind, description) ({selector(SOURCE_INFO, scope)})"


def phase_quantile(quantile: float, scope: Scope = UNSCOPED, *by: str, window: str = RATE_INTERVAL) -> str:
    """The `quantile` of batch durations per phase over `window`, from the phase histogram
    (every batch counts, not only the last one of each scrape interval)."""
    labels = ", ".join((*by, BUCKET_LABEL))
    buckets = f"sum by ({labels}) (rate({selector(BATCH_PHASE_SECONDS, scope)}[{window}]))"
    return f"histogram_quantile({quantile:g}, {buckets})"


def whole_batch_quantile(quantile: float, scope: Scope = UNSCOPED, window: str = RATE_INTERVAL) -> str:
    """The `quantile` of whole-batch durations per stream."""
    return phase_quantile(quantile, Scope(scope.matchers + (("phase", f'="{TOTAL_PHASE}"'),)), "stream", window=window)


def _warning(code: str) -> str:
    if code not in STREAM_WARNINGS:
        raise ValueError(f"`{code}` is not a stream warning; use one of {', '.join(STREAM_WARNINGS)}")
    return f'{state_label(STREAM_WARNING)}="{code}"'


def warning_raised(code: str, scope: Scope = UNSCOPED) -> str:
    """1 for each stream with warning `code` now, 0 for each stream without it."""
    return f"max by (stream) ({selector(STREAM_WARNING, scope, _warning(code))})"


def streams_with_warning(scope: Scope = UNSCOPED) -> str:
    """How many streams carry each warning now."""
    label = state_label(STREAM_WARNING)
    return f"sum by ({label}) ({selector(STREAM_WARNING, scope)})"


def current_warnings(scope: Scope = UNSCOPED) -> str:
    """One series per stream and warning that holds now."""
    label = state_label(STREAM_WARNING)
    return f"max by (stream, {label}) ({selector(STREAM_WARNING, scope)}) == 1"


def cdc_rows_per_second(scope: Scope = UNSCOPED) -> str:
    """Rows CDC MERGEs changed per second, by table and change (inserted, updated, deleted,
    ignored)."""
    return f"sum by (table, change) (rate({selector(CDC_ROWS, scope)}[{RATE_INTERVAL}]))"


def cdc_lag(scope: Scope = UNSCOPED) -> str:
    """Each CDC table's lag: its last batch's silver commit minus the source commit of the newest
    change it applied."""
    return f"max by (stream, table) ({selector(CDC_LAG, scope)})"


RULE = "stream, table, expectation"
"""One rule on one table of one stream: what expectation queries group by."""


def _failed(scope: Scope) -> Scope:
    return Scope(scope.matchers + (("outcome", '="failed"'),))


def expectation_failures_per_second(scope: Scope = UNSCOPED) -> str:
    """Rows per second that failed each data-quality rule, by table and rule."""
    return f"sum by ({RULE}) (rate({selector(EXPECTATION_RECORDS, _failed(scope))}[{RATE_INTERVAL}]))"


def expectation_failure_ratio(window: str, scope: Scope = UNSCOPED) -> str:
    """Share of a table's rows that failed a rule over `window`, per stream, table and rule (a
    series born inside the window counts whole; NaN, never alerting, while no row was checked)."""
    failed = recent_increase(EXPECTATION_RECORDS, window, _failed(scope))
    checked = recent_increase(EXPECTATION_RECORDS, window, scope)
    return f"sum by ({RULE}) ({failed}) / sum by ({RULE}) ({checked})"


def late_rows_recent(window: str, scope: Scope = UNSCOPED) -> str:
    """Rows each stream's operators dropped as late within `window` (a new series counts too)."""
    return f"sum by (stream) ({recent_increase(STATE_ROWS_DROPPED, window, scope)})"
