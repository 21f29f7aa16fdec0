"""Starts, watches and stops every query of the pipeline.

- `run_until_idle()`: drains all input through bronze, management and silver with
  Trigger.AvailableNow, round after round until a round finds nothing new, then returns.
- `run_for(seconds)` (or forever): continuous triggers. Every second it starts a query for any
  group the management stream has recorded, and restarts a failed query with exponential
  backoff while the others keep running (pipeline/query_restarts.py). A group stopped by
  on_incompatible=fail_group is left stopped (replaying its batch would fail the same way)
  until an operator acts.
`request_stop()` (e.g. from a signal handler or another thread) ends `run_for`, which then
stops every query itself.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Literal, get_args

from streamops.core.checkpoint_format.abandoned_writes import remove_abandoned_writes
from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import BRONZE_STREAM, MANAGEMENT_STREAM, LakeLayout, silver_stream
from streamops.pipeline.bronze.bronze_classifier import RecordLimits
from streamops.pipeline.bronze.bronze_stream import (
    BronzeBatchWriter,
    BronzeSettings,
    create_bronze_tables,
    start_bronze,
)
from streamops.pipeline.bronze.events_mode import EVENTS
from streamops.pipeline.bronze.ingest_mode import IngestMode
from streamops.pipeline.bronze.line_sources import LineInput
from streamops.pipeline.delta_connector.connector import DeltaConnector
from streamops.pipeline.pipeline_events import BronzeBatchResult, PipelineEvents
from streamops.pipeline.registry.event_groups import EventGroupsReader
from streamops.pipeline.registry.management_stream import (
    ManagementBatchWriter,
    create_management_tables,
    start_management,
)
from streamops.pipeline.registry.schema_registry import SchemaRegistry
from streamops.pipeline.run.failure_causes import FailureCauses
from streamops.pipeline.run.query_restarts import (
    STOP_BATCH_TIMEOUT_SECONDS,
    STOP_POLL_SECONDS,
    QueryRestarts,
    Supervised,
    first_line,
    stop_between_batches,
)
from streamops.pipeline.silver.silver_stream import SilverSettings, start_silver_group

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery


Stages = Literal["bronze", "silver", "all"]
STAGES: tuple[Stages, ...] = get_args(Stages)
STAGE_LOCKS: dict[Stages, tuple[str, ...]] = {"bronze": ("bronze",), "silver": ("silver",), "all": ("bronze", "silver")}
"""The run locks (pipeline/run_lock.py) a run of each `--stages` value holds."""


@dataclass(frozen=True)
class PipelineSettings:
    """`input`: where bronze reads its lines; `mode`: what they are (events, or changes of
    database tables that silver groups MERGE). `stages`: which hops this process runs. `bronze`
    ingests the input into bronze (and the registry); `silver` runs the management stream and
    the silver groups on what bronze holds; `all` both. The hops can run as separate
    applications or on separate clusters."""

    lake: LakeLayout
    input: LineInput
    trigger_seconds: float = 5.0
    silver: SilverSettings = SilverSettings()
    stages: Stages = "all"
    mode: IngestMode = EVENTS
    limits: RecordLimits = RecordLimits()

    @property
    def runs_bronze(self) -> bool:
        return self.stages in ("bronze", "all")

    @property
    def runs_silver(self) -> bool:
        return self.stages in ("silver", "all")


@dataclass
class RunReport:
    bronze_batches: int = 0
    bronze_rows: int = 0
    quarantined: dict[str, int] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)
    down: list[str] = field(default_factory=list)
    """Streams that had failed and were not running again when the run ended."""

    @property
    def failed(self) -> bool:
        """A drain that met a failure, or a continuous run that ended with a stream down: the
        failures a continuous run recovered from (a store outage, a full disk freed) are not."""
        return bool(self.down)


class Supervisor:
    def __init__(
        self,
        spark: SparkSession,
        settings: PipelineSettings,
        connector: DeltaConnector,
        events: PipelineEvents,
        log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    ) -> None:
        self.spark = spark
        self.settings = settings
        self.lake = settings.lake
        self.connector = connector
        self.events = events
        self.log = log
        self.report = RunReport()
        self._create_tables()
        self.registry = SchemaRegistry.load(self.lake.schema_registry)
        self.groups = EventGroupsReader(self.lake.event_groups)
        self.causes = FailureCauses(self.lake, settings.input.locations, self.lake.stream_source_table)
        self.restarts = QueryRestarts(self.report.failures, log, self.causes.explain)
        self._stop_requested = threading.Event()
        self._groups_unreadable = False

    def _create_tables(self) -> None:
        """Every table the pipeline writes, through the run's connector, before any query reads one."""
        create_bronze_tables(self.lake, self.connector)
        create_management_tables(self.lake, self.connector)

    def request_stop(self) -> None:
        """Ask a running `run_for` (possibly in another thread) to stop its queries and return."""
        self._stop_requested.set()

    @property
    def supervised(self) -> dict[str, Supervised]:
        """The queries `run_for` keeps running, by stream name."""
        return self.restarts.supervised

    def _bronze_done(self, result: BronzeBatchResult) -> None:
        self.report.bronze_batches += 1
        self.report.bronze_rows += result.bronze_rows
        for reason, rows in result.quarantined.items():
            self.report.quarantined[reason] = self.report.quarantined.get(reason, 0) + rows
        self.log(
            f"bronze batch {result.batch_id}: {result.bronze_rows} events, "
            f"{sum(result.quarantined.values())} quarantined, {result.new_variations} new schema variations"
        )

    def _start_bronze(self, available_now: bool) -> StreamingQuery:
        self._clear_abandoned_writes(BRONZE_STREAM)
        settings = BronzeSettings(
            self.settings.input,
            self.settings.mode,
            trigger_seconds=self.settings.trigger_seconds,
            limits=self.settings.limits,
            available_now=available_now,
            expectations=self.settings.silver.expectations.bronze,
        )
        writer = BronzeBatchWriter(
            self.lake,
            self.connector,
            self.registry,
            self.events,
            settings,
            self._bronze_done,
            self.restarts.policy_stopped,
        )
        return start_bronze(self.spark, self.lake, writer)

    def _start_management(self, available_now: bool) -> StreamingQuery:
        self._clear_abandoned_writes(MANAGEMENT_STREAM)
        writer = ManagementBatchWriter(self.lake, self.connector, self.settings.silver.types_per_group)
        interval = self._silver_settings(available_now).interval()
        return start_management(self.spark, self.lake, self.connector, writer, interval, available_now)

    def _silver_settings(self, available_now: bool) -> SilverSettings:
        """The run's silver settings on the run's trigger, for a stream that follows bronze."""
        return replace(self.settings.silver, trigger_seconds=self.settings.trigger_seconds, available_now=available_now)

    def _start_group(self, group: str, available_now: bool) -> StreamingQuery:
        self._clear_abandoned_writes(silver_stream(group))
        silver = self._silver_settings(available_now)
        self.events.stream_reads_table(silver_stream(group), self.lake.bronze_events)
        writer = self.settings.mode.group_writer(
            self.lake, self.connector, group, silver, self.events, self.restarts.policy_stopped
        )
        return start_silver_group(self.spark, self.lake, self.connector, writer)

    def _clear_abandoned_writes(self, stream: str) -> None:
        """Before a query starts: what a killed driver left mid-write would stop it (abandoned_writes)."""
        removed = remove_abandoned_writes(self.lake.checkpoint(stream))
        if removed:
            self.log(f"{stream}: removed {len(removed)} temporary file(s) of an interrupted checkpoint write")

    def run_until_idle(self, max_rounds: int = 20) -> RunReport:
        """Drain everything available now; returns when a round changes nothing."""
        self.events.stream_reads_table(MANAGEMENT_STREAM, self.lake.schema_registry)
        for _ in range(max_rounds):
            if self._stop_requested.is_set():
                break
            before = (self.report.bronze_batches, self.groups.read().version)
            if self.settings.runs_bronze:
                self._drain(BRONZE_STREAM, lambda: self._start_bronze(available_now=True))
            if self.settings.runs_silver:
                self._drain(MANAGEMENT_STREAM, lambda: self._start_management(available_now=True))
                for group in self.groups.read().groups:
                    self._drain(silver_stream(group), lambda g=group: self._start_group(g, True))
            if (self.report.bronze_batches, self.groups.read().version) == before:
                break
        return self.report

    def _drain(self, name: str, start: Callable[[], StreamingQuery]) -> None:
        """Start an AvailableNow query and wait for it; a failure is reported, the others go on.
        A stop request ends it between two batches (pipeline/stop_signals.py)."""
        if self._stop_requested.is_set():
            return
        query = None
        try:
            query = start()
            while not query.awaitTermination(STOP_POLL_SECONDS * 10):
                if self._stop_requested.is_set():
                    stop_between_batches([query], STOP_BATCH_TIMEOUT_SECONDS)
        except Exception as error:  # noqa: BLE001 - a failed stream is reported, others go on
            self._failed(name, self.causes.explain(name) or first_line(error))
        finally:
            if query is not None:
                query.stop()

    def _failed(self, name: str, message: str) -> None:
        self.report.failures.setdefault(name, []).append(message)
        if name not in self.report.down:
            self.report.down.append(name)
        self.log(f"{name} failed: {message}")

    def run_for(self, seconds: float | None) -> RunReport:
        """Run continuously for `seconds` (None: until interrupted), supervising every query."""
        self.events.stream_reads_table(MANAGEMENT_STREAM, self.lake.schema_registry)
        started = time.monotonic()
        if self.settings.runs_bronze:
            self.restarts.supervise(BRONZE_STREAM, lambda: self._start_bronze(available_now=False), started)
        if self.settings.runs_silver:
            self.restarts.supervise(MANAGEMENT_STREAM, lambda: self._start_management(available_now=False), started)
        deadline = None if seconds is None else started + seconds
        try:
            while not self._stop_requested.is_set() and (deadline is None or time.monotonic() < deadline):
                for group in self._known_groups() if self.settings.runs_silver else ():
                    name = silver_stream(group)
                    if name not in self.supervised:
                        self.log(f"starting {name}")
                        self.restarts.supervise(
                            name, lambda g=group: self._start_group(g, available_now=False), time.monotonic()
                        )
                self.restarts.tick(time.monotonic())
                self._stop_requested.wait(1.0)
            self.report.down = self.restarts.down()
        finally:
            self.stop()
        return self.report

    def _known_groups(self) -> list[str]:
        """The event groups to run; while their table cannot be read (its store is away), none
        new (the running ones keep running), with one line when that starts and one when it ends."""
        try:
            groups = self.groups.read().groups
        except StreamopsError as error:
            if not self._groups_unreadable:
                self.log(f"event groups unreadable, running the known ones until they are: {error}")
            self._groups_unreadable = True
            return []
        if self._groups_unreadable:
            self.log("event groups readable again")
            self._groups_unreadable = False
        return list(groups)

    def stop(self) -> None:
        self.restarts.stop()
