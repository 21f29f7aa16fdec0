"""What one silver group batch costs, by process, against one plain write of the same rows.

Under sustained load a silver batch is small (at 8,000 events/s over 300 types, a 5 s trigger
gives a group of 64 types about 125 rows per type) and its cost is per table, not per row:
a Parquet file in a Python worker, a Delta commit on the driver, expressions in the JVM. This
bench measures that cost where nothing else runs: bronze rows of each group, capped at
`--rows-per-type` per event type, written by the real SilverGroupWriter `--batches` times into
the same tables (new batch ids, so every commit is a real append; the first batch of each group
is a warm-up), and reports per batch the wall time and the CPU seconds of the driver's Python,
the JVM and the Python workers. The baseline writes the same rows in the same run through the
same executor-side sink into one table, with no parsing: one Spark job and one commit per batch.

The streamops side runs with the monitor attached as in `streamops run` (a StreamMonitor on the
lake, started before each group's writer and stopped after its batches; the writer reports each
commit to it through MonitorEvents), so its figures include what the monitor costs the batch in
the batch's own threads; the monitor's worker applies those reports asynchronously, as it does
in a run. The baseline runs with no monitor, as before.

    python bench/bench_silver_batch.py --events 200000 --rows-per-type 5 125 --batches 4

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from bench_support import cpu_seconds_by_role, machine, product_monitor

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.lake_layout import LakeLayout, silver_stream
from streamops.pipeline.bronze.bronze_stream import BronzeBatchWriter, BronzeSettings, start_bronze
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.delta_connector.write_plan import ROUTE_COLUMN, TableTarget, WritePlan
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.registry.schema_registry import SchemaRegistry
from streamops.pipeline.run.spark_session import build_spark
from streamops.pipeline.silver.silver_stream import SilverGroupWriter, SilverSettings


def bronze_lake(spark, root: Path, events: int, event_types: int) -> LakeLayout:
    generate(GeneratorSettings(out=root / "landing", events=events, event_types=event_types))
    lake = LakeLayout.at(root / "lake")
    settings = BronzeSettings(LandingInput(root / "landing", max_files_per_trigger=1000), available_now=True)
    with product_monitor(spark, lake) as events:
        writer = BronzeBatchWriter(lake, EmbeddedDelta(), SchemaRegistry.load(lake.schema_registry), events, settings)
        start_bronze(spark, lake, writer).awaitTermination()
    return lake


def capped(spark, lake: LakeLayout, rows_per_type: int):
    """Bronze's rows, at most `rows_per_type` of each event type, cached: every batch reads the same rows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rank = F.row_number().over(Window.partitionBy("event_type").orderBy("source_file", "event_id"))
    rows = spark.read.parquet(str(lake.bronze_events)).withColumn("_rank", rank).where(F.col("_rank") <= rows_per_type)
    return rows.drop("_rank").coalesce(1).cache()


def measured(write, batches: int) -> dict:
    """Mean wall seconds and CPU seconds by role of batches 1.. (batch 0 warms up)."""
    walls, cpus = [], []
    for batch_id in range(batches):
        before, started = cpu_seconds_by_role(), time.perf_counter()
        write(batch_id)
        wall, after = time.perf_counter() - started, cpu_seconds_by_role()
        if batch_id:
            walls.append(wall)
            cpus.append({role: after[role] - before[role] for role in after})
    cpu = {role: round(sum(c[role] for c in cpus) / len(cpus), 3) for role in cpus[0]}
    return {
        "seconds": round(sum(walls) / len(walls), 3),
        "cpu_seconds": cpu,
        "cpu_seconds_total": round(sum(cpu.values()), 3),
    }


def silver_batch(writer: SilverGroupWriter, bronze, batches: int) -> dict:
    schemas = writer.schemas()
    result = measured(lambda batch_id: writer.write(bronze, schemas, BatchCommitInfo(writer.stream, batch_id)), batches)
    return {"tables": len(schemas), **result}


def baseline_batch(root: Path, group: str, bronze, types: list[str], batches: int) -> dict:
    from pyspark.sql import functions as F

    rows = bronze.where(F.col("event_type").isin(types)).select(F.lit("rows").alias(ROUTE_COLUMN), "payload")

    def write(batch_id: int) -> None:
        plan = WritePlan(
            commit=BatchCommitInfo(f"baseline_{group}", batch_id),
            tables={"rows": TableTarget(str(root / f"baseline_{group}"), columns={"payload": "payload"})},
            commit_stages=(("rows",),),
            report_path="",
        )
        EmbeddedDelta().write_routes(rows, plan)

    return {"tables": 1, **measured(write, batches)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--event-types", type=int, default=300)
    parser.add_argument("--rows-per-type", type=int, nargs="+", default=[5, 125])
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()
    info = machine()
    spark = build_spark()
    sizes = []
    with tempfile.TemporaryDirectory(prefix="bench-silver-batch-") as scratch:
        root = Path(scratch)
        bronze_only = bronze_lake(spark, root, args.events, args.event_types)
        for cap in args.rows_per_type:
            lake = LakeLayout.at(shutil.copytree(str(bronze_only.root), root / f"lake_{cap}"))
            bronze = capped(spark, lake, cap)
            groups = []
            for group in _groups(lake):
                with product_monitor(spark, lake) as events:
                    events.stream_reads_table(silver_stream(group), lake.bronze_events)  # as the Supervisor does
                    writer = SilverGroupWriter(lake, EmbeddedDelta(), group, SilverSettings(), events)
                    silver = silver_batch(writer, bronze, args.batches)
                baseline = baseline_batch(root / f"cap{cap}", group, bronze, sorted(writer.schemas()), args.batches)
                groups.append({"group": group, "silver": silver, "baseline_one_table": baseline})
            bronze.unpersist()
            tables = sum(g["silver"]["tables"] for g in groups)
            extra = sum(g["silver"]["cpu_seconds_total"] - g["baseline_one_table"]["cpu_seconds_total"] for g in groups)
            sizes.append(
                {
                    "rows_per_type": cap,
                    "groups": groups,
                    "silver_cpu_ms_per_table_over_baseline": round(1000 * extra / tables, 1),
                }
            )
    spark.stop()
    print(
        json.dumps(
            {
                "benchmark": "silver_batch",
                "machine": info,
                "events": args.events,
                "event_types": args.event_types,
                "batches_measured": args.batches - 1,
                "monitor": "attached",
                "sizes": sizes,
            },
            indent=2,
        )
    )


def _groups(lake: LakeLayout) -> list[str]:
    from streamops.pipeline.registry.event_groups import EventGroupsReader, resolve_groups
    from streamops.pipeline.registry.schema_registry import RegistryReader

    _, registry = RegistryReader(lake.schema_registry).read()
    recorded = EventGroupsReader(lake.event_groups).read()
    return sorted(
        set(resolve_groups(recorded.by_type, registry.type_order(), SilverSettings().types_per_group).values())
    )


if __name__ == "__main__":
    main()
