"""StreamMonitor: attach once, and every streaming query of the driver is recorded and exported.

    monitor = StreamMonitor(spark, LakeLayout.at("lake"), metrics_port=9108)
    monitor.start()
    ...
    monitor.stop()

Works for any query (rate, file, Kafka, Delta sources; any sink); the pipeline also pushes
per-table facts (`record_*`), which are cheap, thread-safe dictionary updates.
"""

from __future__ import annotations

from streamops.core.extras import require, require_pyspark

require("monitor", __name__)
require_pyspark(__name__)

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import orjson
from prometheus_client import CollectorRegistry

from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.core.storage.location import LocationLike
from streamops.monitor.event_queue import EventQueue, RawEvent
from streamops.monitor.exceptions import MonitorError
from streamops.monitor.expectation_counts_upkeep import ExpectationCounts
from streamops.monitor.exporter import FleetCollector, MetricsServer, serve_metrics
from streamops.monitor.fleet import CdcApply, Fleet, TableCommit
from streamops.monitor.kafka_groups import KafkaGroupCommits, KafkaGroupPublisher
from streamops.monitor.metric_catalog import DEFAULT_METRICS_HOST
from streamops.monitor.progress_event import EventKind, QueryStarted
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_worker import ProgressWorker
from streamops.monitor.source_backlog import SourceBacklog
from streamops.monitor.status_rules import DEFAULT_POLICY, StatusPolicy, StatusVerdict, evaluate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CALLBACK_TIMINGS_KEPT = 100_000
TERMINATION_WAIT_S = 10.0
"""How long `stop` waits for the termination events of queries that stopped before it."""

log = logging.getLogger("streamops.monitor")


