"""Bronze throughput against a plain-Spark baseline on the same files, in the same run.

Baseline: Spark's text source -> foreachBatch -> the same executor-side Delta sink (Spark's
tasks write Parquet, the driver commits once with the txn), no parsing, hashing, registry or
quarantine. Bronze: the real bronze stream (classification,
schema-variation hash, registry, quarantine), with the JVM classifier (the default where a JDK
is installed) and with the Python one. All drain the same landing files with
Trigger.AvailableNow and the same files per batch, after a warm-up of each on a few files; the
variants alternate for `--rounds` rounds into fresh lakes and the best time of each is kept,
so a busy neighbour slows a round, not the comparison.

The bronze variants run with the monitor attached as in `streamops run`: a StreamMonitor on the
variant's lake (its listener on Spark, its progress log), started before the bronze query and
stopped after it, the writer reporting each commit to it through MonitorEvents; its start and
stop are inside the variant's time, as they are inside a run's. The baseline and the Spark sink
bounds run without it, as before.

With `--spark-sink-bounds`, four more variants measure what the same work costs with Spark's
own sinks in the JVM (no Python sink, no Delta commit): the baseline's lines, and bronze's event
columns after the same classifier (quarantined lines dropped, no registry, no first lines),
each into Spark's Parquet writer and into its `noop` sink (computed, not written). The Parquet
pair's ratio bounds what moving bronze's writes into the JVM could reach; the `noop` pair
separates reading and classifying from writing.

    python bench/bench_bronze.py --events 1000000 --event-types 300 --rounds 2 --spark-sink-bounds

Prints JSON, with the CPU seconds each kind of process (driver Python, JVM, Python workers) used
in each variant.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from bench_support import cpu_seconds_by_role, machine, product_monitor, timed

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.bronze_stream import BronzeBatchWriter, BronzeSettings, classified_lines, start_bronze
from streamops.pipeline.bronze.events_mode import EventsMode
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.delta_connector.write_plan import ROUTE_COLUMN, TableTarget, WritePlan
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.lake_summary import summarize_lake
from streamops.pipeline.registry.schema_registry import SchemaRegistry
from streamops.pipeline.run.spark_session import build_spark

BENCH_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)
SPARK_SINKS = ("parquet", "noop")


def run_baseline(spark, landing: Path, work: Path, max_files: int) -> None:
    table = work / "baseline_table"

    def write(df, batch_id):
        from pyspark.sql import functions as F

        plan = WritePlan(
            commit=BatchCommitInfo("baseline", batch_id),
            tables={"lines": TableTarget(str(table), columns={"value": "value"})},
            commit_stages=(("lines",),),
            report_path="",
        )
        EmbeddedDelta().write_routes(df.select(F.lit("lines").alias(ROUTE_COLUMN), "value"), plan)

    query = (
        landing_lines(spark, landing, max_files)
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(work / "baseline_ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def run_spark_sink(spark, lines, work: Path, sink: str) -> None:
    """A stream of `lines` drained by one of Spark's own sinks: `parquet` (plain files, a
    directory per batch) or `noop` (every row computed, nothing written)."""

    def write(df, batch_id):
        df.write.format(sink).mode("append").save(str(work / sink / f"batch-{batch_id}"))

    query = (
        lines.writeStream.foreachBatch(write)
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def landing_lines(spark, landing: Path, max_files: int):
    return spark.readStream.format("text").option("maxFilesPerTrigger", str(max_files)).load(str(landing))


def bronze_event_columns(spark, landing: Path, max_files: int):
    """Bronze's event rows as the JVM classifier makes them, with constant batch values (a
    per-batch literal would make Spark generate and compile new code every batch)."""
    from pyspark.sql import functions as F

    settings = BronzeSettings(LandingInput(landing, max_files_per_trigger=max_files), EventsMode(classifier="jvm"))
    return (
        classified_lines(spark, settings)
        .where("quarantine_reason IS NULL")
        .select(
            "event_type",
            "event_id",
            "event_time",
            "schema_hash",
            F.col("payload").cast("string").alias("payload"),
            F.lit(BENCH_TIME).alias("ingest_time"),
            "source_file",
            F.lit(0).cast("long").alias("batch_id"),
        )
    )


def run_bronze(spark, landing: Path, work: Path, max_files: int, classifier: str) -> LakeLayout:
    lake = LakeLayout.at(work / "lake")
    settings = BronzeSettings(
        LandingInput(landing, max_files_per_trigger=max_files), EventsMode(classifier=classifier), available_now=True
    )
    with product_monitor(spark, lake) as events:
        writer = BronzeBatchWriter(lake, EmbeddedDelta(), SchemaRegistry.load(lake.schema_registry), events, settings)
        query = start_bronze(spark, lake, writer)
        query.awaitTermination()
    return lake


def summary_of(seconds: float, usage, cpu: dict[str, float], lines: int, lake: LakeLayout | None = None) -> dict:
    result = {
        "seconds": round(seconds, 2),
        "lines_per_s": round(lines / seconds),
        "peak_rss_mb": round(usage.peak_rss_mb),
        "mean_cpu_percent": usage.mean_cpu_percent,
        "cpu_seconds_by_process": {role: round(used, 2) for role, used in cpu.items()},
    }
    if lake is not None:
        lake_summary = summarize_lake(lake)
        assert lake_summary.bronze_rows + sum(lake_summary.quarantine_by_reason.values()) == lines, "lines lost"
        result.update(
            bronze_rows=lake_summary.bronze_rows,
            quarantined=sum(lake_summary.quarantine_by_reason.values()),
            schema_variations=lake_summary.variations,
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--event-types", type=int, default=300)
    parser.add_argument("--max-files-per-trigger", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--spark-sink-bounds",
        action="store_true",
        help="also measure the baseline and bronze's columns through Spark's Parquet and noop sinks",
    )
    args = parser.parse_args()
    info = machine()
    variants = {
        "baseline_text_to_delta": lambda landing, work: run_baseline(spark, landing, work, args.max_files_per_trigger),
        "bronze_jvm_classifier": lambda landing, work: run_bronze(
            spark, landing, work, args.max_files_per_trigger, "jvm"
        ),
        "bronze_python_classifier": lambda landing, work: run_bronze(
            spark, landing, work, args.max_files_per_trigger, "python"
        ),
    }
    if args.spark_sink_bounds:
        for sink in SPARK_SINKS:
            variants[f"bound_baseline_spark_{sink}"] = lambda landing, work, sink=sink: run_spark_sink(
                spark, landing_lines(spark, landing, args.max_files_per_trigger).select("value"), work, sink
            )
            variants[f"bound_bronze_columns_spark_{sink}"] = lambda landing, work, sink=sink: run_spark_sink(
                spark, bronze_event_columns(spark, landing, args.max_files_per_trigger), work, sink
            )
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-bronze-") as scratch:
        root = Path(scratch)
        manifest = generate(GeneratorSettings(out=root / "landing", events=args.events, event_types=args.event_types))
        lines = manifest["lines_total"]
        warmup = root / "warmup_landing"
        warmup.mkdir()
        for written in manifest["files"][:5]:
            shutil.copy(root / "landing" / written["name"], warmup)
        spark = build_spark()
        for name, run in variants.items():
            run(warmup, root / f"warmup_{name}")
        for round_number in range(args.rounds):
            for name, run in variants.items():
                work = root / f"{name}_{round_number}"
                cpu_before = cpu_seconds_by_role()
                seconds, usage, lake = timed(run, root / "landing", work)
                cpu_after = cpu_seconds_by_role()
                cpu = {role: cpu_after[role] - cpu_before[role] for role in cpu_before}
                result = summary_of(seconds, usage, cpu, lines, lake)
                if name not in best or result["seconds"] < best[name]["seconds"]:
                    best[name] = result
                shutil.rmtree(work)
        spark.stop()
    baseline = best["baseline_text_to_delta"]["seconds"]
    print(
        json.dumps(
            {
                "benchmark": "bronze",
                "machine": info,
                "lines": lines,
                "event_types": args.event_types,
                "files": len(manifest["files"]),
                "max_files_per_trigger": args.max_files_per_trigger,
                "rounds": args.rounds,
                "monitor": "attached",
                **best,
                "ratio_to_baseline": {
                    name: round(baseline / r["seconds"], 3) for name, r in best.items() if not name.startswith("bound_")
                },
                **(
                    {
                        f"ratio_with_spark_{sink}": round(
                            best[f"bound_baseline_spark_{sink}"]["seconds"]
                            / best[f"bound_bronze_columns_spark_{sink}"]["seconds"],
                            3,
                        )
                        for sink in SPARK_SINKS
                    }
                    if args.spark_sink_bounds
                    else {}
                ),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
