"""The monitor's background thread: everything the listener callbacks must not do.

It parses queued events, measures backlog, updates the fleet, re-measures the backlog of
streams that went quiet (a blocked batch sends no progress), commits Kafka positions to
consumer groups (when stopped, after the last event, each group's final position), appends the
progress log in one commit per flush interval, and runs the retention and compaction of the log
and of the pipeline's expectation counts. A failed commit
keeps its rows for the next attempt; nothing here may kill the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Protocol, Sequence

from streamops.core.exceptions import StreamopsError, error_line
from streamops.core.storage.location import Location
from streamops.monitor.event_queue import EventQueue, FlushRequest, RawEvent
from streamops.monitor.exceptions import ProgressEventError
from streamops.monitor.fleet import Fleet
from streamops.monitor.kafka_groups import KafkaGroupPublisher
from streamops.monitor.progress_event import QueryIdle, QueryProgress, parse_event
from streamops.monitor.progress_log import MaintenanceResult, ProgressLog
from streamops.monitor.progress_record import row_of
from streamops.monitor.source_backlog import BacklogReading, SourceBacklog

log = logging.getLogger("streamops.monitor")

IDLE_LOG_INTERVAL_S = 60.0
MAINTENANCE_INTERVAL_S = 3600.0
MAX_BUFFERED_ROWS = 200_000


class MaintainedTable(Protocol):
    """A table the worker keeps to its retention and compacts (ProgressLog, ExpectationCounts)."""

    path: Location

    def maintain(self, now: float) -> MaintenanceResult: ...


class ProgressWorker:
    def __init__(
        self,
        queue: EventQueue,
        fleet: Fleet,
        backlog: SourceBacklog,
        progress_log: ProgressLog | None,
        flush_interval_s: float = 5.0,
        idle_log_interval_s: float = IDLE_LOG_INTERVAL_S,
        maintenance_interval_s: float = MAINTENANCE_INTERVAL_S,
        clock: Callable[[], float] = time.time,
        kafka_groups: KafkaGroupPublisher | None = None,
        also_maintained: Sequence[MaintainedTable] = (),
    ) -> None:
        """`also_maintained`: tables beside the progress log kept to their retention and
        compacted on the log's maintenance clock."""
        if flush_interval_s <= 0:
            raise ValueError(f"flush_interval_s must be positive, got {flush_interval_s}")
        self._queue = queue
        self._fleet = fleet
        self._backlog = backlog
        self._log = progress_log
        self._flush_interval_s = flush_interval_s
        self._idle_log_interval_s = idle_log_interval_s
        self._maintenance_interval_s = maintenance_interval_s
        self._clock = clock
        self._kafka_groups = kafka_groups
        self._maintained: list[MaintainedTable] = [
            *([progress_log] if progress_log is not None else []),
            *also_maintained,
        ]
        self._rows: list[dict[str, Any]] = []
        self._write_failing = False
        self._idle_logged_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cpu_before = 0.0
        self._cpu_thread_start = 0.0
        self.cpu_seconds = 0.0

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="streamops-monitor", daemon=True)
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Process and write everything queued, then end the thread.

        The thread is a daemon only so that a monitor nobody stops cannot hang the interpreter's
        exit; a stopped monitor must not leave it running, because a daemon thread still inside a
        delta-rs commit when the interpreter finalizes is killed by CPython as it re-takes the
        GIL, and that forced unwind through native frames aborts the process."""
        if self._thread is None:
            return
        self._stop.set()
        self._queue.put_control(FlushRequest(), timeout=timeout)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.error("streamops monitor worker did not finish its last progress-log write within %.0fs", timeout)
        self._thread = None

    def flush(self, timeout: float) -> bool:
        """Wait until every event queued before this call is applied and written."""
        request = FlushRequest()
        self._queue.put_control(request, timeout=timeout)
        return request.done.wait(timeout)

    def _run(self) -> None:
        """`cpu_seconds` accumulates this thread's CPU time across runs (exported as a metric)."""
        self._cpu_before, self._cpu_thread_start = self.cpu_seconds, time.thread_time()
        now = self._clock()
        last_flush = last_backlog = now
        last_maintenance = now - self._maintenance_interval_s
        while True:
            wait = max(0.05, min(self._flush_interval_s, 1.0))
            for item in self._queue.take(timeout=wait):
                if isinstance(item, FlushRequest):
                    self._write()
                    item.done.set()
                else:
                    try:
                        self._handle(item)
                    except Exception:  # one bad event must not end the monitor
                        log.exception("streamops monitor could not apply a %s event", item.kind)
            now = self._clock()
            if now - last_backlog >= self._flush_interval_s:
                self._refresh_backlog(now)
                last_backlog = now
            if now - last_flush >= self._flush_interval_s:
                self._write()
                last_flush = now
            if self._maintained and now - last_maintenance >= self._maintenance_interval_s:
                self._maintain(now)
                last_maintenance = now
            if self._stop.is_set() and self._queue.qsize() == 0:
                self._write()
                self._finish_groups()
                self._account_cpu()
                return
            self._account_cpu()

    def _finish_groups(self) -> None:
        """After the last queued event: each consumer group ends at its stream's committed
        position, whatever the brokers refused during the run (monitor/kafka_groups.py)."""
        if self._kafka_groups is None:
            return
        try:
            self._kafka_groups.finish()
        except Exception:  # the worker must still end, and the progress log is written
            log.exception("streamops monitor could not publish the final consumer-group offsets")

    def _account_cpu(self) -> None:
        self.cpu_seconds = self._cpu_before + time.thread_time() - self._cpu_thread_start

    def _handle(self, raw: RawEvent) -> None:
        try:
            event = parse_event(raw.kind, raw.json, raw.received_at)
        except ProgressEventError as error:
            log.warning("streamops monitor skipped a %s event: %s", raw.kind, error)
            return
        reading: BacklogReading | None = None
        if isinstance(event, QueryProgress):
            reading = self._measure(event)
        stream = self._fleet.apply(event, reading) or event.query_id
        if self._kafka_groups is not None and isinstance(event, QueryProgress):
            self._kafka_groups.publish(stream, event)
        if isinstance(event, QueryIdle) and not self._log_idle(stream, raw.received_at):
            return
        if isinstance(event, QueryProgress):
            self._idle_logged_at.pop(stream, None)
        if self._log is not None:
            self._rows.append(
                row_of(
                    event,
                    stream,
                    raw.received_at,
                    reading,
                    self._fleet.max_event_time(stream),
                    self._fleet.delta_connector or None,
                )
            )

    def _log_idle(self, stream: str, now: float) -> bool:
        """Idle events are a heartbeat: log the first after data, then one per interval."""
        last = self._idle_logged_at.get(stream)
        if last is not None and now - last < self._idle_log_interval_s:
            return False
        self._idle_logged_at[stream] = now
        return True

    def _measure(self, progress: QueryProgress) -> BacklogReading | None:
        try:
            ended_at = progress.timestamp + progress.batch_duration_ms / 1000.0
            return self._backlog.measure(progress.stream, progress.sources, batch_ended_at=ended_at)
        except StreamopsError as error:  # a store that is away, a source table gone: one line
            log.warning("streamops monitor could not measure the backlog of `%s`: %s", progress.stream, error)
            return None
        except Exception:  # a source we cannot read must not stop the monitor
            log.exception("streamops monitor could not measure the backlog of `%s`", progress.stream)
            return None

    def _refresh_backlog(self, now: float) -> None:
        for progress in self._fleet.due_for_backlog(now, self._flush_interval_s):
            reading = self._measure(progress)
            if reading is not None:
                self._fleet.update_backlog(progress.stream, reading)

    def _write(self) -> None:
        if self._log is None or not self._rows:
            return
        try:
            self._log.append(self._rows)
        except Exception as error:  # disk full, permissions, concurrent maintenance: retry later
            self._fleet.record_progress_log_failure()
            if not self._write_failing:  # one line per episode, not one per flush of an outage
                log.warning(
                    "streamops monitor could not append to %s (keeps the rows and retries): %s",
                    self._log.path,
                    error_line(error),
                )
            self._write_failing = True
            if len(self._rows) > MAX_BUFFERED_ROWS:
                dropped = len(self._rows) - MAX_BUFFERED_ROWS
                self._rows = self._rows[dropped:]
                log.error("streamops monitor dropped %d progress-log rows it could not write", dropped)
            return
        if self._write_failing:
            log.warning(
                "streamops monitor appends to %s again (%d rows kept meanwhile)", self._log.path, len(self._rows)
            )
            self._write_failing = False
        self._rows = []

    def _maintain(self, now: float) -> None:
        for table in self._maintained:
            try:
                table.maintain(now)
            except Exception as error:
                log.warning("streamops monitor maintenance of %s failed (will retry): %s", table.path, error)
