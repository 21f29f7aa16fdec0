"""Bronze reading Kafka, against the job a user would write by hand with plain Spark, on one
topic of a real single-node broker (tests/kafka_broker.py) started by the benchmark.

Throughput (the default): the generator produces `--events` lines (300 event types, drift, bad
records) to a topic of `--partitions` partitions, then each variant reads the whole topic from
its earliest offset, `--max-offsets-per-trigger` records per batch, with `availableNow`:

- `plain_delta_spark`: `spark.readStream.format("kafka")` -> `json_tuple` for the fields bronze
  keeps (event type, id, time) plus the line and the record's coordinates ->
  `writeStream.format("delta")` (delta-spark), the job a user would write by hand;
- `streamops_embedded`, `streamops_native`: `streamops run --stages bronze --until-idle` with
  `--delta embedded|native` (it also classifies every line strictly, hashes its schema
  variation, registers new variations, quarantines what it cannot use, and commits to Delta).

Each runs in its own process, timed from process start to its table's last Delta commit, so both sides pay one JVM start; variants
alternate for `--rounds` rounds into fresh outputs (the order reversed every other round); the
best and the median of each are kept, with the load average read before each run.

    python bench/bench_bronze_kafka.py --events 1000000 --event-types 300 --partitions 4 --rounds 2

Sustained rate (`--rates`): for each rate, a fresh topic and lake, `streamops run --stages bronze`
running continuously (5 s triggers), then a generator process producing at that rate for
`--duration` seconds; reported as `bench_pipeline_load.py --rates` does for landing files (the
same `highest_sustained` rule: every record in bronze or quarantine within three triggers after
the load ended), with freshness measured from each record's Kafka timestamp to the bronze commit
that holds it.

    python bench/bench_bronze_kafka.py --rates 10000,20000,40000 --duration 60

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from bench_bronze_delta_spark import last_commit_time, rows_in
from bench_pipeline_load import highest_sustained, quantiles
from bench_support import ProcessTreeSampler, cpu_seconds_by_role, machine, run_measured, test_helpers

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.generator.kafka_writer import KafkaTarget
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.lake_summary import summarize_lake
from streamops.pipeline.runtime.spark_jars import delta_spark_package, jar_settings, kafka_package

test_helpers()
from kafka_broker import KafkaBroker
from ports import free_port

VARIANTS = ("plain_delta_spark", "streamops_embedded", "streamops_native")
TOPIC = "bench-events"
STARTED_SAMPLE = 'streamops_stream_up{stream="bronze"} 1.0'

PLAIN_JOB = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession, functions as F

    bootstrap, topic, out, checkpoint, jars, per_trigger = sys.argv[1:7]
    spark = (
        SparkSession.builder.master("local[*]").appName("plain-kafka-delta-spark")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    records = (
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic).option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", per_trigger).load()
    )
    line = F.col("value").cast("string")
    fields = F.json_tuple(line, "event_type", "event_id", "event_time").alias("event_type", "event_id", "time_text")
    rows = records.select(fields, line.alias("payload"), "topic", "partition", "offset", "timestamp", "key")
    bronze = rows.withColumn("event_time", F.try_to_timestamp("time_text")).drop("time_text")
    query = (
        bronze.writeStream.format("delta").option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start(out)
    )
    query.awaitTermination()
    spark.stop()
    """
)


def command(variant: str, bootstrap: str, work: Path, per_trigger: int) -> list[str]:
    if variant == "plain_delta_spark":
        jars = jar_settings([kafka_package(), delta_spark_package()])["spark.jars"]
        out, checkpoint = work / "plain_table", work / "checkpoint"
        return [sys.executable, "-c", PLAIN_JOB, bootstrap, TOPIC, str(out), str(checkpoint), jars, str(per_trigger)]
    return [
        sys.executable, "-m", "streamops", "run", "--lake", str(work / "lake"), "--kafka-bootstrap", bootstrap,
        "--topics", TOPIC, "--until-idle", "--stages", "bronze", "--delta", variant.rsplit("_", 1)[1],
        "--max-offsets-per-trigger", str(per_trigger),
    ]  # fmt: skip


def landed(variant: str, work: Path) -> tuple[float, int]:
    """When the variant's last commit was written, and the records it holds (for bronze: its
    rows and its quarantine's, every record once)."""
    if variant == "plain_delta_spark":
        table = work / "plain_table"
        return last_commit_time(table), rows_in(table)
    lake = LakeLayout.at(work / "lake")
    return last_commit_time(Path(str(lake.bronze_events))), rows_in(lake.bronze_events) + rows_in(
        lake.bronze_quarantine
    )


