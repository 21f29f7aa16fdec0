"""Bronze throughput against a plain-Spark baseline on the same files, in the same run.

Baseline: Spark's text source -> foreachBatch -> the same executor-side Delta sink (Spark's
tasks write Parquet, the driver commits once with the txn), no parsing, hashing, registry or
quarantine. Bronze: the real bronze stream (classification,
schema-variation hash, registry, quarantine), with the JVM classifier (the default where a JDK
is installed) and with the Python one. All drain the same landing files with
Trigger.AvailableNow and the same files per batch, after a warm-up of each on a few files; the
variants alternate for `--rounds` rounds into fresh lakes and the best time of each is kept,
so a busy neighbour slows a round, not the comparison.

    python bench/bench_bronze.py --events 1000000 --event-types 300 --rounds 2

Prints JSON, with the CPU seconds each kind of process (driver Python, JVM, Python workers) used
in each variant.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from bench_support import cpu_seconds_by_role, machine, timed

from pipeline.bronze.bronze_stream import BronzeBatchWriter, BronzeSettings, start_bronze
from pipeline.delta_connector.connector import EmbeddedDelta
from pipeline.delta_connector.write_plan import ROUTE_COLUMN, TableTarget, WritePlan
from pipeline.generator.run import generate
from pipeline.generator.settings import GeneratorSettings
from pipeline.lake_summary import summarize_lake
from pipeline.pipeline_events import Unmonitored
from pipeline.registry.schema_registry import SchemaRegistry
from pipeline.spark_session import build_spark
from streamops.commit_metadata import BatchCommitInfo
from streamops.lake_layout import LakeLayout


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
        spark.readStream.format("text").option("maxFilesPerTrigger", str(max_files)).load(str(landing))
        .writeStream.foreachBatch(write).option("checkpointLocation", str(work / "baseline_ck"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination()


def run_bronze(spark, landing: Path, work: Path, max_files: int, classifier: str) -> LakeLayout:
    lake = LakeLayout.at(work / "lake")
    writer = BronzeBatchWriter(lake, EmbeddedDelta(), SchemaRegistry.load(lake.schema_registry), Unmonitored())
    settings = BronzeSettings(landing, max_files_per_trigger=max_files, available_now=True, classifier=classifier)
    query = start_bronze(spark, lake, settings, writer)
    query.awaitTermination()
    return lake


def summary_of(seconds: float, usage, cpu: dict[str, float], lines: int, lake: LakeLayout | None = None) -> dict:
    result = {"seconds": round(seconds, 2), "lines_per_s": round(lines / seconds),
              "peak_rss_mb": round(usage.peak_rss_mb), "mean_cpu_percent": usage.mean_cpu_percent,
              "cpu_seconds_by_process": {role: round(used, 2) for role, used in cpu.items()}}
    if lake is not None:
        lake_summary = summarize_lake(lake)
        assert lake_summary.bronze_rows + sum(lake_summary.quarantine_by_reason.values()) == lines, "lines lost"
        result.update(bronze_rows=lake_summary.bronze_rows, quarantined=sum(lake_summary.quarantine_by_reason.values()),
                      schema_variations=lake_summary.variations)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--event-types", type=int, default=300)
    parser.add_argument("--max-files-per-trigger", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    info = machine()
    variants = {
        "baseline_text_to_delta": lambda landing, work: run_baseline(spark, landing, work, args.max_files_per_trigger),
        "bronze_jvm_classifier": lambda landing, work: run_bronze(spark, landing, work, args.max_files_per_trigger, "jvm"),
        "bronze_python_classifier": lambda landing, work: run_bronze(spark, landing, work, args.max_files_per_trigger, "python"),
    }
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
    print(json.dumps({
        "benchmark": "bronze",
        "machine": info,
        "lines": lines,
        "event_types": args.event_types,
        "files": len(manifest["files"]),
        "max_files_per_trigger": args.max_files_per_trigger,
        "rounds": args.rounds,
        **best,
        "ratio_to_baseline": {name: round(baseline / r["seconds"], 3) for name, r in best.items()},
    }, indent=2))


if __name__ == "__main__":
    main()
