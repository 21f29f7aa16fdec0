"""Bronze against the job a user would write by hand with plain PySpark and delta-spark, and the
embedded connector against the native one, on the same landing files in the same run.

The hand-written job: `spark.readStream.text(landing)` -> Spark's JSON functions extracting the
fields bronze keeps (event type, event id, event time) plus the raw line and the source file
-> `writeStream.format("delta")` with `availableNow`, 20 files per batch. streamops:
`streamops run --stages bronze --until-idle --delta embedded|native`, 20 files per batch (it also
classifies every line strictly, hashes its schema variation, registers new variations and
quarantines what it cannot use). Each side runs in its own process and is timed from process
start to its last bronze commit (the commit file's time in the table's log); the variants
alternate for `--rounds` rounds into fresh lakes; the median run of each is reported (and the
best). All sides get delta-spark's JARs the same way (files resolved once, `spark.jars`), so no
resolution is timed.

    python bench/bench_bronze_delta_spark.py --events 1000000 --event-types 300 --rounds 3

Prints JSON: seconds, lines/s, the ratio of each streamops variant to the hand-written job (of
the medians, and of the best runs), the 1-minute load read before each run, and the CPU seconds
and peak memory (RSS and PSS sums) of each process tree by role.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
from pathlib import Path

from bench_support import machine, run_measured

from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.runtime.spark_jars import delta_spark_package, jar_settings

VARIANTS = ("plain_delta_spark", "streamops_embedded", "streamops_native")
FILES_PER_BATCH = 20

PLAIN_JOB = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession, functions as F

    landing, table, checkpoint, jars, files_per_batch = sys.argv[1:6]
    spark = (
        SparkSession.builder.master("local[*]").appName("plain-delta-spark-bronze")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lines = spark.readStream.option("maxFilesPerTrigger", files_per_batch).text(landing)
    bronze = lines.select(
        F.get_json_object("value", "$.event_type").alias("event_type"),
        F.get_json_object("value", "$.event_id").alias("event_id"),
        F.to_timestamp(F.get_json_object("value", "$.event_time")).alias("event_time"),
        F.col("value").alias("payload"),
        F.col("_metadata.file_path").alias("source_file"),
    )
    query = (
        bronze.writeStream.format("delta").option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start(table)
    )
    query.awaitTermination()
    spark.stop()
    """
)


def command(variant: str, landing: Path, work: Path, jars: str) -> tuple[list[str], Path]:
    """The process to start and the table whose last commit ends the measurement."""
    if variant == "plain_delta_spark":
        table = work / "plain_table"
        job = [sys.executable, "-c", PLAIN_JOB, str(landing), str(table), str(work / "plain_ck"), jars]
        return [*job, str(FILES_PER_BATCH)], table
    lake = work / "lake"
    delta = variant.rsplit("_", 1)[1]
    return [
        sys.executable, "-m", "streamops", "run", "--lake", str(lake), "--landing", str(landing),
        "--until-idle", "--stages", "bronze", "--delta", delta, "--max-files-per-trigger", str(FILES_PER_BATCH),
    ], lake / "bronze" / "events"  # fmt: skip


def last_commit_time(table: Path) -> float:
    commits = sorted((table / "_delta_log").glob("*.json"))
    return max(path.stat().st_mtime for path in commits)


def rows_in(table: Path) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(table)).count()


def run_variant(variant: str, landing: Path, work: Path, jars: str) -> dict:
    """Run one variant (`run_measured`); its seconds, rows, the CPU its whole process tree used
    and its peak memory by role."""
    argv, table = command(variant, landing, work, jars)
    load = round(os.getloadavg()[0], 2)
    measured = run_measured(argv)
    usage = measured.usage
    return {
        "seconds": round(last_commit_time(table) - measured.started, 2),
        "load_average_1m_at_start": load,
        "rows": rows_in(table),
        "cpu_seconds": measured.cpu_seconds,
        "peak_rss_mb": round(usage.peak_rss_mb),
        "peak_pss_mb": round(usage.peak_pss_mb),
        "peak_pss_mb_by_role": usage.peak_pss_mb_by_role,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--event-types", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    variants = args.variants.split(",")
    jars = jar_settings([delta_spark_package()])
    if "spark.jars" not in jars:
        raise SystemExit("resolve delta-spark's JARs once first (any `streamops run --delta native`)")
    with tempfile.TemporaryDirectory(prefix="streamops-bench-bronze-") as scratch:
        landing = Path(scratch) / "landing"
        manifest = generate(
            GeneratorSettings(out=landing, events=args.events, event_types=args.event_types, drift=0.1, bad=0.001)
        )
        runs: dict[str, list[dict]] = {variant: [] for variant in variants}
        for round_number in range(args.rounds):
            for variant in variants:
                work = Path(scratch) / f"{variant}-{round_number}"
                runs[variant].append(run_variant(variant, landing, work, jars["spark.jars"]))
                print(f"round {round_number + 1} {variant}: {runs[variant][-1]['seconds']} s", file=sys.stderr)
    lines = manifest["lines_total"]
    best = {variant: min(results, key=lambda r: r["seconds"]) for variant, results in runs.items()}
    median = {
        variant: sorted(results, key=lambda r: r["seconds"])[len(results) // 2] for variant, results in runs.items()
    }
    report = {
        "benchmark": "bronze_vs_delta_spark",
        "machine": machine(),
        "lines": lines,
        "files": len(manifest["files"]),
        "files_per_batch": FILES_PER_BATCH,
        "event_types": args.event_types,
        "best": {
            variant: {**result, "lines_per_s": round(lines / result["seconds"])} for variant, result in best.items()
        },
        "median": {
            variant: {**result, "lines_per_s": round(lines / result["seconds"])} for variant, result in median.items()
        },
        "all_seconds": {variant: [r["seconds"] for r in results] for variant, results in runs.items()},
        "load_average_1m_at_start": {
            variant: [r["load_average_1m_at_start"] for r in results] for variant, results in runs.items()
        },
    }
    if "plain_delta_spark" in best:
        for name, chosen in (("ratio_to_plain_delta_spark", median), ("best_ratio_to_plain_delta_spark", best)):
            baseline = chosen["plain_delta_spark"]["seconds"]
            report[name] = {variant: round(baseline / result["seconds"], 3) for variant, result in chosen.items()}
    print(json.dumps(report, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
