"""Bronze throughput against a plain-Spark baseline on the same files, in the same run.

Baseline: Spark's text source -> foreachBatch -> the same idempotent delta-rs writer, no
parsing, hashing, registry or quarantine. Bronze: the real bronze stream (classification,
schema-variation hash, registry, quarantine). Both drain the same landing files with
Trigger.AvailableNow and the same files per batch, after a warm-up of each on one file.

    python bench/bench_bronze.py --events 1000000 --event-types 300

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from bench_support import machine, timed

from pipeline.bronze_stream import BronzeBatchWriter, BronzeSettings, start_bronze
from pipeline.delta_connector.batch_writer import write_batch
from pipeline.delta_connector.connector import EmbeddedDelta
from pipeline.generator.run import generate
from pipeline.generator.settings import GeneratorSettings
from pipeline.lake_summary import summarize_lake
from pipeline.pipeline_events import Unmonitored
from pipeline.schema_registry import SchemaRegistry
from pipeline.spark_session import build_spark
from streamops.commit_metadata import BatchCommitInfo
from streamops.lake_layout import LakeLayout


def run_baseline(spark, landing: Path, work: Path, max_files: int) -> None:
    table = work / "baseline_table"

    def write(df, batch_id):
        write_batch(table, df.toArrow(), BatchCommitInfo("baseline", batch_id))

    query = (
        spark.readStream.format("text").option("maxFilesPerTrigger", str(max_files)).load(str(landing))
        .writeStream.foreachBatch(write).option("checkpointLocation", str(work / "baseline_ck"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination()


def run_bronze(spark, landing: Path, work: Path, max_files: int) -> LakeLayout:
    lake = LakeLayout.at(work / "lake")
    writer = BronzeBatchWriter(lake, EmbeddedDelta(), SchemaRegistry.load(lake.schema_registry), Unmonitored())
    query = start_bronze(spark, lake, BronzeSettings(landing, max_files_per_trigger=max_files, available_now=True), writer)
    query.awaitTermination()
    return lake


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--event-types", type=int, default=300)
    parser.add_argument("--max-files-per-trigger", type=int, default=20)
    args = parser.parse_args()
    info = machine()
    with tempfile.TemporaryDirectory(prefix="bench-bronze-") as scratch:
        root = Path(scratch)
        manifest = generate(GeneratorSettings(out=root / "landing", events=args.events, event_types=args.event_types))
        warmup = root / "warmup_landing"
        warmup.mkdir()
        shutil.copy(root / "landing" / manifest["files"][0]["name"], warmup)
        spark = build_spark()
        run_baseline(spark, warmup, root / "warmup_baseline", 1)
        run_bronze(spark, warmup, root / "warmup_bronze", 1)

        base_seconds, base_usage, _ = timed(run_baseline, spark, root / "landing", root / "baseline", args.max_files_per_trigger)
        bronze_seconds, bronze_usage, lake = timed(run_bronze, spark, root / "landing", root / "bronze", args.max_files_per_trigger)
        summary = summarize_lake(lake)
        spark.stop()
    lines = manifest["lines_total"]
    assert summary.bronze_rows + sum(summary.quarantine_by_reason.values()) == lines, "lines lost"
    baseline = {"seconds": round(base_seconds, 2), "lines_per_s": round(lines / base_seconds),
                "peak_rss_mb": round(base_usage.peak_rss_mb), "mean_cpu_percent": base_usage.mean_cpu_percent}
    bronze = {"seconds": round(bronze_seconds, 2), "events_per_s": round(lines / bronze_seconds),
              "peak_rss_mb": round(bronze_usage.peak_rss_mb), "mean_cpu_percent": bronze_usage.mean_cpu_percent,
              "bronze_rows": summary.bronze_rows, "quarantined": sum(summary.quarantine_by_reason.values()),
              "schema_variations": summary.variations}
    print(json.dumps({
        "benchmark": "bronze",
        "machine": info,
        "lines": lines,
        "event_types": args.event_types,
        "files": len(manifest["files"]),
        "max_files_per_trigger": args.max_files_per_trigger,
        "baseline_text_to_delta": baseline,
        "bronze": bronze,
        "ratio_to_baseline": round(base_seconds / bronze_seconds, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
