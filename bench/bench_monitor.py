"""What the monitor costs, each part against a baseline measured in the same run:

1. pipeline throughput with and without the monitor (exporter on, scraped every 5 s), rounds
   alternating which goes first, medians compared, plus the driver's CPU seconds (less sensitive
   to other tenants of the machine than wall time): a silver-shaped workload (streams
   multiplexing one Delta table into their own Delta tables, deterministic work), and the real
   bronze/silver pipeline draining a landing directory (whose discovery rounds vary run to run),
   and stateful queries on the same Delta table (a windowed aggregation with a watermark,
   dropDuplicatesWithinWatermark and a stream-stream join, run together);
2. listener callback time as Spark's listener bus sees it: the monitor's JSON bridge against
   PySpark's own listener bridge (which converts each event field by field over Py4J);
3. exporter scrape time and size with 1,000 streams (built from recorded progress) and 300 event
   types, against prometheus_client's plain Gauges holding the same samples; every stream has
   the sources and state of `progress_kafka_spark4.json` (a Kafka and a native Delta source
   with the lag they report, a stream-stream join on RocksDB, a watermark);
4. `streamops status` over a progress log of 1,000 streams.

    python bench/bench_monitor.py
    python bench/bench_monitor.py --only-scrape     # part 3 alone, no Spark
    python bench/bench_monitor.py --parts stateful  # some parts: scrape status listener
                                                    # multiplex stateful pipeline

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "monitor" / "fixtures" / "progress_delta.json"
STATEFUL_FIXTURE = ROOT / "tests" / "monitor" / "fixtures" / "progress_kafka_spark4.json"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def ms(value: float) -> float:
    return round(value * 1000, 3)


# -- 1. pipeline throughput -------------------------------------------------------------------


class Scraper:
    """Scrapes the exporter every `interval` seconds while a run lasts, as Prometheus would."""

    def __init__(self, url: str, interval: float = 5.0) -> None:
        self.url, self.interval, self.count, self.seconds = url, interval, 0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            started = time.perf_counter()
            urllib.request.urlopen(self.url, timeout=60).read()
            self.seconds += time.perf_counter() - started
            self.count += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def process_tree_cpu_seconds() -> float:
    """CPU time of this driver: Python, the Spark JVM and its Python workers. Workers that ended
    are in their parent's children times, so the sum over the live tree misses nothing."""
    import psutil

    total = 0.0
    for process in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            total += sum(process.cpu_times()[:4])
        except psutil.NoSuchProcess:
            pass
    return total