def run_variant(variant: str, bootstrap: str, work: Path, per_trigger: int, records: int) -> dict:
    run = run_measured(command(variant, bootstrap, work, per_trigger))
    last, rows = landed(variant, work)
    if rows != records:
        raise SystemExit(f"{variant} landed {rows} records of the {records} on the topic")
    return {
        "seconds": round(last - run.started, 2),
        "cpu_seconds": run.cpu_seconds,
        "peak_rss_mb": round(run.usage.peak_rss_mb),
        "peak_rss_mb_by_role": run.usage.peak_rss_mb_by_role,
        "peak_pss_mb": round(run.usage.peak_pss_mb),
    }


def throughput(args: argparse.Namespace, broker: KafkaBroker, scratch: Path) -> dict:
    target = KafkaTarget(broker.bootstrap, TOPIC, args.partitions)
    settings = GeneratorSettings(
        out=scratch / "manifest", events=args.events, event_types=args.event_types, target=target
    )
    started = time.perf_counter()
    manifest = generate(settings)
    produce_seconds = time.perf_counter() - started
    records = sum(broker.latest_offsets(TOPIC).values())
    variants = args.variants.split(",")
    runs: dict[str, list[dict]] = {variant: [] for variant in variants}
    for round_number in range(args.rounds):
        for variant in variants if round_number % 2 == 0 else variants[::-1]:
            work = scratch / f"{variant}-{round_number}"
            load = round(os.getloadavg()[0], 2)
            run = run_variant(variant, broker.bootstrap, work, args.max_offsets_per_trigger, records)
            runs[variant].append({**run, "load_average_1m_before": load})
            print(f"round {round_number + 1} {variant}: {runs[variant][-1]['seconds']} s", file=sys.stderr)
    best = {variant: min(results, key=lambda r: r["seconds"]) for variant, results in runs.items()}
    report = {
        "records": records,
        "event_types": args.event_types,
        "partitions": args.partitions,
        "max_offsets_per_trigger": args.max_offsets_per_trigger,
        "produce_seconds": round(produce_seconds, 1),
        "produced_records_per_s": round(manifest["lines_total"] / produce_seconds),
        "best": {v: {**r, "records_per_s": round(records / r["seconds"])} for v, r in best.items()},
        "all_seconds": {variant: [r["seconds"] for r in results] for variant, results in runs.items()},
        "loads_before": {variant: [r["load_average_1m_before"] for r in results] for variant, results in runs.items()},
        "median_seconds": {
            variant: statistics.median(r["seconds"] for r in results) for variant, results in runs.items()
        },
    }
    if "plain_delta_spark" in best:
        baseline = best["plain_delta_spark"]["seconds"]
        report["ratio_to_plain_delta_spark"] = {v: round(baseline / r["seconds"], 3) for v, r in best.items()}
        median = report["median_seconds"]
        report["median_ratio_to_plain_delta_spark"] = {
            v: round(median["plain_delta_spark"] / seconds, 3) for v, seconds in median.items()
        }
    return report


def bronze_accounted(lake: LakeLayout) -> int:
    summary = summarize_lake(lake)
    return summary.bronze_rows + sum(summary.quarantine_by_reason.values())


def seconds_until(condition: Callable[[], bool], timeout: float, poll: float = 1.0) -> float | None:
    """Seconds until `condition()` holds; None when `timeout` passed first."""
    started = time.time()
    while time.time() - started < timeout:
        if condition():
            return round(time.time() - started, 1)
        time.sleep(poll)
    return None


def bronze_freshness(lake: LakeLayout, since: float | None = None) -> list[float]:
    """For every bronze row, seconds from its Kafka timestamp (when it was produced) to the
    commit of the bronze batch that holds it; only commits after `since` when given."""
    log = DeltaLog(lake.bronze_events)
    committed: dict[int, float] = {}
    for version in range(log.latest_version() + 1):
        commit = log.commit(version)
        batch = BatchCommitInfo.from_commit_info(commit.commit_info)
        if batch is not None:
            committed[batch.batch_id] = (commit.timestamp_ms or 0) / 1000.0
    if not committed:
        return []
    rows = read_delta(str(lake.bronze_events), columns=["batch_id", "kafka_timestamp"])
    batches = pa.array(list(committed), pa.int64())
    commit_seconds = pc.take(pa.array(list(committed.values())), pc.index_in(rows["batch_id"], value_set=batches))
    micros = pc.cast(pc.cast(rows["kafka_timestamp"], pa.timestamp("us", tz="UTC")), pa.int64())
    latency = pc.subtract(commit_seconds, pc.divide(pc.cast(micros, pa.float64()), 1e6))
    if since is not None:
        latency = pc.filter(latency, pc.greater_equal(commit_seconds, since))
    return sorted(value for value in latency.to_pylist() if value is not None)


def wait_for_bronze(metrics_url: str, pipeline: subprocess.Popen, timeout: float = 300) -> None:
    def started() -> bool:
        if pipeline.poll() is not None:
            raise SystemExit(f"streamops run exited {pipeline.returncode} before bronze started")
        try:
            with urllib.request.urlopen(metrics_url, timeout=5) as answer:
                return STARTED_SAMPLE in answer.read().decode()
        except OSError:
            return False

    if seconds_until(started, timeout) is None:
        raise SystemExit(f"bronze did not start within {timeout:.0f}s")


