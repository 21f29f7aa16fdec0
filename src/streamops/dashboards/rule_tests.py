"""`promtool test rules` cases: for every alert, synthetic series that must fire it and healthy
series beside them that must not.

Series use promtool's expanding notation (`0+60x40` counts up by 60 a step, `900x20` repeats,
`_` is a missed scrape). Each case evaluates at a time where the faulty series have passed the
rule's pending period, and at least once where nothing may fire yet, so a rule that fires too
early, too late, or on a healthy stream fails the test. Expected summaries are written out by
hand: they check the value formatting of each annotation too. The numbers assume the default
`AlertThresholds`; change a threshold and these cases tell you which expectations moved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from streamops.dashboards.alert_rules import SERVICE_LABEL, AlertRule
from streamops.dashboards.exposition import sample_name, state_label
from streamops.monitor.metric_catalog import (
    BACKLOG_ESTIMATED_SECONDS,
    BACKLOG_SECONDS,
    CDC_LAG,
    EXPECTATION_RECORDS,
    INPUT_ROWS,
    INPUT_ROWS_PER_SECOND,
    KAFKA_LOST_OFFSETS,
    LAST_PROGRESS,
    PROCESSED_ROWS_PER_SECOND,
    QUARANTINED_ROWS,
    SCHEMA_ALERTS,
    SOURCE_CHANGE_COMMITS,
    SOURCE_RETENTION_HEADROOM,
    STATE_ROWS_DROPPED,
    STREAM_FAILURES,
    STREAM_STATUS,
    STREAM_WARNING,
    MetricSpec,
)

STEP = "1m"


@dataclass(frozen=True)
class Series:
    name: str
    labels: tuple[tuple[str, str], ...]
    values: str

    @property
    def text(self) -> str:
        inner = ", ".join(f'{key}="{value}"' for key, value in self.labels)
        return f"{self.name}{{{inner}}}"


def series(spec: MetricSpec, values: str, **labels: str) -> Series:
    return Series(sample_name(spec), tuple(sorted(labels.items())), values)


def status_series(stream: str, status: str, values: str) -> Series:
    return series(STREAM_STATUS, values, stream=stream, **{state_label(STREAM_STATUS): status})


def warning_series(stream: str, warning: str, values: str) -> Series:
    return series(STREAM_WARNING, values, stream=stream, **{state_label(STREAM_WARNING): warning})


def expectation_series(stream: str, table: str, expectation: str, outcome: str, values: str) -> Series:
    return series(EXPECTATION_RECORDS, values, stream=stream, table=table, expectation=expectation, outcome=outcome)


@dataclass(frozen=True)
class Firing:
    labels: Mapping[str, str]
    summary: str


@dataclass(frozen=True)
class RuleCase:
    alert: str
    input_series: tuple[Series, ...]
    evaluations: tuple[tuple[str, tuple[Firing, ...]], ...]


CASES: tuple[RuleCase, ...] = (
    RuleCase(
        alert="BacklogSecondsHigh",
        input_series=(
            series(BACKLOG_SECONDS, "900x20", stream="slow"),
            series(BACKLOG_SECONDS, "5x20", stream="fast"),
        ),
        evaluations=(
            ("5m", ()),
            ("15m", (Firing({"stream": "slow"}, "Stream slow is 15m 0s behind its source"),)),
        ),
    ),
    RuleCase(
        alert="StreamStalled",
        input_series=(
            status_series("stuck", "stalled", "1x20"),
            status_series("stuck", "ok", "0x20"),
            status_series("fine", "stalled", "0x20"),
            status_series("fine", "ok", "1x20"),
        ),
        evaluations=(
            ("3m", ()),
            (
                "10m",
                (
                    Firing(
                        {"stream": "stuck"},
                        "Stream stuck is stalled: its source has data it does not process",
                    ),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="StreamFailed",
        input_series=(
            status_series("broken", "failed", "1x40"),
            status_series("flapping", "failed", "0x40"),
            status_series("fine", "failed", "0x40"),
            series(STREAM_FAILURES, "0x5 1x35", stream="flapping"),
            series(STREAM_FAILURES, "_x8 1x32", stream="newborn"),
            series(STREAM_FAILURES, "0x40", stream="fine"),
        ),
        evaluations=(
            ("3m", (Firing({"stream": "broken"}, "Stream broken failed"),)),
            (
                "12m",
                (
                    Firing({"stream": "broken"}, "Stream broken failed"),
                    Firing({"stream": "flapping"}, "Stream flapping failed"),
                    Firing({"stream": "newborn"}, "Stream newborn failed"),
                ),
            ),
            ("35m", (Firing({"stream": "broken"}, "Stream broken failed"),)),
        ),
    ),
    RuleCase(
        alert="StreamAbsent",
        input_series=(
            series(LAST_PROGRESS, "0+60x40", stream="live"),
            series(LAST_PROGRESS, "60x40", stream="silent"),
            series(LAST_PROGRESS, "0+60x5", stream="vanished"),
            series(LAST_PROGRESS, "60x40", stream="stopped"),
            status_series("stopped", "stopped", "1x40"),
        ),
        evaluations=(
            ("15m", ()),
            (
                "30m",
                (
                    Firing({"stream": "silent"}, "Stream silent has reported no progress for 29m 0s"),
                    Firing({"stream": "vanished"}, "Stream vanished has reported no progress for 25m 0s"),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="ProcessingBelowInput",
        input_series=(
            series(PROCESSED_ROWS_PER_SECOND, "50x30", stream="behind"),
            series(INPUT_ROWS_PER_SECOND, "100x30", stream="behind"),
            series(PROCESSED_ROWS_PER_SECOND, "500x30", stream="ahead"),
            series(INPUT_ROWS_PER_SECOND, "100x30", stream="ahead"),
            series(PROCESSED_ROWS_PER_SECOND, "0x30", stream="idle"),
            series(INPUT_ROWS_PER_SECOND, "0x30", stream="idle"),
        ),
        evaluations=(
            ("10m", ()),
            (
                "20m",
                (
                    Firing(
                        {"stream": "behind"},
                        "Stream behind processes rows at 50% of the rate they arrive",
                    ),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="IncompatibleSchemaChange",
        input_series=(
            series(SCHEMA_ALERTS, "_x11 1x40", event_type="login"),
            series(SCHEMA_ALERTS, "0x9 1x40", event_type="purchase"),
            series(SCHEMA_ALERTS, "2x50", event_type="stable"),
        ),
        evaluations=(
            (
                "20m",
                (
                    Firing({"event_type": "login"}, "Incompatible schema change for event type login"),
                    Firing({"event_type": "purchase"}, "Incompatible schema change for event type purchase"),
                ),
            ),
            ("45m", ()),
        ),
    ),
    RuleCase(
        alert="QuarantineSpike",
        input_series=(
            series(INPUT_ROWS, "0+100x30", stream="bronze"),
            series(QUARANTINED_ROWS, "0+20x30", stream="bronze", reason="malformed_json"),
            series(INPUT_ROWS, "0+100x30", stream="clean"),
            series(QUARANTINED_ROWS, "0+1x30", stream="clean", reason="missing_event_type"),
            # a CDC stream: a tombstone after each delete is no data lost
            series(INPUT_ROWS, "0+100x30", stream="changes"),
            series(QUARANTINED_ROWS, "0+30x30", stream="changes", reason="tombstone"),
        ),
        evaluations=(
            ("5m", ()),
            (
                "25m",
                (Firing({"stream": "bronze"}, "Stream bronze quarantines 20% of the rows it reads"),),
            ),
        ),
    ),
    RuleCase(
        alert="SourceLagEstimateHigh",
        input_series=(
            series(BACKLOG_ESTIMATED_SECONDS, "900x20", stream="behind", source="0", kind="kafka"),
            series(BACKLOG_ESTIMATED_SECONDS, "5x20", stream="behind", source="1", kind="delta"),
            series(BACKLOG_ESTIMATED_SECONDS, "5x20", stream="fast", source="0", kind="kafka"),
        ),
        evaluations=(
            ("5m", ()),
            (
                "15m",
                (
                    Firing(
                        {"stream": "behind"},
                        "Stream behind needs about 15m 0s to read what waits in its source",
                    ),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="StateUnbounded",
        input_series=(
            warning_series("growing", "state_unbounded", "1x50"),
            warning_series("growing", "late_rows_dropped", "0x50"),
            warning_series("bounded", "state_unbounded", "0x50"),
            warning_series("bounded", "late_rows_dropped", "1x50"),
        ),
        evaluations=(
            ("20m", ()),
            ("40m", (Firing({"stream": "growing"}, "Stream growing keeps state that only grows"),)),
        ),
    ),
    RuleCase(
        alert="WatermarkStalled",
        input_series=(
            warning_series("stuck", "watermark_stalled", "1x30"),
            warning_series("moving", "watermark_stalled", "0x30"),
        ),
        evaluations=(
            ("5m", ()),
            (
                "15m",
                (
                    Firing(
                        {"stream": "stuck"},
                        "The watermark of stream stuck does not advance while rows arrive",
                    ),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="LateRowsDropped",
        input_series=(
            series(STATE_ROWS_DROPPED, "_x5 3x40", stream="late", operator="stateStoreSave"),
            series(STATE_ROWS_DROPPED, "0x45", stream="punctual", operator="stateStoreSave"),
        ),
        evaluations=(
            ("3m", ()),
            ("10m", (Firing({"stream": "late"}, "Stream late dropped 3 late rows"),)),
            ("40m", ()),
        ),
    ),
    RuleCase(
        alert="SourceRetentionHeadroomLow",
        input_series=(
            # 30 hours of headroom, shrinking by a minute a minute: under a day from minute 360 on
            series(
                SOURCE_RETENTION_HEADROOM,
                "108000-60x400",
                stream="lagging",
                source="0",
                kind="delta",
                retention="deleted_files",
            ),
            series(
                SOURCE_RETENTION_HEADROOM, "2592000-60x400", stream="lagging", source="0", kind="delta", retention="log"
            ),
            series(
                SOURCE_RETENTION_HEADROOM,
                "604800x400",
                stream="caught_up",
                source="0",
                kind="delta",
                retention="deleted_files",
            ),
        ),
        evaluations=(
            ("362m", ()),
            (
                "370m",
                (
                    Firing(
                        {"stream": "lagging"},
                        "Unread source data of stream lagging can be deleted by retention in 23h 50m 0s",
                    ),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="CdcLagHigh",
        input_series=(
            series(CDC_LAG, "30x5 900x20", stream="silver_g0001", table="public.orders"),
            series(CDC_LAG, "30x25", stream="silver_g0001", table="public.customers"),
            series(CDC_LAG, "400x4 20x20", stream="silver_g0002", table="inventory.items"),
        ),
        evaluations=(
            ("8m", ()),
            (
                "18m",
                (
                    Firing(
                        {"stream": "silver_g0001", "table": "public.orders"},
                        "CDC table public.orders of stream silver_g0001 lands changes 15m 0s after its database "
                        "committed them",
                    ),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="ExpectationFailureRatioHigh",
        input_series=(
            # 10% of purchase rows fail price_nonneg for ten minutes, then the stream writes no more
            expectation_series("silver_shop", "purchase", "price_nonneg", "passed", "0+90x10 900x20"),
            expectation_series("silver_shop", "purchase", "price_nonneg", "failed", "0+10x10 100x20"),
            # no row fails has_id: the ratio is 0
            expectation_series("silver_shop", "purchase", "has_id", "passed", "0+100x30"),
            expectation_series("silver_shop", "purchase", "has_id", "failed", "0x30"),
            # 0.5% fail: under the threshold
            expectation_series("silver_core", "login", "has_id", "passed", "0+199x30"),
            expectation_series("silver_core", "login", "has_id", "failed", "0+1x30"),
        ),
        evaluations=(
            ("3m", ()),
            (
                "15m",
                (
                    Firing(
                        {"stream": "silver_shop", "table": "purchase", "expectation": "price_nonneg"},
                        "10% of the rows of table purchase (stream silver_shop) fail expectation price_nonneg",
                    ),
                ),
            ),
            ("25m", ()),
        ),
    ),
    RuleCase(
        alert="KafkaOffsetsLost",
        input_series=(
            series(KAFKA_LOST_OFFSETS, "_x3 120x12", stream="bronze", topic="events", partition="1"),
            series(KAFKA_LOST_OFFSETS, "0x15", stream="bronze", topic="events", partition="0"),
            series(KAFKA_LOST_OFFSETS, "0x15", stream="orders", topic="orders", partition="0"),
        ),
        evaluations=(
            ("2m", ()),
            (
                "5m",
                (
                    Firing(
                        {"partition": "1", "stream": "bronze", "topic": "events"},
                        "Stream bronze lost 120 offsets of topic events partition 1",
                    ),
                ),
            ),
        ),
    ),
    RuleCase(
        alert="SourceChangeCommitsUnread",
        input_series=(
            series(
                SOURCE_CHANGE_COMMITS, "0x5 1x10", stream="upstream_merge", source="0", kind="delta", change="rewrite"
            ),
            series(
                SOURCE_CHANGE_COMMITS, "0x5 1x10", stream="upstream_merge", source="0", kind="delta", change="delete"
            ),
            series(SOURCE_CHANGE_COMMITS, "0x15", stream="appends_only", source="0", kind="delta", change="rewrite"),
        ),
        evaluations=(
            ("3m", ()),
            (
                "8m",
                (
                    Firing(
                        {"stream": "upstream_merge"},
                        "Stream upstream_merge has 2 unread source commits that are not appends",
                    ),
                ),
            ),
        ),
    ),
)

_LABEL_REFERENCE = re.compile(r"\{\{ \$labels\.(\w+) \}\}")


def expected_description(rule: AlertRule, labels: Mapping[str, str]) -> str:
    """The description as Prometheus renders it: descriptions use label references only."""
    rendered = _LABEL_REFERENCE.sub(lambda match: labels[match.group(1)], rule.description)
    if "{{" in rendered:
        raise ValueError(f"`{rule.name}`'s description uses a template beyond label references")
    return rendered


def tests_document(rules: Sequence[AlertRule], rule_file: str) -> dict[str, Any]:
    """The `promtool test rules` file for `rule_file`, one test group per alert."""
    by_name = {rule.name: rule for rule in rules}
    missing = sorted(set(by_name) - {case.alert for case in CASES})
    if missing:
        raise ValueError(f"no promtool test case for alert(s) {', '.join(missing)}: add them to CASES")
    return {
        "rule_files": [rule_file],
        "evaluation_interval": STEP,
        "tests": [rule_test_group(case, by_name[case.alert]) for case in CASES],
    }


def rule_test_group(case: RuleCase, rule: AlertRule) -> dict[str, Any]:
    """One test group of a `promtool test rules` file: the case's series, evaluated for its alert."""
    return {
        "name": case.alert,
        "interval": STEP,
        "input_series": [{"series": s.text, "values": s.values} for s in case.input_series],
        "alert_rule_test": [
            {
                "eval_time": eval_time,
                "alertname": case.alert,
                "exp_alerts": [_expected(rule, firing) for firing in firings],
            }
            for eval_time, firings in case.evaluations
        ],
    }


def _expected(rule: AlertRule, firing: Firing) -> dict[str, Any]:
    return {
        "exp_labels": {"severity": rule.severity, **SERVICE_LABEL, **firing.labels},
        "exp_annotations": {
            "summary": firing.summary,
            "description": expected_description(rule, firing.labels),
        },
    }
