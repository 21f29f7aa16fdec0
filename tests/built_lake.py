"""A real lake written by the pipeline: generated, drifting data run through bronze and silver
with the monitor attached, plus one query that fails. Built once per test session on the shared
SparkSession (`built_lake` in tests/conftest.py); the console's tests read it locally and the
object-store tests upload it to S3 and Azure servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streamops.core.lake_layout import LakeLayout

FAILING_STREAM = "failing_job"


@dataclass(frozen=True)
class BuiltLake:
    lake: LakeLayout
    manifest: dict[str, Any]


def build_lake(spark, root: Path) -> BuiltLake:
    from streamops.monitor.stream_monitor import StreamMonitor
    from streamops.pipeline.bronze.landing_input import LandingInput
    from streamops.pipeline.delta_connector.connector import EmbeddedDelta
    from streamops.pipeline.generator.run import generate
    from streamops.pipeline.generator.settings import GeneratorSettings
    from streamops.pipeline.pipeline_events import MonitorEvents
    from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
    from streamops.pipeline.silver.silver_stream import SilverSettings

    manifest = generate(
        GeneratorSettings(
            out=root / "landing", events=1500, event_types=6, drift=1.0, bad=0.02, seed=5, events_per_file=250
        )
    )
    lake = LakeLayout.at(root / "lake")
    monitor = StreamMonitor(spark, lake, flush_interval_s=0.5).start()
    try:
        settings = PipelineSettings(
            lake=lake,
            input=LandingInput(root / "landing", max_files_per_trigger=2),
            trigger_seconds=1.0,
            silver=SilverSettings(types_per_group=3),
        )
        supervisor = Supervisor(spark, settings, EmbeddedDelta(), MonitorEvents(monitor), log=lambda _: None)
        report = supervisor.run_until_idle()
        assert report.failures == {}, report.failures
        _run_failing_query(spark, lake)
        assert monitor.flush()
    finally:
        monitor.stop()
    return BuiltLake(lake, manifest)


def _run_failing_query(spark, lake: LakeLayout) -> None:
    """A stream whose second batch raises: the progress log records the failure, and its
    checkpoint keeps batch 1 planned but uncommitted (what the doctor reports)."""

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
        with pytest.raises(Exception, match="boom"):
            query.awaitTermination(60)
    finally:
        query.stop()
