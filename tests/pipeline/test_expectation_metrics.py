"""Expectation counts from the pipeline's batch results to `streamops_expectation_records_total`,
through `MonitorEvents` and a started `StreamMonitor`, read back from its HTTP exporter.

No Spark: the monitor is started on a session whose query manager has no query (what it asks
Spark for at start and stop), so the counts reach the exporter only through the push API. With
the pipeline's tests, not the monitor's: `MonitorEvents` is the pipeline's and needs its PySpark,
and CI runs tests/monitor on PySpark 3.5 as well."""

from __future__ import annotations

import urllib.request
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streamops.monitor.metric_catalog import EXPECTATION_RECORDS, QUARANTINED_ROWS
from streamops.monitor.stream_monitor import StreamMonitor
from streamops.pipeline.pipeline_events import (
    CdcBatchResult,
    ExpectationCount,
    MonitorEvents,
    SilverBatchResult,
)


class NoQueries:
    """Spark's StreamingQueryManager with no query running: the listener is kept, never called."""

    active: list = []

    def __init__(self) -> None:
        self.listeners: list = []

    def addListener(self, listener) -> None:  # noqa: N802 - Spark's name
        self.listeners.append(listener)

    def removeListener(self, listener) -> None:  # noqa: N802 - Spark's name
        self.listeners.remove(listener)


@pytest.fixture
def monitor():
    started = StreamMonitor(SimpleNamespace(streams=NoQueries()), None, metrics_port=0).start()
    yield started
    started.stop(timeout=5)


def scraped(monitor: StreamMonitor) -> dict[tuple[str, str, str, str], float]:
    """(stream, table, expectation, outcome) -> rows, from the exporter's HTTP endpoint."""
    body = urllib.request.urlopen(monitor.exporter_url, timeout=10).read().decode()
    return {
        (s.labels["stream"], s.labels["table"], s.labels["expectation"], s.labels["outcome"]): s.value
        for family in text_string_to_metric_families(body)
        if family.name == EXPECTATION_RECORDS.name.removesuffix("_total")
        for s in family.samples
        if s.name == EXPECTATION_RECORDS.name
    }


def silver_batch(
    batch_id: int, *counts: ExpectationCount, quarantined: dict[str, int] | None = None
) -> SilverBatchResult:
    return SilverBatchResult("g0001", batch_id, {}, {}, quarantined or {}, (), expectations=counts)


def test_each_batch_adds_its_passed_and_failed_rows_per_table_and_rule(monitor):
    events = MonitorEvents(monitor)
    events.silver_committed(
        silver_batch(
            0,
            ExpectationCount("purchase", "price_nonneg", "drop", passed=95, failed=5, version=3),
            ExpectationCount("purchase", "has_id", "warn", passed=100, failed=0, version=3),
            ExpectationCount("login", "has_id", "warn", passed=40, failed=2, version=7),
        ),
        {},
    )
    events.silver_committed(
        silver_batch(1, ExpectationCount("purchase", "price_nonneg", "drop", passed=10, failed=1, version=4)), {}
    )
    events.cdc_applied(
        CdcBatchResult(
            "g0002",
            4,
            (),
            {},
            (),
            expectations=(ExpectationCount("public.orders", "one_order", "warn", passed=8, failed=3, version=9),),
        )
    )
    assert scraped(monitor) == {
        ("silver_g0001", "purchase", "price_nonneg", "passed"): 105,
        ("silver_g0001", "purchase", "price_nonneg", "failed"): 6,
        ("silver_g0001", "purchase", "has_id", "passed"): 100,
        ("silver_g0001", "purchase", "has_id", "failed"): 0,
        ("silver_g0001", "login", "has_id", "passed"): 40,
        ("silver_g0001", "login", "has_id", "failed"): 2,
        ("silver_g0002", "public.orders", "one_order", "passed"): 8,
        ("silver_g0002", "public.orders", "one_order", "failed"): 3,
    }


def test_a_rule_the_table_cannot_evaluate_yet_has_no_series(monitor):
    events = MonitorEvents(monitor)
    events.silver_committed(
        silver_batch(
            0,
            ExpectationCount("login", "price_nonneg", "drop", passed=0, failed=0, applicable=False),
            ExpectationCount("login", "has_id", "warn", passed=12, failed=0),
        ),
        {},
    )
    assert scraped(monitor) == {
        ("silver_g0001", "login", "has_id", "passed"): 12,
        ("silver_g0001", "login", "has_id", "failed"): 0,
    }


def test_rows_drop_rules_quarantined_are_counted_under_their_own_reason(monitor):
    events = MonitorEvents(monitor)
    events.silver_committed(silver_batch(0, quarantined={"expectation": 4, "incompatible_type": 2}), {})
    events.silver_committed(silver_batch(1, quarantined={"expectation": 1}), {})
    body = urllib.request.urlopen(monitor.exporter_url, timeout=10).read().decode()
    quarantined = {
        s.labels["reason"]: s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.name == QUARANTINED_ROWS.name
    }
    assert quarantined == {"expectation": 5, "incompatible_type": 2}


def test_a_batch_without_expectations_exports_no_series(monitor):
    MonitorEvents(monitor).silver_committed(silver_batch(0), {})
    assert scraped(monitor) == {}
