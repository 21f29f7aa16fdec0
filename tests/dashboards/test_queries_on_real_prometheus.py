"""Every query of the dashboards and alert rules, evaluated by a real Prometheus that scrapes the
exporter of a real pipeline run: each query parses and evaluates, and each returns data.

The pipeline (bronze, management, silver groups under the supervisor, continuous 1 s triggers)
ingests generated events with bad records (quarantine), drift including an incompatible type
change (schema alerts) and several event types, while `StreamMonitor` exports its metrics and
Prometheus scrapes them every second. Alert expressions are checked twice: the value Grafana
queries must return data, and the Prometheus alert expression (value compared with a threshold,
so usually empty on a healthy run) must evaluate without error.

Once every other query has data, three queries any user might run start beside the pipeline (a
windowed count with a watermark on the RocksDB state store; a deduplication without a watermark,
whose state only grows and raises the `state_unbounded` warning, with an observed row count; a reader of a Delta table that
reads one commit a batch, so it always has unread versions and their retention headroom: the
pipeline's own readers catch up too fast to be sure of one at a scrape), and the monitor replays a recorded Kafka run
(no broker runs here) through its own event queue, so the source-lag, state, watermark and
warning panels have data from the same exporter. What only a Kafka or CDC pipeline or one with
data-quality rules reports (a range of offsets retention deleted, a CDC table's MERGE and its lag,
the rows that passed and failed a rule) is recorded through the monitor's API as the pipeline's
events record it (tests/pipeline prove the pipeline does).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from prometheus_server import PrometheusServer, running_prometheus
from pyspark.sql import functions as F
from waiting import wait_until

from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.build import FLEET_DASHBOARD, STREAM_DASHBOARD, build_documents
from streamops.dashboards.exposition import sample_name
from streamops.dashboards.expression_inventory import UsedQuery, interpolate, used_queries
from streamops.monitor.fleet import CdcApply
from streamops.monitor.metric_catalog import (
    EVENT_TIME_MAX_LAG,
    OBSERVED_METRIC,
    ROCKSDB_CHECKPOINT_BYTES,
    ROCKSDB_COMMIT_SECONDS,
    ROCKSDB_SST_BYTES,
    SOURCE_RETENTION_HEADROOM,
    STATE_MEMORY,
    STATE_ROWS,
    STATE_ROWS_DROPPED,
    STATE_ROWS_REMOVED,
    STATE_ROWS_UPDATED,
    STREAM_UP,
    STREAM_WARNING,
    WATERMARK_LAG,
)
from streamops.monitor.stream_monitor import StreamMonitor
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.pipeline_events import MonitorEvents
from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
from streamops.pipeline.silver.silver_stream import SilverSettings

pytestmark = pytest.mark.services

DATA_DEADLINE_SECONDS = 240
"""How long the queries may take to all have data; the pipeline stops as soon as they do."""
DASHBOARD_WINDOWS = {"__rate_interval": "1m", "__range": "5m"}
ALL = ".*"
KAFKA_RUN = Path(__file__).resolve().parents[1] / "monitor" / "fixtures" / "sequence_kafka_lagging.jsonl"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


LAGGING_COMMITS = 40
"""Commits of the lagging reader's table: one a batch every 2 s lasts past the deadline."""
LAGGING_READER = "user_lagging_delta_reader"


def lagging_delta_table(path: Path) -> Path:
    for first in range(LAGGING_COMMITS):
        write_deltalake(str(path), pa.table({"id": [first]}), mode="append")
    return path


def start_user_queries(spark, delta_table: Path, checkpoints: Path) -> list:
    """Small on purpose: they share the pipeline's two cores (a batch every 2 s, 5 rows a second)."""
    rate = spark.readStream.format("rate").option("rowsPerSecond", 5).load()
    spark.conf.set(PROVIDER_CONF, ROCKSDB)
    try:
        window = (
            rate.withWatermark("timestamp", "1 second")
            .groupBy(F.window("timestamp", "1 second"))
            .count()
            .writeStream.format("noop")
            .outputMode("append")
            .queryName("user_window_count")
            .trigger(processingTime="2 seconds")
            .start()
        )
    finally:
        spark.conf.unset(PROVIDER_CONF)
    unbounded = (
        rate.observe("quality", F.count(F.lit(1)).alias("rows"))  # the observed-metrics panel's data
        .dropDuplicates(["value"])
        .writeStream.format("noop")
        .queryName("user_dedup_unbounded")
        .trigger(processingTime="2 seconds")
        .start()
    )
    lagging = (
        spark.readStream.format("streamops_delta")
        .option("maxFilesPerTrigger", 1)
        .load(str(delta_table))
        .writeStream.format("noop")
        .queryName(LAGGING_READER)
        .option("checkpointLocation", str(checkpoints / LAGGING_READER))
        .trigger(processingTime="2 seconds")
        .start()
    )
    return [window, unbounded, lagging]


USER_QUERY_FAMILIES = {
    sample_name(spec)
    for spec in (
        STATE_ROWS,
        STATE_MEMORY,
        STATE_ROWS_UPDATED,
        STATE_ROWS_REMOVED,
        STATE_ROWS_DROPPED,
        ROCKSDB_COMMIT_SECONDS,
        ROCKSDB_SST_BYTES,
        ROCKSDB_CHECKPOINT_BYTES,
        WATERMARK_LAG,
        EVENT_TIME_MAX_LAG,
        OBSERVED_METRIC,
        STREAM_WARNING,
        SOURCE_RETENTION_HEADROOM,
    )
}
"""What only the user queries are sure to give data to (the pipeline's streams are stateless)."""


def needs_user_queries(query: UsedQuery) -> bool:
    return bool(set(query.metric_names()) & USER_QUERY_FAMILIES)