def timed_run(
    spark: Any, lake_dir: Path, monitored: bool, work: Callable[[Any, Any], dict[str, Any]]
) -> dict[str, Any]:
    from streamops.core.lake_layout import LakeLayout
    from streamops.monitor.stream_monitor import StreamMonitor

    lake = LakeLayout.at(lake_dir)
    monitor = StreamMonitor(spark, lake, metrics_port=0, time_callbacks=True) if monitored else None
    cpu, started = process_tree_cpu_seconds(), time.perf_counter()
    scraper = None
    if monitor is not None:
        monitor.start()
        scraper = Scraper(monitor.exporter_url)
    try:
        result = work(lake, monitor)
    finally:
        if scraper is not None:
            scraper.stop()
        if monitor is not None:
            monitor.stop()
    result["seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = process_tree_cpu_seconds() - cpu
    if monitor is not None:
        result["progress_log_rows"] = monitor.progress_log.read(columns=["event"]).num_rows
        result["dropped_events"] = monitor.dropped_events
        result["scrapes"] = scraper.count if scraper else 0
        # the monitor's own work: its worker thread's CPU, plus callbacks and scrapes (wall time,
        # an upper bound of their CPU)
        result["monitor_cpu_seconds"] = (
            monitor.worker_cpu_seconds + sum(monitor.callback_seconds or ()) + (scraper.seconds if scraper else 0)
        )
    return result


def multiplex_work(spark: Any, source: Path, streams: int, max_files: int) -> Callable[[Any, Any], dict[str, Any]]:
    """The silver shape: `streams` queries read one Delta table (availableNow) and write their own
    Delta tables with the idempotent writer, pushing one table commit per batch to the monitor."""
    from streamops.core.delta_format.commit_metadata import BatchCommitInfo
    from streamops.monitor.fleet import TableCommit
    from streamops.pipeline.delta_connector.batch_writer import write_batch

    def work(lake: Any, monitor: Any) -> dict[str, Any]:
        rows = [0] * streams

        def writer(index: int) -> Callable[[Any, int], None]:
            name = f"silver_g{index}"

            def write(df: Any, batch_id: int) -> None:
                data = df.toArrow()
                write_batch(lake.silver(f"t{index}"), data, BatchCommitInfo(name, batch_id))
                rows[index] += data.num_rows
                if monitor is not None:
                    now = time.time()
                    monitor.record_table_commit(TableCommit(f"t{index}", f"g{index}", data.num_rows, now, 1, now - 1))
                    monitor.record_stream_event_time(name, now - 1)

            return write

        queries = [
            spark.readStream.format("streamops_delta")
            .option("path", str(source))
            .option("maxFilesPerTrigger", max_files)
            .load()
            .writeStream.foreachBatch(writer(i))
            .queryName(f"silver_g{i}")
            .option("checkpointLocation", str(lake.checkpoint(f"silver_g{i}")))
            .trigger(availableNow=True)
            .start()
            for i in range(streams)
        ]
        for query in queries:
            query.awaitTermination()
        return {"rows": sum(rows)}

    return work


def pipeline_drain_work(spark: Any, landing: Path) -> Callable[[Any, Any], dict[str, Any]]:
    """The real bronze/silver pipeline draining a landing directory (`streamops run --until-idle`)."""
    from streamops.pipeline.bronze.landing_input import LandingInput
    from streamops.pipeline.delta_connector.connector import connector_for
    from streamops.pipeline.pipeline_events import MonitorEvents, Unmonitored
    from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor

    def work(lake: Any, monitor: Any) -> dict[str, Any]:
        settings = PipelineSettings(lake=lake, input=LandingInput(landing), trigger_seconds=1.0)
        events = MonitorEvents(monitor) if monitor is not None else Unmonitored()
        supervisor = Supervisor(spark, settings, connector_for("embedded", spark), events, log=lambda _: None)
        try:
            return {"rows": supervisor.run_until_idle().bronze_rows}
        finally:
            supervisor.stop()

    return work


def stateful_work(spark: Any, source: Path, max_files: int) -> Callable[[Any, Any], dict[str, Any]]:
    """Stateful operators the monitor reports state and watermarks for, run side by side on one
    Delta table (availableNow, so every run does the same batches); rows = input rows Spark
    reported."""
    from pyspark.sql import functions as F

    def read() -> Any:
        return (
            spark.readStream.format("streamops_delta")
            .option("path", str(source))
            .option("maxFilesPerTrigger", max_files)
            .load()
        )

    def work(lake: Any, monitor: Any) -> dict[str, Any]:
        left = read().select("id", F.col("event_time").alias("left_time"))
        right = read().select(F.col("id").alias("right_id"), F.col("event_time").alias("right_time"))
        plans = {
            "window_count": read()
            .withWatermark("event_time", "1 minute")
            .groupBy(F.window("event_time", "10 seconds"), "event_type")
            .count(),
            "dedup_within_watermark": read()
            .withWatermark("event_time", "1 minute")
            .withColumn("key", F.col("id") % 5000)
            .dropDuplicatesWithinWatermark(["key"]),
            "stream_join": left.withWatermark("left_time", "1 minute").join(
                right.withWatermark("right_time", "1 minute"),
                F.expr("id = right_id AND right_time BETWEEN left_time AND left_time + INTERVAL 10 SECONDS"),
            ),
        }
        queries = [
            plan.writeStream.format("noop")
            .outputMode("append")
            .queryName(name)
            .option("checkpointLocation", str(lake.checkpoint(name)))
            .trigger(availableNow=True)
            .start()
            for name, plan in plans.items()
        ]
        for query in queries:
            query.awaitTermination()
        return {"rows": sum(p["numInputRows"] for q in queries for p in q.recentProgress)}

    return work


def compare(
    spark: Any, work: Callable[[Any, Any], dict[str, Any]], rounds: int, scratch: Path, tag: str
) -> dict[str, Any]:
    """Alternate the order each round (plain first, then monitored first) and compare medians."""
    timed_run(spark, scratch / f"{tag}-warmup", False, work)
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for round_no in range(rounds):
        for monitored in (False, True) if round_no % 2 == 0 else (True, False):
            lake_dir = scratch / f"{tag}-{round_no}-{int(monitored)}"
            runs[monitored].append(timed_run(spark, lake_dir, monitored, work))
    rows = runs[False][0]["rows"]
    assert all(r["rows"] == rows for rs in runs.values() for r in rs), "runs did different work"
    plain_rate = statistics.median(rows / r["seconds"] for r in runs[False])
    monitored_rate = statistics.median(rows / r["seconds"] for r in runs[True])
    plain_cpu = statistics.median(r["cpu_seconds"] for r in runs[False])
    monitored_cpu = statistics.median(r["cpu_seconds"] for r in runs[True])
    return {
        "rows": rows,
        "rounds": rounds,
        "seconds_without_monitor": [round(r["seconds"], 2) for r in runs[False]],
        "seconds_with_monitor": [round(r["seconds"], 2) for r in runs[True]],
        "rows_per_second_without_monitor": round(plain_rate),
        "rows_per_second_with_monitor": round(monitored_rate),
        "throughput_difference_percent": round((monitored_rate / plain_rate - 1) * 100, 2),
        "cpu_seconds_without_monitor": round(plain_cpu, 2),
        "cpu_seconds_with_monitor": round(monitored_cpu, 2),
        "cpu_difference_percent": round((monitored_cpu / plain_cpu - 1) * 100, 2),
        "cpu_seconds_each_run_without_monitor": [round(r["cpu_seconds"], 2) for r in runs[False]],
        "cpu_seconds_each_run_with_monitor": [round(r["cpu_seconds"], 2) for r in runs[True]],
        "monitor_own_cpu_seconds": [round(r["monitor_cpu_seconds"], 3) for r in runs[True]],
        "monitor_own_cpu_share_percent": round(
            statistics.median(100 * r["monitor_cpu_seconds"] / r["cpu_seconds"] for r in runs[True]), 2
        ),
        "progress_log_rows": runs[True][0]["progress_log_rows"],
        "scrapes": sum(r["scrapes"] for r in runs[True]),
        "dropped_events": sum(r["dropped_events"] for r in runs[True]),
    }


def source_table(args: argparse.Namespace, scratch: Path) -> Path:
    """The Delta table both the silver-shaped and the stateful workloads read: one commit per
    file, event times 10 ms apart so windows close and watermarks advance as batches go by."""
    import datetime

    import pyarrow as pa
    from deltalake import write_deltalake

    source = scratch / "source"
    if source.exists():
        return source
    payload = "x" * 200
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    for i in range(args.source_files):
        ids = range(i * args.rows_per_file, (i + 1) * args.rows_per_file)
        write_deltalake(
            str(source),
            pa.table(
                {
                    "id": list(ids),
                    "event_type": [f"e{j % 20}" for j in ids],
                    "payload": [payload] * len(ids),
                    "event_time": pa.array(
                        [start + datetime.timedelta(milliseconds=10 * j) for j in ids], pa.timestamp("us", "UTC")
                    ),
                }
            ),
            mode="append",
        )
    return source


def stateful_throughput(spark: Any, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    work = stateful_work(spark, source_table(args, scratch), args.max_files)
    return {"queries": 3, "source_files": args.source_files} | compare(
        spark, work, args.stateful_rounds, scratch, "stateful"
    )


def multiplex_throughput(spark: Any, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    work = multiplex_work(spark, source_table(args, scratch), args.streams, args.max_files)
    return {"streams": args.streams, "source_files": args.source_files} | compare(
        spark, work, args.rounds, scratch, "multiplex"
    )


def pipeline_throughput(spark: Any, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    from streamops.pipeline.generator.run import generate
    from streamops.pipeline.generator.settings import GeneratorSettings

    landing = scratch / "landing"
    generate(GeneratorSettings(out=landing, events=args.events, event_types=args.event_types, events_per_file=2_000))
    work = pipeline_drain_work(spark, landing)
    return {"events": args.events, "event_types": args.event_types} | compare(
        spark, work, args.pipeline_rounds, scratch, "pipeline"
    )


# -- 2. listener callbacks --------------------------------------------------------------------


def _pyspark_bridge_listener(timings: deque[float]) -> Any:
    """A listener on PySpark's own bridge, timing its per-event conversion plus the callback."""
    from pyspark import SparkContext
    from pyspark.sql.streaming import StreamingQueryListener
    from pyspark.sql.streaming.listener import JStreamingQueryListener, QueryProgressEvent

    class TimedBridge(JStreamingQueryListener):
        def onQueryProgress(self, jevent: Any) -> None:
            started = time.perf_counter()
            self.pylistener.onQueryProgress(QueryProgressEvent.fromJObject(jevent))
            timings.append(time.perf_counter() - started)

        class Java:
            implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]

    class Baseline(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None: ...

        def onQueryProgress(self, event: Any) -> None:
            _ = event.progress.json  # what a listener that reads the event pays

        def onQueryTerminated(self, event: Any) -> None: ...

        @property
        def _jlistener(self) -> Any:
            if not hasattr(self, "_bridge"):
                jvm = SparkContext._jvm
                self._bridge = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(TimedBridge(self))
            return self._bridge

    return Baseline()


def _run_rate_queries(spark: Any, streams: int, seconds: float, prefix: str) -> int:
    queries = [
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .load()
        .writeStream.format("noop")
        .queryName(f"{prefix}_{i:03d}")
        .trigger(processingTime="0.2 seconds")
        .start()
        for i in range(streams)
    ]
    time.sleep(seconds)
    batches = sum(len(q.recentProgress) for q in queries)
    for query in queries:
        query.stop()
    return batches


def listener_callbacks(spark: Any, streams: int, seconds: float) -> dict[str, Any]:
    from streamops.monitor.stream_monitor import StreamMonitor

    monitor = StreamMonitor(spark, None, time_callbacks=True).start()
    try:
        batches = _run_rate_queries(spark, streams, seconds, "monitored")
        assert monitor.flush()
    finally:
        monitor.stop()
    ours = list(monitor.callback_seconds or [])

    baseline_timings: deque[float] = deque()
    baseline = _pyspark_bridge_listener(baseline_timings)
    spark.streams.addListener(baseline)
    try:
        baseline_batches = _run_rate_queries(spark, streams, seconds, "baseline")
        time.sleep(2)
    finally:
        spark.streams.removeListener(baseline)
    theirs = list(baseline_timings)
    return {
        "streams": streams,
        "trigger_seconds": 0.2,
        "monitor_callbacks": len(ours),
        "monitor_batches_seen": batches,
        "monitor_callback_ms_p50": ms(percentile(ours, 50)),
        "monitor_callback_ms_p99": ms(percentile(ours, 99)),
        "monitor_callback_ms_max": ms(max(ours)),
        "monitor_dropped_events": monitor.dropped_events,
        "pyspark_bridge_progress_callbacks": len(theirs),
        "pyspark_bridge_batches_seen": baseline_batches,
        "pyspark_bridge_progress_ms_p50": ms(percentile(theirs, 50)) if theirs else None,
        "pyspark_bridge_progress_ms_p99": ms(percentile(theirs, 99)) if theirs else None,
    }


# -- 3. scrape with 1,000 streams ---------------------------------------------------------------


def synthetic_fleet(streams: int, event_types: int) -> Any:
    from streamops.monitor.fleet import Fleet, TableCommit
    from streamops.monitor.progress_event import QueryProgress, QueryStarted
    from streamops.monitor.source_backlog import SourceBacklog

    template = json.loads(STATEFUL_FIXTURE.read_text())["progress"]
    fleet = Fleet()
    now = time.time()
    for i in range(streams):
        name, query_id = f"silver_group_{i:04d}", f"00000000-0000-0000-0000-{i:012d}"
        fleet.apply(QueryStarted(query_id, "run-" + query_id, name, now - 600, "{}"))
        for batch in range(10):
            data = dict(template, id=query_id, runId="run-" + query_id, name=name, batchId=batch)
            data["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - 100 + 10 * batch))
            progress = QueryProgress.from_json(data)
            reading = SourceBacklog(None, clock=lambda: now).measure(name, progress.sources)
            fleet.apply(progress, reading)
        fleet.record_stream_event_time(name, now - 5)
        fleet.record_quarantine(name, "incompatible_type", i)
    for e in range(event_types):
        fleet.record_table_commit(
            TableCommit(f"event_type_{e:03d}", f"group_{e % streams:04d}", 100, now - 3, 2, now - 8)
        )
    return fleet


def plain_gauges_like(registry_text: bytes) -> Any:
    """prometheus_client's plain metric objects holding the same samples (the baseline)."""
    from prometheus_client import CollectorRegistry, Gauge
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    by_name: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(registry_text.decode()):
        for sample in family.samples:  # a histogram's _bucket, _count and _sum become 3 gauges
            by_name.setdefault(sample.name, []).append(sample)
    for name, samples in by_name.items():
        labels = sorted({k for s in samples for k in s.labels})
        gauge = Gauge(name + "_plain", "x", labels, registry=registry)
        for sample in samples:
            (gauge.labels(**{k: sample.labels.get(k, "") for k in labels}) if labels else gauge).set(sample.value)
    return registry


def scrape(streams: int, event_types: int, repeats: int) -> dict[str, Any]:
    from prometheus_client import CollectorRegistry, generate_latest

    from streamops.monitor.exporter import FleetCollector, serve_metrics

    fleet = synthetic_fleet(streams, event_types)
    registry = CollectorRegistry()
    registry.register(FleetCollector(fleet))
    server = serve_metrics(registry, 0)
    try:
        http_times, body = [], b""
        for _ in range(repeats):
            started = time.perf_counter()
            body = urllib.request.urlopen(server.url, timeout=60).read()
            http_times.append(time.perf_counter() - started)
    finally:
        server.stop()
    plain = plain_gauges_like(body)
    plain_times = []
    for _ in range(repeats):
        started = time.perf_counter()
        plain_body = generate_latest(plain)
        plain_times.append(time.perf_counter() - started)
    return {
        "streams": streams,
        "event_types": event_types,
        "samples": sum(1 for line in body.splitlines() if line and not line.startswith(b"#")),
        "scrape_bytes": len(body),
        "scrape_ms_p50": ms(statistics.median(http_times)),
        "scrape_ms_max": ms(max(http_times)),
        "baseline_plain_gauges_generate_ms_p50": ms(statistics.median(plain_times)),
        "baseline_plain_gauges_bytes": len(plain_body),
    }


# -- 4. streamops status over 1,000 streams ------------------------------------------------------


def status_command(streams: int, scratch: Path) -> dict[str, Any]:
    from streamops.core.lake_layout import LakeLayout
    from streamops.monitor.fleet_status import fleet_status
    from streamops.monitor.progress_event import QueryProgress, QueryStarted
    from streamops.monitor.progress_log import ProgressLog
    from streamops.monitor.progress_record import row_of

    lake = LakeLayout.at(scratch / "status-lake")
    template = json.loads(FIXTURE.read_text())["progress"]
    now = time.time()
    rows = []
    for i in range(streams):
        name, query_id = f"stream_{i:04d}", f"00000000-0000-0000-0000-{i:012d}"
        rows.append(row_of(QueryStarted(query_id, "run", name, now - 600, "{}"), name, now))
        for batch in range(20):
            data = dict(template, id=query_id, runId="run", name=name, batchId=batch)
            data["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - 200 + 10 * batch))
            rows.append(row_of(QueryProgress.from_json(data), name, now))
    log = ProgressLog(lake.query_progress)
    for chunk in range(0, len(rows), 5_000):
        log.append(rows[chunk : chunk + 5_000])
    started = time.perf_counter()
    result = fleet_status(lake)
    seconds = time.perf_counter() - started
    return {"streams": len(result), "progress_rows": len(rows), "status_seconds": round(seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=4, help="multiplexed streams (silver shape)")
    parser.add_argument("--source-files", type=int, default=60)
    parser.add_argument("--rows-per-file", type=int, default=2_000)
    parser.add_argument("--max-files", type=int, default=5, help="maxFilesPerTrigger of each stream")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of the multiplex comparison")
    parser.add_argument("--stateful-rounds", type=int, default=4, help="0 skips the stateful queries")
    parser.add_argument("--events", type=int, default=100_000, help="events for the real pipeline drain")
    parser.add_argument("--event-types", type=int, default=20)
    parser.add_argument("--pipeline-rounds", type=int, default=2, help="0 skips the real pipeline drain")
    parser.add_argument("--listener-streams", type=int, default=10)
    parser.add_argument("--listener-seconds", type=float, default=15.0)
    parser.add_argument("--scrape-streams", type=int, default=1000)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=PARTS, help="parts to run (default: all)")
    parser.add_argument("--only-scrape", action="store_true", help="part 3 alone (no Spark); same as --parts scrape")
    args = parser.parse_args()
    parts = ["scrape"] if args.only_scrape else args.parts
    if not args.stateful_rounds and "stateful" in parts:
        parts.remove("stateful")
    if not args.pipeline_rounds and "pipeline" in parts:
        parts.remove("pipeline")

    result: dict[str, Any] = {"benchmark": "monitor"}
    if "scrape" in parts:
        result["scrape"] = scrape(args.scrape_streams, 300, repeats=10)
    with tempfile.TemporaryDirectory(prefix="bench-monitor-") as scratch:
        if "status" in parts:
            result["status_command"] = status_command(args.scrape_streams, Path(scratch))
        spark_parts = [part for part in parts if part in SPARK_PARTS]
        if spark_parts:
            from streamops.pipeline.run.spark_session import build_spark

            spark = build_spark(master="local[2]")
            for part in spark_parts:
                result[part] = SPARK_PARTS[part](spark, args, Path(scratch))
            spark.stop()
    print(json.dumps(result, indent=2))


def listener_part(spark: Any, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    return listener_callbacks(spark, args.listener_streams, args.listener_seconds)


SPARK_PARTS: dict[str, Callable[[Any, argparse.Namespace, Path], dict[str, Any]]] = {
    "listener": listener_part,
    "multiplex": multiplex_throughput,
    "stateful": stateful_throughput,
    "pipeline": pipeline_throughput,
}
PARTS = ["scrape", "status", *SPARK_PARTS]


if __name__ == "__main__":
    main()
