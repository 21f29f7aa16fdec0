"""What the pipeline tells the monitor after each commit: event-time freshness, quarantine
counts, per-event-type commits and schema alerts. The monitor knows nothing of bronze or
silver; this is the one place pipeline facts are translated into its push API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from streamops.lake_layout import BRONZE_STREAM

if TYPE_CHECKING:
    from monitor.stream_monitor import StreamMonitor
    from pipeline.bronze_stream import BronzeBatchResult


class PipelineEvents(Protocol):
    def bronze_committed(self, result: "BronzeBatchResult", max_event_time: float | None) -> None: ...


class Unmonitored:
    """For pipelines run without a monitor (library use, some tests)."""

    def bronze_committed(self, result: "BronzeBatchResult", max_event_time: float | None) -> None:
        return None


class MonitorEvents:
    def __init__(self, monitor: "StreamMonitor") -> None:
        self.monitor = monitor

    def bronze_committed(self, result: "BronzeBatchResult", max_event_time: float | None) -> None:
        for reason, rows in result.quarantined.items():
            self.monitor.record_quarantine(BRONZE_STREAM, reason, rows)
        if max_event_time is not None:
            self.monitor.record_stream_event_time(BRONZE_STREAM, max_event_time)