class StreamMonitor:
    def __init__(
        self,
        spark: SparkSession,
        lake: LakeLike | None,
        metrics_port: int | None = None,
        metrics_host: str = DEFAULT_METRICS_HOST,
        flush_interval_s: float = 5.0,
        retention_days: int = 30,
        queue_size: int = 10_000,
        *,
        policy: StatusPolicy = DEFAULT_POLICY,
        registry: CollectorRegistry | None = None,
        time_callbacks: bool = False,
        delta_connector: str | None = None,
        kafka_groups: KafkaGroupCommits | None = None,
    ) -> None:
        """`lake=None` keeps no progress log (metrics only). `metrics_port=None` serves no HTTP
        endpoint (the metrics are still in `registry`), 0 picks a free port. `registry` defaults
        to a fresh one per monitor. `delta_connector` names the Delta connector the application
        runs on (the pipeline passes `native` or `embedded`): kept on every progress-log row and
        in `streamops_stream_info`. `kafka_groups` names streams whose Kafka position is committed
        to a consumer group after each batch, so Kafka's tools see them (monitor/kafka_groups.py)."""
        self.spark = spark
        self.lake = lake = None if lake is None else LakeLayout.at(lake)
        self.policy = policy
        self.registry = registry if registry is not None else CollectorRegistry()
        self._metrics_port = metrics_port
        self._metrics_host = metrics_host
        self._queue = EventQueue(queue_size)
        self._fleet = Fleet(policy, delta_connector or "")
        self._backlog = SourceBacklog(lake)
        self.progress_log = ProgressLog(lake.query_progress, retention_days) if lake is not None else None
        self._worker = ProgressWorker(
            self._queue,
            self._fleet,
            self._backlog,
            self.progress_log,
            flush_interval_s,
            kafka_groups=None if kafka_groups is None else KafkaGroupPublisher(kafka_groups),
            also_maintained=() if lake is None else (ExpectationCounts(lake.expectations, retention_days),),
        )
        self._collector = FleetCollector(
            self._fleet,
            lambda: self._queue.dropped,
            policy,
            worker_cpu_seconds=lambda: self._worker.cpu_seconds,
        )
        self.callback_seconds: deque[float] | None = deque(maxlen=CALLBACK_TIMINGS_KEPT) if time_callbacks else None
        self._listener: Any = None
        self._server: MetricsServer | None = None
        self._started = False
        self._running: set[str] = set()
        """Run ids of queries seen started and not yet seen terminated."""
        self._running_lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> StreamMonitor:
        """Start the worker (and the exporter when a port was given), then add the listener."""
        if self._started:
            raise MonitorError("this StreamMonitor is already started: call stop() before starting it again")
        from streamops.monitor.listener import MonitorListener

        self._worker.start()
        self.registry.register(self._collector)
        if self._metrics_port is not None:
            try:
                self._server = serve_metrics(self.registry, self._metrics_port, self._metrics_host)
            except MonitorError:
                self.registry.unregister(self._collector)
                self._worker.stop(timeout=5)
                raise
        self._track_running_queries()
        self._listener = MonitorListener(self._offer, self.callback_seconds)
        self.spark.streams.addListener(self._listener)
        self._started = True
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Remove the listener, write everything queued to the progress log, stop the exporter.

        Spark hands a stopped query's termination event to listeners on its bus thread, after
        `query.stop()` has returned: the listener stays until the events of queries that are no
        longer active have arrived (up to TERMINATION_WAIT_S), so their end is in the log."""
        if not self._started:
            return
        self._await_terminations(min(timeout, TERMINATION_WAIT_S))
        try:
            self.spark.streams.removeListener(self._listener)
        except Exception as error:  # Spark already stopped: nothing more will arrive anyway
            log.warning("streamops monitor could not remove its listener: %s", error)
        self._worker.stop(timeout)
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.registry.unregister(self._collector)
        self._started = False

    def __enter__(self) -> StreamMonitor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every event received so far is applied and written; False on timeout."""
        if not self._started:
            raise MonitorError("the monitor is not started: call start() first")
        return self._worker.flush(timeout)

    @property
    def exporter_url(self) -> str | None:
        return self._server.url if self._server is not None else None

    @property
    def dropped_events(self) -> int:
        return self._queue.dropped

    @property
    def worker_cpu_seconds(self) -> float:
        """CPU time the worker thread has used: the monitor's own cost, apart from callbacks."""
        return self._worker.cpu_seconds

    # -- what the pipeline tells the monitor ----------------------------------------------------

    def register_source_table(self, stream: str, table: LocationLike) -> None:
        """The Delta table `stream` reads, so its backlog is measured without a lake scan."""
        self._backlog.register_table(stream, table)

    def register_checkpoint(self, stream: str, checkpoint: LocationLike) -> None:
        """Where `stream` checkpoints, for the backlog of a file source outside the lake layout."""
        self._backlog.register_checkpoint(stream, checkpoint)

    def record_table_commit(self, commit: TableCommit) -> None:
        self._fleet.record_table_commit(commit)

    def record_stream_event_time(self, stream: str, max_event_time: float) -> None:
        self._fleet.record_stream_event_time(stream, max_event_time)

    def record_quarantine(self, stream: str, reason: str, rows: int) -> None:
        self._fleet.record_quarantine(stream, reason, rows)

    def record_schema_alert(self, event_type: str) -> None:
        self._fleet.record_schema_alert(event_type)

    def record_cdc_apply(self, apply: CdcApply) -> None:
        """One batch's MERGE into one CDC table: rows inserted, updated, deleted, and its lag."""
        self._fleet.record_cdc_apply(apply)

    def record_expectation(self, stream: str, table: str, expectation: str, passed: int, failed: int) -> None:
        """One batch's rows of `table` that passed and failed the data-quality rule `expectation`."""
        self._fleet.record_expectation(stream, table, expectation, passed, failed)

    def record_kafka_data_loss(self, stream: str, topic: str, partition: int, offsets: int) -> None:
        """`offsets` of a Kafka partition `stream` skipped because retention deleted them."""
        self._fleet.record_kafka_data_loss(stream, topic, partition, offsets)

    # -- what the monitor knows -----------------------------------------------------------------

    def statuses(self, now: float | None = None) -> dict[str, StatusVerdict]:
        """The live status of every stream seen, by stream name."""
        current = time.time() if now is None else now
        snapshot = self._fleet.snapshot()
        return {v.stream: evaluate(v.observation, current, self.policy) for v in snapshot.streams}

    def stream_status(self, stream: str, now: float | None = None) -> StatusVerdict | None:
        return self.statuses(now).get(stream)

    def _offer(self, kind: EventKind, text: str, received_at: float) -> None:
        if kind in ("started", "terminated"):
            self._note_run(kind, orjson.loads(text).get("runId"))
        self._queue.offer(RawEvent(kind, text, received_at))

    def _note_run(self, kind: EventKind, run_id: str | None) -> None:
        if run_id is None:
            return
        with self._running_lock:
            if kind == "started":
                self._running.add(run_id)
            else:
                self._running.discard(run_id)

    def _await_terminations(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        try:
            active = {str(query.runId) for query in self.spark.streams.active}
        except Exception as error:  # Spark already stopped: nothing more will arrive anyway
            log.warning("streamops monitor could not list the active queries: %s", error)
            return
        while time.monotonic() < deadline:
            with self._running_lock:
                if not self._running - active:
                    return
            time.sleep(0.05)
        with self._running_lock:
            missing = sorted(self._running - active)
        log.warning("streamops monitor stopped before the termination events of runs %s arrived", missing)

    def _track_running_queries(self) -> None:
        """Queries started before the monitor: known now, not only at their next progress."""
        now = time.time()
        for query in self.spark.streams.active:
            data = {"id": str(query.id), "runId": str(query.runId), "name": query.name}
            self._fleet.apply(
                QueryStarted(str(query.id), str(query.runId), query.name, now, orjson.dumps(data).decode())
            )
            self._note_run("started", str(query.runId))
