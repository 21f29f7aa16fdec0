"""`streamops run` as a library call: Spark, connector, monitor and supervisor wired together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout, LakeLike
from streamops.core.storage.location import Location, LocationLike
from streamops.pipeline.bronze.line_sources import KafkaInput
from streamops.pipeline.cdc.cdc_settings import CdcSettings
from streamops.pipeline.delta_connector.connector import ConnectorName, connector_for, session_needs
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.lake_tables import require_writable_lake
from streamops.pipeline.pipeline_events import MonitorEvents
from streamops.pipeline.run.run_lock import RunLock
from streamops.pipeline.run.spark_session import build_spark, stop_spark
from streamops.pipeline.run.supervisor import STAGE_LOCKS, PipelineSettings, RunReport, Stages, Supervisor
from streamops.pipeline.runtime.spark_jars import kafka_package
from streamops.pipeline.runtime.spark_storage import object_store_needs, require_store_connectors
from streamops.pipeline.silver.silver_stream import SilverSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class RunOptions:
    """What `streamops run` takes. `delta`: the Delta connector every stage runs on, one per run
    (`embedded`: delta-rs inside Spark, no JARs; `native`: delta-spark, its JARs resolved on the
    first run). `stages`: the hops this process runs (bronze, silver or all)."""

    lake: LakeLike
    landing: LocationLike | None = None
    until_idle: bool = False
    duration: float | None = None
    trigger_seconds: float = 5.0
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    silver: SilverSettings = SilverSettings()
    bronze_max_files: int = 100
    delta: ConnectorName = "embedded"
    master: str | None = None
    stages: Stages = "all"
    kafka: KafkaInput | None = None
    """Bronze reads these Kafka topics instead of `landing` (one of the two)."""
    kafka_consumer_group: str | None = None
    """Commit bronze's Kafka position to this consumer group after each batch (Kafka's tools see it)."""
    cdc: CdcSettings | None = None
    """The input is Debezium change events: each source table becomes a current-state silver
    table (and its history, when asked for) instead of an event table (docs/cdc.md)."""


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
    if (options.landing is None) == (options.kafka is None):
        raise PipelineConfigError("give the pipeline one input: --landing DIR, or --kafka-bootstrap with --topics")
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
    if options.kafka is not None:
        packages = [*packages, kafka_package()]
    inputs = [LakeLayout.at(options.lake).root] + ([] if options.landing is None else [Location.of(options.landing)])
    store_conf, store_packages = object_store_needs(inputs)
    conf, packages = {**conf, **store_conf}, [*packages, *store_packages]
    spark = build_spark(master=options.master, conf=conf, packages=packages)
    try:
        require_store_connectors(spark, inputs)
        return _run_with(spark, options, on_start)
    finally:
        if owns_spark:
            stop_spark(spark)


def _kafka_groups(options: RunOptions):
    """The consumer group bronze publishes its position to, when asked for."""
    from streamops.monitor.kafka_groups import KafkaGroupCommits

    if options.kafka_consumer_group is None:
        return None
    if options.kafka is None:
        raise PipelineConfigError("--kafka-consumer-group needs bronze to read Kafka (--kafka-bootstrap)")
    groups = {BRONZE_STREAM: options.kafka_consumer_group}
    return KafkaGroupCommits(options.kafka.bootstrap, groups, options.kafka.client_config)


def _run_with(spark: SparkSession, options: RunOptions, on_start: Callable[[Supervisor], None] | None) -> RunReport:
    from streamops.monitor.stream_monitor import StreamMonitor

    lake = LakeLayout.at(options.lake)
    monitor = StreamMonitor(
        spark,
        lake,
        metrics_port=options.metrics_port,
        metrics_host=options.metrics_host,
        delta_connector=options.delta,
        kafka_groups=_kafka_groups(options),
    )
    monitor.start()
    settings = PipelineSettings(
        lake=lake,
        landing=None if options.landing is None else Location.of(options.landing),
        kafka=options.kafka,
        trigger_seconds=options.trigger_seconds,
        bronze_max_files=options.bronze_max_files,
        silver=options.silver,
        stages=options.stages,
        cdc=options.cdc,
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
