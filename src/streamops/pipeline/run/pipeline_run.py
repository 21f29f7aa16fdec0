"""`streamops run` as a library call: Spark, connector, monitor and supervisor wired together."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout, LakeLike
from streamops.pipeline.bronze.bronze_classifier import RecordLimits
from streamops.pipeline.bronze.events_mode import EVENTS
from streamops.pipeline.bronze.ingest_mode import IngestMode
from streamops.pipeline.bronze.line_sources import LineInput
from streamops.pipeline.delta_connector.connector import ConnectorName, connector_for, session_needs
from streamops.pipeline.expectations.rule_checks import check_expectations
from streamops.pipeline.expectations.rules import NO_EXPECTATIONS, ExpectationSet
from streamops.pipeline.lake_tables import require_writable_lake
from streamops.pipeline.pipeline_events import MonitorEvents
from streamops.pipeline.records.record_rules import MAX_RECORD_BYTES
from streamops.pipeline.run.run_lock import RunLock
from streamops.pipeline.run.spark_session import build_spark, stop_spark
from streamops.pipeline.run.supervisor import STAGE_LOCKS, PipelineSettings, RunReport, Stages, Supervisor
from streamops.pipeline.runtime.spark_storage import object_store_needs, require_store_connectors
from streamops.pipeline.silver.silver_stream import SilverSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streamops.monitor.kafka_groups import KafkaGroupCommits


@dataclass(frozen=True)
class RunOptions:
    """What `streamops run` takes. `input`: where bronze reads its lines (`LandingInput`,
    `KafkaInput`); `mode`: what they are (events, or the changes of database tables:
    run/ingest_modes.py's `change_mode`). `delta`: the Delta connector every stage runs on, one
    per run (`embedded`: delta-rs inside Spark, no JARs; `native`: delta-spark, its JARs resolved
    on the first run). `stages`: the hops this process runs (bronze, silver or all)."""

    lake: LakeLike
    input: LineInput
    mode: IngestMode = EVENTS
    until_idle: bool = False
    duration: float | None = None
    trigger_seconds: float = 5.0
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    silver: SilverSettings = SilverSettings()
    delta: ConnectorName = "embedded"
    master: str | None = None
    stages: Stages = "all"
    max_record_bytes: int = MAX_RECORD_BYTES
    """Longer lines go to quarantine as `too_large`; bronze keeps at most this many bytes plus
    one of any line, so no line costs more memory than that."""
    expectations: ExpectationSet = NO_EXPECTATIONS
    """Data-quality rules checked on every batch (`--expectations FILE`)."""


def run_pipeline(options: RunOptions, on_start: Callable[[Supervisor], None] | None = None) -> RunReport:
    """Run until idle, for `options.duration`, or until the supervisor is asked to stop:
    `on_start` receives it before its queries start (`streamops demo` stops it on Ctrl-C).

    Returns only once everything it started is stopped: the queries, the monitor (its worker
    thread joined, its exporter closed) and, when no SparkSession was active before the call,
    Spark itself. A caller that brought its own session keeps it running."""
    from pyspark import SparkContext

    lake = LakeLayout.at(options.lake)
    require_writable_lake(lake.root)  # before Spark's 10 s start
    owns_spark = SparkContext._active_spark_context is None
    running: list[Supervisor] = []
    lock = RunLock(lake, STAGE_LOCKS[options.stages], lambda line: _lost_lock(line, running))
    lock.acquire()
    try:
        return _run_spark(options, owns_spark, lambda supervisor: _started(supervisor, running, on_start))
    finally:
        lock.release()


def _started(supervisor: Supervisor, running: list[Supervisor], on_start: Callable[[Supervisor], None] | None) -> None:
    running.append(supervisor)
    if on_start is not None:
        on_start(supervisor)


def _lost_lock(line: str, running: list[Supervisor]) -> None:
    """Another run took this run's lock over: stop, that run owns the checkpoints now."""
    for supervisor in running:
        supervisor.log(line)
        supervisor.request_stop()


def _run_spark(options: RunOptions, owns_spark: bool, on_start: Callable[[Supervisor], None]) -> RunReport:
    conf, packages = session_needs(options.delta)
    inputs = [LakeLayout.at(options.lake).root, *options.input.locations]
    store_conf, store_packages = object_store_needs(inputs)
    conf, packages = {**conf, **store_conf}, [*packages, *options.input.spark_packages(), *store_packages]
    spark = build_spark(master=options.master, conf=conf, packages=packages)
    try:
        check_expectations(spark, options.expectations)
        require_store_connectors(spark, inputs)
        return _run_with(spark, options, on_start)
    finally:
        if owns_spark:
            stop_spark(spark)


def _group_commits(options: RunOptions, lake: LakeLayout) -> KafkaGroupCommits | None:
    """Bronze's consumer group, if asked for. A run of bronze holds bronze's run lock, so no
    other run moves bronze's checkpoint: when the monitor stops, the group is set to the
    checkpoint's committed position, even after a commit the brokers refused during the run or
    a run that read nothing new."""
    commits = options.input.group_commits(BRONZE_STREAM)
    if commits is None or "bronze" not in STAGE_LOCKS[options.stages]:
        return commits
    return replace(commits, checkpoints={BRONZE_STREAM: lake.checkpoint(BRONZE_STREAM)})


def _run_with(spark: SparkSession, options: RunOptions, on_start: Callable[[Supervisor], None] | None) -> RunReport:
    from streamops.monitor.stream_monitor import StreamMonitor

    lake = LakeLayout.at(options.lake)
    monitor = StreamMonitor(
        spark,
        lake,
        metrics_port=options.metrics_port,
        metrics_host=options.metrics_host,
        delta_connector=options.delta,
        kafka_groups=_group_commits(options, lake),
    )
    monitor.start()
    settings = PipelineSettings(
        lake=lake,
        input=options.input,
        trigger_seconds=options.trigger_seconds,
        silver=replace(options.silver, expectations=options.expectations),
        stages=options.stages,
        mode=options.mode,
        limits=RecordLimits(max_record_bytes=options.max_record_bytes),
    )
    try:
        supervisor = Supervisor(spark, settings, connector_for(options.delta, spark), MonitorEvents(monitor))
        if on_start is not None:
            on_start(supervisor)
        try:
            if options.until_idle:
                return supervisor.run_until_idle()
            return supervisor.run_for(options.duration)
        finally:
            supervisor.stop()
    finally:
        monitor.stop()  # even when stopping a query failed: its worker must not outlive the run
