"""What the pipeline tells the monitor: which table each stream reads, and after each commit
its event-time freshness, quarantine counts, per-event-type commits, schema alerts, the rows that
passed and failed each data-quality expectation and, for CDC tables, the rows each batch
inserted, updated and deleted and its lag.

The batch results and the `PipelineEvents` protocol live here, below the streams that produce
them and the supervisor that wires them, so the streams never import each other. The monitor
knows nothing of bronze or silver; `MonitorEvents` is the one place pipeline facts are
translated into its push API.
"""

from __future__ import annotations

from streamops.core.extras import require

require("pipeline", __name__)

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from streamops.core.checkpoint_format.kafka_positions import LostRange
from streamops.core.lake_layout import BRONZE_STREAM, silver_stream
from streamops.monitor.fleet import CdcApply, TableCommit
from streamops.pipeline.expectations.counts_table import ExpectationCount
from streamops.pipeline.registry.schema_alerts import SchemaAlert
from streamops.pipeline.registry.silver_schemas import SilverSchema

if TYPE_CHECKING:
    from streamops.monitor.stream_monitor import StreamMonitor


@dataclass(frozen=True)
class BronzeBatchResult:
    batch_id: int
    bronze_rows: int
    quarantined: dict[str, int]
    new_variations: int
    kafka_lost: tuple[LostRange, ...] = ()
    """Kafka offsets the batch could not read (retention deleted them; --allow-data-loss)."""
    expectations: tuple[ExpectationCount, ...] = ()


@dataclass(frozen=True)
class SilverBatchResult:
    group: str
    batch_id: int
    rows_by_type: dict[str, int]
    max_event_time: dict[str, float]
    quarantined: dict[str, int]
    """Rows sent to the quarantine, by reason."""
    alerts: tuple[SchemaAlert, ...]
    expectations: tuple[ExpectationCount, ...] = ()


@dataclass(frozen=True)
class CdcTableApply:
    """What one batch did to one CDC table: its changes, the rows its MERGE inserted, updated
    and deleted, the changes that changed nothing, and when the database committed them."""

    table: str
    changes: int
    inserted: int
    updated: int
    deleted: int
    ignored: int
    truncated: bool
    history_versions: int
    oldest_source_time: float | None
    newest_source_time: float | None
    committed_at: float

    @property
    def lag_seconds(self) -> float | None:
        """Source commit of the newest change applied -> silver commit."""
        return None if self.newest_source_time is None else max(0.0, self.committed_at - self.newest_source_time)


@dataclass(frozen=True)
class CdcBatchResult:
    group: str
    batch_id: int
    tables: tuple[CdcTableApply, ...]
    quarantined: dict[str, int]
    alerts: tuple[SchemaAlert, ...]
    expectations: tuple[ExpectationCount, ...] = ()


class PipelineEvents(Protocol):
    def stream_reads_table(self, stream: str, table: Path) -> None:
        """Called before `stream` starts, so its backlog is measured from `table` at once."""

    def bronze_committed(self, result: BronzeBatchResult, max_event_time: float | None) -> None: ...

    def silver_committed(self, result: SilverBatchResult, schemas: dict[str, SilverSchema]) -> None: ...

    def cdc_applied(self, result: CdcBatchResult) -> None: ...


class Unmonitored:
    """For pipelines run without a monitor (library use, some tests)."""

    def stream_reads_table(self, stream: str, table: Path) -> None:
        return None

    def bronze_committed(self, result: BronzeBatchResult, max_event_time: float | None) -> None:
        return None

    def silver_committed(self, result: SilverBatchResult, schemas: dict[str, SilverSchema]) -> None:
        return None

    def cdc_applied(self, result: CdcBatchResult) -> None:
        return None


class MonitorEvents:
    def __init__(self, monitor: StreamMonitor) -> None:
        self.monitor = monitor

    def stream_reads_table(self, stream: str, table: Path) -> None:
        self.monitor.register_source_table(stream, table)

    def bronze_committed(self, result: BronzeBatchResult, max_event_time: float | None) -> None:
        for reason, rows in result.quarantined.items():
            self.monitor.record_quarantine(BRONZE_STREAM, reason, rows)
        for lost in result.kafka_lost:
            self.monitor.record_kafka_data_loss(BRONZE_STREAM, lost.topic, lost.partition, lost.count)
        if max_event_time is not None:
            self.monitor.record_stream_event_time(BRONZE_STREAM, max_event_time)
        self._record_expectations(BRONZE_STREAM, result.expectations)

    def silver_committed(self, result: SilverBatchResult, schemas: dict[str, SilverSchema]) -> None:
        now = time.time()
        for event_type, rows in result.rows_by_type.items():
            self.monitor.record_table_commit(
                TableCommit(
                    event_type=event_type,
                    group=result.group,
                    rows=rows,
                    commit_time=now,
                    schema_version=schemas[event_type].schema_version,
                    max_event_time=result.max_event_time.get(event_type),
                )
            )
        stream = silver_stream(result.group)
        if result.max_event_time:
            self.monitor.record_stream_event_time(stream, max(result.max_event_time.values()))
        for reason, rows in result.quarantined.items():
            self.monitor.record_quarantine(stream, reason, rows)
        for alert in result.alerts:
            self.monitor.record_schema_alert(alert.event_type)
        self._record_expectations(stream, result.expectations)

    def cdc_applied(self, result: CdcBatchResult) -> None:
        stream = silver_stream(result.group)
        for table in result.tables:
            self.monitor.record_cdc_apply(
                CdcApply(
                    stream=stream,
                    table=table.table,
                    inserted=table.inserted,
                    updated=table.updated,
                    deleted=table.deleted,
                    ignored=table.ignored,
                    lag_seconds=table.lag_seconds,
                    committed_at=table.committed_at,
                )
            )
        newest = [t.newest_source_time for t in result.tables if t.newest_source_time is not None]
        if newest:
            self.monitor.record_stream_event_time(stream, max(newest))
        for reason, rows in result.quarantined.items():
            self.monitor.record_quarantine(stream, reason, rows)
        for alert in result.alerts:
            self.monitor.record_schema_alert(alert.event_type)
        self._record_expectations(stream, result.expectations)

    def _record_expectations(self, stream: str, counts: tuple[ExpectationCount, ...]) -> None:
        """A rule on columns the table does not have yet counted nothing: it gets no series, so
        it cannot read as a rule every row passed."""
        for count in counts:
            if count.applicable:
                self.monitor.record_expectation(stream, count.table, count.expectation, count.passed, count.failed)
