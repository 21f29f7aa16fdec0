"""Prometheus exporter: a custom collector that builds every family from the metric catalog at
scrape time, from a snapshot of the fleet, and prometheus_client's own HTTP server.

Status is evaluated at scrape time because "no progress for several intervals" depends on when
one looks; everything else is read from the snapshot.
"""

from __future__ import annotations

from streamops.core.extras import require

require("monitor", __name__)

import time
from dataclasses import dataclass
from typing import Callable, Iterator

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
    StateSetMetricFamily,
)
from prometheus_client.registry import Collector

from streamops.monitor import metric_catalog as catalog
from streamops.monitor.detail_samples import add_source_samples, add_state_samples, add_time_samples
from streamops.monitor.exceptions import MonitorError
from streamops.monitor.fleet import Fleet, StreamView
from streamops.monitor.metric_catalog import CATALOG, STREAM_INFO_KEYS, STREAM_STATUSES, STREAM_WARNINGS, MetricSpec
from streamops.monitor.status_rules import DEFAULT_POLICY, StatusPolicy, arrival_rate, evaluate

_FAMILIES: dict[str, Callable[..., Metric]] = {
    "gauge": GaugeMetricFamily,
    "counter": CounterMetricFamily,
    "stateset": StateSetMetricFamily,
    "info": InfoMetricFamily,
    "histogram": HistogramMetricFamily,
}


def new_family(spec: MetricSpec) -> Metric:
    return _FAMILIES[spec.kind](spec.name, spec.help, labels=spec.labels)


class FleetCollector(Collector):
    def __init__(
        self,
        fleet: Fleet,
        dropped_events: Callable[[], int] = lambda: 0,
        policy: StatusPolicy = DEFAULT_POLICY,
        clock: Callable[[], float] = time.time,
        worker_cpu_seconds: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self._fleet = fleet
        self._dropped_events = dropped_events
        self._worker_cpu_seconds = worker_cpu_seconds
        self._policy = policy
        self._clock = clock

    def describe(self) -> list[Metric]:
        """Nothing to describe up front: families are built from live state at each scrape."""
        return []

    def collect(self) -> Iterator[Metric]:
        now = self._clock()
        snapshot = self._fleet.snapshot(self._dropped_events())
        families = {spec.name: new_family(spec) for spec in CATALOG}

        def add(spec: MetricSpec, labels: list[str], value: object) -> None:
            family = families[spec.name]
            if spec.kind == "histogram":
                buckets, total = value  # type: ignore[misc]
                family.add_metric(labels, buckets, total)  # type: ignore[attr-defined]
            else:
                family.add_metric(labels, value)  # type: ignore[attr-defined]

        for view in snapshot.streams:
            self._add_stream(add, view, now)
        for et in snapshot.event_types:
            labels = [et.event_type, et.group]
            add(catalog.EVENT_TYPE_ROWS, labels, et.rows_total)
            if et.last_commit_time is not None:
                add(catalog.EVENT_TYPE_LAST_COMMIT, labels, et.last_commit_time)
            if et.schema_version is not None:
                add(catalog.EVENT_TYPE_SCHEMA_VERSION, labels, et.schema_version)
            if et.max_event_time is not None:
                add(catalog.EVENT_TYPE_FRESHNESS, labels, max(0.0, now - et.max_event_time))
        for stream, reason, rows in snapshot.quarantined:
            add(catalog.QUARANTINED_ROWS, [stream, reason], rows)
        for stream, topic, partition, offsets in snapshot.kafka_lost:
            add(catalog.KAFKA_LOST_OFFSETS, [stream, topic, str(partition)], offsets)
        for event_type, count in snapshot.schema_alerts:
            add(catalog.SCHEMA_ALERTS, [event_type], count)
        for stream, table, change, rows in snapshot.cdc_rows:
            add(catalog.CDC_ROWS, [stream, table, change], rows)
        for stream, table, lag in snapshot.cdc_lag:
            add(catalog.CDC_LAG, [stream, table], lag)
        for stream, table, expectation, outcome, rows in snapshot.expectation_rows:
            add(catalog.EXPECTATION_RECORDS, [stream, table, expectation, outcome], rows)
        add(catalog.MONITOR_EVENTS_DROPPED, [], snapshot.dropped_events)
        add(catalog.MONITOR_PROGRESS_LOG_FAILURES, [], snapshot.progress_log_failures)
        add(catalog.MONITOR_WORKER_CPU, [], self._worker_cpu_seconds())
        yield from families.values()

    def _add_stream(self, add: Callable[[MetricSpec, list[str], object], None], view: StreamView, now: float) -> None:
        labels = [view.stream]
        obs = view.observation
        verdict = evaluate(obs, now, self._policy)
        add(catalog.STREAM_UP, labels, 1 if obs.active else 0)
        add(catalog.STREAM_STATUS, labels, {s: s == verdict.status for s in STREAM_STATUSES})
        raised = {warning.code for warning in verdict.warnings}
        add(catalog.STREAM_WARNING, labels, {w: w in raised for w in STREAM_WARNINGS})
        add(catalog.STREAM_INFO, labels, {key: str(getattr(view, key)) for key in STREAM_INFO_KEYS})
        add(catalog.INPUT_ROWS, labels, view.input_rows_total)
        add(catalog.STREAM_FAILURES, labels, view.failures)
        progress = view.last_progress
        if progress is not None:
            rate = arrival_rate(obs.samples[-2], obs.samples[-1]) if len(obs.samples) >= 2 else None
            add(
                catalog.INPUT_ROWS_PER_SECOND,
                labels,
                progress.input_rows_per_second if rate is None else rate,
            )
            add(catalog.PROCESSED_ROWS_PER_SECOND, labels, progress.processed_rows_per_second)
            duration_ms = progress.duration_ms.get("triggerExecution", progress.batch_duration_ms)
            add(catalog.BATCH_DURATION, labels, duration_ms / 1000.0)
            for phase in catalog.BATCH_PHASES:
                if phase in progress.duration_ms:
                    add(catalog.BATCH_PHASE_DURATION, labels + [phase], progress.duration_ms[phase] / 1000.0)
            add(catalog.LAST_PROGRESS, labels, progress.timestamp + progress.batch_duration_ms / 1000.0)
            add(catalog.BATCH_ID, labels, progress.batch_id)
        if view.max_event_time is not None:
            add(catalog.FRESHNESS, labels, max(0.0, now - view.max_event_time))
        for observation, metric, value in view.observed_metrics:
            add(catalog.OBSERVED_METRIC, labels + [observation, metric], value)
        add_source_samples(add, view)
        add_state_samples(add, view)
        add_time_samples(add, view)


@dataclass
class MetricsServer:
    """prometheus_client's HTTP server for one registry, stoppable (tests start many)."""

    httpd: object
    thread: object
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self, timeout: float = 10.0) -> None:
        """Close the socket and join the serving thread (no thread of ours outlives the monitor)."""
        self.httpd.shutdown()  # type: ignore[attr-defined]
        self.httpd.server_close()  # type: ignore[attr-defined]
        self.thread.join(timeout)  # type: ignore[attr-defined]


def serve_metrics(registry: CollectorRegistry, port: int, host: str = catalog.DEFAULT_METRICS_HOST) -> MetricsServer:
    """Serve `registry` on host:port (port 0 picks a free one)."""
    try:
        httpd, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as error:
        raise MonitorError(
            f"cannot serve metrics on {host}:{port}: {error.strerror or error}; "
            "choose another port (--metrics-port) or stop what holds it"
        ) from error
    return MetricsServer(httpd, thread, host, httpd.server_port)