def stop(process: subprocess.Popen) -> None:
    """Ctrl-C, as a user stops the pipeline; its whole process group if it does not end."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(60)


def run_rate(args: argparse.Namespace, broker: KafkaBroker, scratch: Path, rate: int, delta: str) -> dict:
    topic, lake = f"rate-{delta}-{rate}", LakeLayout.at(scratch / f"{delta}-{rate}" / "lake")
    broker.create_topic(topic, args.partitions)
    port = free_port()
    pipeline = subprocess.Popen(
        [sys.executable, "-m", "streamops", "run", "--lake", str(lake.root), "--kafka-bootstrap", broker.bootstrap,
         "--topics", topic, "--stages", "bronze", "--delta", delta, "--trigger", str(args.trigger),
         "--duration", "86400", "--metrics-port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    events = rate * args.duration
    try:
        wait_for_bronze(f"http://127.0.0.1:{port}/metrics", pipeline)
        generator = subprocess.Popen(
            [sys.executable, "-m", "streamops", "generate", "--out", str(scratch / f"gen-{delta}-{rate}"),
             "--events", str(events), "--rate", str(rate), "--event-types", str(args.event_types), "--bad", "0",
             "--kafka-bootstrap", broker.bootstrap, "--topic", topic],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        started = time.time()
        with ProcessTreeSampler(interval=1.0, root=pipeline.pid) as sampler:
            cpu_before = cpu_seconds_by_role(root=pipeline.pid)
            generator.wait()
            generated_at = time.time()
            cpu_after = cpu_seconds_by_role(root=pipeline.pid)
            in_bronze_when_generated = bronze_accounted(lake)
            caught_up = seconds_until(lambda: bronze_accounted(lake) >= events, args.drain, poll=0.5)
    finally:
        stop(pipeline)
    seconds = generated_at - started
    return {
        "layout": f"bronze_{delta}",
        "delta": delta,
        "rate": rate,
        "events_generated": events,
        "generation_seconds": round(seconds, 1),
        "offered_events_per_s": round(events / seconds),
        "in_bronze_when_generation_ended": in_bronze_when_generated,
        "sustained_events_per_s": round(in_bronze_when_generated / seconds),
        "all_accounted_seconds_after_generation": caught_up,
        "freshness_seconds": quantiles(bronze_freshness(lake)),
        "freshness_last_minute_of_generation": quantiles(bronze_freshness(lake, since=generated_at - 60)),
        "peak_rss_mb": round(sampler.usage.peak_rss_mb),
        "peak_rss_mb_by_role": sampler.usage.peak_rss_mb_by_role,
        "mean_cpu_percent": sampler.usage.mean_cpu_percent,
        "cores_used_during_generation_by_role": {
            role: round((cpu_after[role] - cpu_before[role]) / seconds, 2) for role in cpu_after
        },
    }


def sustained(args: argparse.Namespace, broker: KafkaBroker, scratch: Path) -> dict:
    rates = [int(rate) for rate in args.rates.split(",")]
    results = []
    for delta in args.delta.split(","):
        for rate in rates:
            results.append(run_rate(args, broker, scratch, rate, delta))
            print(
                f"{delta} {rate}/s: caught up {results[-1]['all_accounted_seconds_after_generation']}", file=sys.stderr
            )
    return {
        "rates": rates,
        "duration_seconds": args.duration,
        "trigger_seconds": args.trigger,
        "partitions": args.partitions,
        "results": results,
        "highest_sustained_rate": highest_sustained(results, args.trigger, args.freshness_goal),
        "freshness_goal_seconds": args.freshness_goal,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--event-types", type=int, default=300)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rates", help="comma-separated produce rates: measure the highest bronze keeps up with")
    parser.add_argument("--duration", type=int, default=60, help="seconds of load per rate, with --rates")
    parser.add_argument("--drain", type=int, default=120, help="seconds to wait for bronze after the load")
    parser.add_argument("--trigger", type=float, default=5.0)
    parser.add_argument("--freshness-goal", type=float, default=15.0, help="seconds, p95, with --rates")
    parser.add_argument("--delta", default="embedded", help="connectors for --rates, comma separated")
    args = parser.parse_args()
    info = machine()
    with tempfile.TemporaryDirectory(prefix="bench-bronze-kafka-") as scratch:
        with KafkaBroker(Path(scratch) / "kafka") as broker:
            if args.rates:
                report = {"benchmark": "bronze_kafka_rates", **sustained(args, broker, Path(scratch))}
            else:
                report = {"benchmark": "bronze_kafka", **throughput(args, broker, Path(scratch))}
    info["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps({**report, "machine": info}, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
