"""What the pipeline tells the monitor after each commit: event-time freshness, quarantine
counts, per-event-type commits and schema alerts. The monitor knows nothing of bronze or
silver; this is the one place pipeline facts are translated into its push API.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from streamops.lake_layout import BRONZE_STREAM, silver_stream

if TYPE_CHECKING:
    from monitor.stream_monitor import StreamMonitor
    from pipeline.bronze_stream import BronzeBatchResult
    from pipeline.silver_schemas import SilverSchema
    from pipeline.silver_stream import SilverBatchResult


class PipelineEvents(Protocol):
    def bronze_committed(self, result: "BronzeBatchResult", max_event_time: float | None) -> None: ...

    def silver_committed(self, result: "SilverBatchResult", schemas: dict[str, "SilverSchema"]) -> None: ...


class Unmonitored:
    """For pipelines run without a monitor (library use, some tests)."""

    def bronze_committed(self, result: "BronzeBatchResult", max_event_time: float | None) -> None:
        return None

    def silver_committed(self, result: "SilverBatchResult", schemas: dict[str, "SilverSchema"]) -> None:
        return None


class MonitorEvents:
    def __init__(self, monitor: "StreamMonitor") -> None:
        self.monitor = monitor

    def bronze_committed(self, result: "BronzeBatchResult", max_event_time: float | None) -> None:
        for reason, rows in result.quarantined.items():
            self.monitor.record_quarantine(BRONZE_STREAM, reason, rows)
        if max_event_time is not None:
            self.monitor.record_stream_event_time(BRONZE_STREAM, max_event_time)

    def silver_committed(self, result: "SilverBatchResult", schemas: dict[str, "SilverSchema"]) -> None:
        now = time.time()
        for event_type, rows in result.rows_by_type.items():
            self.monitor.record_table_commit(
                event_type=event_type,
                group=result.group,
                rows=rows,
                commit_time=now,
                schema_version=schemas[event_type].schema_version,
                max_event_time=result.max_event_time.get(event_type),
            )
        stream = silver_stream(result.group)
        if result.max_event_time:
            self.monitor.record_stream_event_time(stream, max(result.max_event_time.values()))
        if result.quarantined:
            self.monitor.record_quarantine(stream, "incompatible_type", result.quarantined)
        for alert in result.alerts:
            self.monitor.record_schema_alert(alert.event_type)