def replay_recorded_kafka_run(monitor: StreamMonitor) -> None:
    """The recorded run's events, in order, into the monitor's queue as its listener puts them
    (the run stays active: its termination is left out)."""
    for line in KAFKA_RUN.read_text().splitlines():
        entry = json.loads(line)
        if entry["kind"] != "terminated":
            monitor._offer(entry["kind"], json.dumps(entry["json"]), entry["received_at"])


def record_kafka_cdc_and_expectation_batches(monitor: StreamMonitor) -> None:
    """A bronze batch that met a retention gap, a CDC group's MERGE and a silver batch's rule counts,
    as `MonitorEvents` records them (the recorded Kafka run and the generated load have none)."""
    monitor.record_kafka_data_loss("bronze", "shop.public.orders", 0, 25)
    now = time.time()
    monitor.record_cdc_apply(
        CdcApply(
            stream="silver_g0001",
            table="public.orders",
            inserted=3,
            updated=2,
            deleted=1,
            ignored=0,
            lag_seconds=4.5,
            committed_at=now,
        )
    )
    monitor.record_expectation("silver_g0001", "purchase", "price_nonneg", 95, 5)


def fleet_values() -> dict[str, str]:
    return {"stream": ALL, "group": ALL, "event_type": ALL, **DASHBOARD_WINDOWS}


def streams_known(prometheus: PrometheusServer) -> list[str]:
    answer = prometheus.label_values("stream", sample_name(STREAM_UP))
    return sorted(answer.get("data") or [])


def problem_with(query: UsedQuery, prometheus: PrometheusServer, streams: list[str]) -> str | None:
    """None when `query` evaluates and has data; otherwise what is wrong (errors are final)."""
    if query.kind == "variable":
        selector, label = query.label_values()
        answer = prometheus.label_values(label, interpolate(selector, fleet_values()))
        if answer["status"] != "success":
            return f"error: {answer.get('error')}"
        return None if answer["data"] else "no label values"
    candidates = [fleet_values()]
    if query.file == STREAM_DASHBOARD:
        candidates = [{"stream": stream, **DASHBOARD_WINDOWS} for stream in streams]
    empty = True
    for values in candidates:
        answer = prometheus.query(interpolate(query.text, values))
        if answer["status"] != "success":
            return f"error: {answer.get('error')}"
        empty = empty and not answer["data"]["result"]
    if query.kind == "prometheus_alert":
        return None
    return "no data" if empty else None


@pytest.fixture
def generated_landing(tmp_path):
    landing = tmp_path / "landing"
    generate(
        GeneratorSettings(out=landing, events=1500, event_types=5, drift=1.0, bad=0.03, seed=5, events_per_file=250)
    )
    return landing


def test_every_dashboard_and_rule_query_has_data_on_a_real_run(spark, tmp_path, generated_landing):
    queries = used_queries(build_documents())
    assert {q.file for q in queries} >= {FLEET_DASHBOARD, STREAM_DASHBOARD}
    lake = LakeLayout.at(tmp_path / "lake")
    monitor = StreamMonitor(spark, lake, metrics_port=0, flush_interval_s=1.0).start()
    delta_table = lagging_delta_table(tmp_path / "upstream")
    monitor.register_source_table(LAGGING_READER, delta_table)  # outside the lake: named, as a user would
    user_queries: list = []
    try:
        replay_recorded_kafka_run(monitor)
        record_kafka_cdc_and_expectation_batches(monitor)
        target = urllib.parse.urlsplit(monitor.exporter_url).netloc
        with running_prometheus(tmp_path / "prometheus", [target]) as prometheus:
            settings = PipelineSettings(
                lake=lake,
                input=LandingInput(generated_landing, max_files_per_trigger=2),
                trigger_seconds=1.0,
                silver=SilverSettings(types_per_group=10),
            )
            supervisor = Supervisor(spark, settings, EmbeddedDelta(), MonitorEvents(monitor), log=lambda line: None)
            runner = threading.Thread(target=supervisor.run_for, args=(None,), daemon=True)
            started = time.monotonic()
            runner.start()
            try:
                wait_until(prometheus.targets_up, 30, "Prometheus to scrape the exporter", 0.5)
                pending = {(q.file, q.where): q for q in queries}
                problems: dict[tuple[str, str], str] = {}
                while pending and time.monotonic() - started < DATA_DEADLINE_SECONDS:
                    if not user_queries and all(needs_user_queries(q) for q in pending.values()):
                        user_queries = start_user_queries(spark, delta_table, tmp_path / "user_checkpoints")
                    streams = streams_known(prometheus)
                    problems = {}
                    for key, query in list(pending.items()):
                        problem = problem_with(query, prometheus, streams)
                        if problem is None:
                            del pending[key]
                        else:
                            problems[key] = problem
                    errors = {k: p for k, p in problems.items() if p.startswith("error")}
                    assert not errors, f"queries Prometheus rejects: {errors}"
                    time.sleep(2)
                assert not pending, "queries without data after a real run: " + "; ".join(
                    f"{file}: {where}: {problems.get((file, where))}: {pending[(file, where)].text}"
                    for file, where in sorted(pending)
                )
                if user_queries:  # the lagging reader is what the headroom panel counts on
                    headroom = f'{sample_name(SOURCE_RETENTION_HEADROOM)}{{stream="{LAGGING_READER}"}}'
                    wait_until(
                        lambda: prometheus.query(headroom)["data"]["result"], 60, "the lagging reader's headroom", 1
                    )
            finally:
                supervisor.request_stop()
                runner.join(timeout=120)
                assert not runner.is_alive(), "the supervisor did not stop"
    finally:
        for query in user_queries:
            query.stop()
        monitor.stop()
