"""Lakes the real pipeline writes with the monitor attached, for the console's whole-page tests:
one whose bronze reads a Kafka topic and keeps running (its streams go idle once the topic is
drained) beside a query that fails, and one whose bronze reads landing files of recorded Debezium
changes that CDC streams apply to their tables. Both run on the session's SparkSession, one after
the other (a monitor records every query of the session)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cdc_landing import KEYS, RECORDINGS, land, recorded, values
from kafka_broker import KafkaBroker
from waiting import wait_until

from streamops.core.lake_layout import LakeLayout
from streamops.core.storage.location import Location
from streamops.monitor.exceptions import ProgressLogNotFoundError
from streamops.monitor.fleet_status import fleet_status

TOPIC = "game-events"
FAILING_STREAM = "failing_job"
FAILURE = "boom in batch 1"
CDC_LINES_PER_FILE = 12


@dataclass(frozen=True)
class RunningLake:
    lake: LakeLayout
    topic: str
    bootstrap: str


def _monitor(spark, lake: LakeLayout):
    from streamops.monitor.stream_monitor import StreamMonitor

    return StreamMonitor(spark, lake, flush_interval_s=0.5, delta_connector="embedded").start()


def cdc_files_lake(spark, root: Path) -> LakeLayout:
    """Recorded Debezium changes landed as files and drained through bronze and the CDC streams
    with the monitor attached; every stream has stopped when this returns."""
    from streamops.pipeline.bronze.landing_input import LandingInput
    from streamops.pipeline.cdc.cdc_settings import CdcSettings
    from streamops.pipeline.cdc.debezium_mode import DebeziumChanges
    from streamops.pipeline.delta_connector.connector import EmbeddedDelta
    from streamops.pipeline.pipeline_events import MonitorEvents
    from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
    from streamops.pipeline.silver.silver_stream import SilverSettings

    lines = values(recorded(RECORDINGS[0]))
    for number, start in enumerate(range(0, len(lines), CDC_LINES_PER_FILE)):
        land(root / "landing", f"changes-{number}.ndjson", lines[start : start + CDC_LINES_PER_FILE])
    lake = LakeLayout.at(root / "lake")
    monitor = _monitor(spark, lake)
    try:
        settings = PipelineSettings(
            lake=lake,
            input=LandingInput(Location.local(root / "landing"), max_files_per_trigger=2),
            trigger_seconds=1.0,
            silver=SilverSettings(max_files_per_trigger=2, types_per_group=2),
            mode=DebeziumChanges(CdcSettings(keys=KEYS)),
        )
        report = Supervisor(
            spark, settings, EmbeddedDelta(), MonitorEvents(monitor), log=lambda _: None
        ).run_until_idle()
        assert report.failures == {}, report.failures
        assert monitor.flush()
    finally:
        monitor.stop()
    return lake


@contextlib.contextmanager
def running_kafka_lake(spark, root: Path, max_offsets_per_trigger: int | None = None) -> Iterator[RunningLake]:
    """Drifting events with bad records produced to a topic, and the whole pipeline reading it
    (`max_offsets_per_trigger` records a batch), running until the `with` ends: once the topic is
    drained, every pipeline stream is idle. A query that fails in its second batch runs beside it."""
    from streamops.pipeline.bronze.kafka_input import KafkaInput
    from streamops.pipeline.delta_connector.connector import EmbeddedDelta
    from streamops.pipeline.generator.kafka_writer import KafkaTarget
    from streamops.pipeline.generator.run import generate
    from streamops.pipeline.generator.settings import GeneratorSettings
    from streamops.pipeline.pipeline_events import MonitorEvents
    from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
    from streamops.pipeline.silver.silver_stream import SilverSettings

    with KafkaBroker(root / "kafka") as broker:
        generate(
            GeneratorSettings(
                out=root / "generator",
                events=600,
                event_types=4,
                drift=1.0,
                bad=0.03,
                seed=11,
                target=KafkaTarget(broker.bootstrap, TOPIC, partitions=2),
            )
        )
        lake = LakeLayout.at(root / "lake")
        monitor = _monitor(spark, lake)
        settings = PipelineSettings(
            lake=lake,
            input=KafkaInput(broker.bootstrap, topics=(TOPIC,), max_offsets_per_trigger=max_offsets_per_trigger),
            trigger_seconds=1.0,
            silver=SilverSettings(types_per_group=2, trigger_seconds=1.0),
        )
        supervisor = Supervisor(spark, settings, EmbeddedDelta(), MonitorEvents(monitor), log=lambda _: None)
        runner = threading.Thread(target=supervisor.run_for, args=(None,), name="pipeline", daemon=True)
        runner.start()
        try:
            wait_until(lambda: _pipeline_idle(lake), timeout=300, what="every pipeline stream to drain the topic")
            _run_failing_query(spark, lake)
            assert monitor.flush()
            yield RunningLake(lake, TOPIC, broker.bootstrap)
        finally:
            supervisor.request_stop()
            runner.join(120)
            monitor.stop()


def _pipeline_idle(lake: LakeLayout) -> bool:
    """Bronze, the management stream and a silver stream per group have run and are idle."""
    try:
        rows = {row.stream: row.status for row in fleet_status(lake)}
    except ProgressLogNotFoundError:  # no stream has reported yet
        return False
    silver = [stream for stream in rows if stream.startswith("silver_")]
    return bool(silver) and all(rows.get(s) == "idle" for s in ["bronze", "management", *silver])


def _run_failing_query(spark, lake: LakeLayout) -> None:
    """A query whose second batch raises: the progress log records the failure."""

    def boom(df, batch_id):
        df.count()
        if batch_id >= 1:
            raise ValueError(f"boom in batch {batch_id}")

    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .load()
        .writeStream.foreachBatch(boom)
        .queryName(FAILING_STREAM)
        .option("checkpointLocation", str(lake.checkpoint(FAILING_STREAM)))
        .trigger(processingTime="0.2 seconds")
        .start()
    )
    try:
        try:
            query.awaitTermination(60)
        except Exception as error:  # noqa: BLE001 - the failure is the point; it must be ours
            assert FAILURE in str(error), error
        else:
            raise AssertionError(f"{FAILING_STREAM} did not fail")
    finally:
        query.stop()
