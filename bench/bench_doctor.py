"""`checkpoint doctor` over 300 checkpoints whose Delta tables have thousands of commits each,
timed beside Spark reading the same Delta history.

Setup (built once into --workdir, reused on later runs):
- a source table: --commits one-file appends through delta-rs, a Delta log checkpoint every 100;
- a sink table: --commits minus the stream's batches of an older appId (history), then the stream's
  own commits, each with its txn;
- a real checkpoint: a real Spark query (streamops Delta source, maxFilesPerTrigger=20, idempotent
  writer in foreachBatch) drains the source into the sink: commits/20 batches;
- --checkpoints copies of (checkpoint, source, sink): logs copied, data files hard-linked. Every
  10th checkpoint lags 5 batches (backlog; its sink is ahead), every 10th+1 lost its last commit.
- --stateful of those are stateful instead: copies of a real aggregation's checkpoint
  (--state-batches batches, --state-partitions partitions, HDFS-backed state with snapshots),
  state files hard-linked; every 10th lost the newest delta file of one partition (state_missing).

Measured in one process:
- doctor: `diagnose_many` on every target (what `streamops checkpoint doctor CKPT ...` runs), all
  objects fresh, twice with its default threads (the first pass pays the cold file cache), then
  on one thread; the subset compared with Spark runs on one thread;
- Spark baselines on --spark-checkpoints of them (default 10), extrapolated linearly to all:
  `spark_json_history`: one Spark job reading every commit JSON of those tables (spark.read.json
  of _delta_log/*.json, no Delta JARs needed), computing what the doctor derives from the logs:
  table id, latest and earliest version, the stream's sink txn, backlog files and bytes;
  `spark_checkpoint_tail`: per table, Spark reads the newest Delta log checkpoint (parquet) plus
  the commits after it, as delta-spark's snapshot does, computing the same.
The backlog both compute is compared for every lagging checkpoint (must agree).

    python bench/bench_doctor.py                          # 300 checkpoints (60 stateful), 2,000 commits
    python bench/bench_doctor.py --checkpoints 30 --commits 500 --workdir /tmp/bench-doctor-small
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from streamops.checkpoint_tools.doctor import DEFAULT_WORKERS, DoctorTarget, diagnose_many
from streamops.core.checkpoint_format.metadata_log import remove_log_file
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.delta_format.commit_metadata import BatchCommitInfo

STREAM = "bench_stream"
STATEFUL_STREAM = "bench_stateful"
FILES_PER_BATCH = 20
LOG_CHECKPOINT_INTERVAL = "100"


def build_template(root: Path, commits: int) -> None:
    from streamops.pipeline.delta_connector.batch_writer import write_batch
    from streamops.pipeline.run.spark_session import build_spark

    source, sink, checkpoint = root / "source", root / "sink", root / "ckpt" / STREAM
    config = {"delta.checkpointInterval": LOG_CHECKPOINT_INTERVAL}
    for version in range(commits):
        ids = pa.array(range(version * 10, version * 10 + 10), pa.int64())
        write_deltalake(
            str(source), pa.table({"id": ids}), mode="append", configuration=config if version == 0 else None
        )
    batches = commits // FILES_PER_BATCH
    for version in range(commits - batches):
        write_deltalake(
            str(sink),
            pa.table({"id": pa.array([version], pa.int64())}),
            mode="append",
            configuration=config if version == 0 else None,
            commit_properties=CommitProperties(app_transactions=[Transaction("backfill", version)]),
        )
    spark = build_spark(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"})

    def write(df, batch_id: int) -> None:
        write_batch(sink, df.toArrow(), BatchCommitInfo(STREAM, batch_id, str(query.id)))

    query = (
        spark.readStream.format("streamops_delta")
        .option("path", str(source))
        .option("startingVersion", "0")
        .option("maxFilesPerTrigger", str(FILES_PER_BATCH))
        .load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()
        spark.stop()


def build_stateful_template(root: Path, batches: int, partitions: int) -> None:
    """A real aggregation over a file source, one file per batch."""
    from streamops.pipeline.run.spark_session import build_spark

    landing = root / "landing"
    landing.mkdir(parents=True)
    for i in range(batches):
        (landing / f"part-{i:04d}.json").write_text("\n".join(json.dumps({"k": k, "v": i}) for k in range(50)) + "\n")
    spark = build_spark(master="local[2]", conf={"spark.sql.shuffle.partitions": str(partitions)})
    query = (
        spark.readStream.schema("k long, v long")
        .option("maxFilesPerTrigger", 1)
        .json(str(landing))
        .groupBy("k")
        .sum("v")
        .writeStream.outputMode("update")
        .format("noop")
        .option("checkpointLocation", str(root / "ckpt" / STATEFUL_STREAM))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()
        spark.stop()


def build_stateful_copies(workdir: Path, count: int) -> list[DoctorTarget]:
    template = workdir / "stateful_template" / "ckpt" / STATEFUL_STREAM
    targets = []
    for i in range(count):
        checkpoint = workdir / "stateful_copies" / f"s{i:03d}" / STATEFUL_STREAM
        targets.append(DoctorTarget(checkpoint, stream=STATEFUL_STREAM))
        if checkpoint.exists():
            continue
        shutil.copytree(template, checkpoint, copy_function=os.link)
        if i % 10 == 0:
            partition = checkpoint / "state" / "0" / "3"
            newest = max((p for p in partition.glob("*.delta")), key=lambda p: int(p.stem))
            newest.unlink()
    return targets


def copy_table(template: Path, target: Path) -> None:
    """The log is copied (every reader pays for its own files); data files are hard-linked."""
    shutil.copytree(template / "_delta_log", target / "_delta_log")
    for entry in os.scandir(template):
        if entry.name.endswith(".parquet"):
            os.link(entry.path, target / entry.name)


def build_copies(workdir: Path, count: int) -> list[DoctorTarget]:
    template = workdir / "template"
    targets = []
    for i in range(count):
        root = workdir / "copies" / f"t{i:03d}"
        target = DoctorTarget(root / "ckpt" / STREAM, root / "source", (root / "sink",), STREAM)
        targets.append(target)
        if root.exists():
            continue
        copy_table(template / "source", root / "source")
        copy_table(template / "sink", root / "sink")
        shutil.copytree(template / "ckpt", root / "ckpt")
        latest = read_checkpoint(target.checkpoint).latest_planned
        if i % 10 == 0:
            for batch in range(latest - 4, latest + 1):
                remove_log_file(target.checkpoint / "offsets" / str(batch))
                remove_log_file(target.checkpoint / "commits" / str(batch))
        elif i % 10 == 1:
            remove_log_file(target.checkpoint / "commits" / str(latest))
    return targets


def run_doctor(targets: list[DoctorTarget], workers: int = DEFAULT_WORKERS) -> tuple[float, list]:
    started = time.perf_counter()
    diagnoses = diagnose_many(targets, workers=workers)
    return time.perf_counter() - started, diagnoses


def processed_version(target: DoctorTarget) -> int:
    """Versions after this one are unprocessed (the committed end offset, as the doctor reads it)."""
    ckpt = read_checkpoint(target.checkpoint, last_batches=1)
    end = ckpt.offsets[ckpt.latest_committed].sources[0].delta
    return end.reservoir_version - (1 if end.index == -1 else 0)


def spark_json_history(spark, targets: list[DoctorTarget]) -> tuple[float, dict]:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    tables = [t.source_table for t in targets] + [t.sink_tables[0] for t in targets]
    actions = (
        spark.read.schema(_LOG_SCHEMA)
        .json([f"{t}/_delta_log/*.json" for t in tables])
        .withColumn("file", F.input_file_name())
        .withColumn("table", F.regexp_extract("file", r"^(.*)/_delta_log/", 1))
        .withColumn("version", F.regexp_extract("file", r"(\d+)\.json$", 1).cast("long"))
        .cache()
    )
    positions = spark.createDataFrame(
        [(f"file://{t.source_table}", processed_version(t)) for t in targets], "table string, processed long"
    )
    per_table = actions.groupBy("table").agg(
        F.max("version").alias("latest"),
        F.min("version").alias("earliest"),
        F.max("metaData.id").alias("table_id"),
        F.max(F.when(F.col("txn.appId") == STREAM, F.col("txn.version"))).alias("txn"),
    )
    backlog = (
        actions.join(positions, "table")
        .where(F.col("add").isNotNull() & (F.col("version") > F.col("processed")))
        .groupBy("table")
        .agg(F.count("*").alias("files"), F.sum("add.size").alias("bytes"))
    )
    result = {r["table"]: r.asDict() for r in per_table.collect()}
    for row in backlog.collect():
        result[row["table"]].update(files=row["files"], bytes=row["bytes"])
    actions.unpersist()
    return time.perf_counter() - started, result


def spark_checkpoint_tail(spark, targets: list[DoctorTarget]) -> tuple[float, dict]:
    """Per table, as delta-spark does: the snapshot from the newest log checkpoint (parquet) plus
    the commits after it, and for the source the commits after the stream's position (getChanges)."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    result = {}
    for target in targets:
        processed = processed_version(target)
        for table, changes_after in ((target.source_table, processed), (target.sink_tables[0], None)):
            log = table / "_delta_log"
            checkpoint_version = json.loads((log / "_last_checkpoint").read_text())["version"]
            facts = (
                spark.read.parquet(str(log / f"{checkpoint_version:020d}.checkpoint.parquet"))
                .agg(
                    F.max("metaData.id").alias("table_id"),
                    F.max(F.when(F.col("txn.appId") == STREAM, F.col("txn.version"))).alias("txn"),
                )
                .first()
            )
            first = checkpoint_version if changes_after is None else min(checkpoint_version, changes_after)
            tail = sorted(p for p in log.glob("*.json") if int(p.name[:20]) > first)
            txn, files, size = facts["txn"], 0, 0
            if tail:
                pending = F.col("version") > (changes_after if changes_after is not None else -1)
                row = (
                    spark.read.schema(_LOG_SCHEMA)
                    .json([str(p) for p in tail])
                    .withColumn("version", F.regexp_extract(F.input_file_name(), r"(\d+)\.json$", 1).cast("long"))
                    .agg(
                        F.max(F.when(F.col("txn.appId") == STREAM, F.col("txn.version"))).alias("txn"),
                        F.count(F.when(pending, F.col("add.path"))).alias("files"),
                        F.sum(F.when(pending, F.col("add.size"))).alias("bytes"),
                    )
                    .first()
                )
                txn = row["txn"] if row["txn"] is not None else txn
                files, size = row["files"], row["bytes"] or 0
            result[str(table)] = {"table_id": facts["table_id"], "txn": txn, "files": files, "bytes": size}
    return time.perf_counter() - started, result


_LOG_SCHEMA = (
    "add struct<path:string,size:long,dataChange:boolean>, txn struct<appId:string,version:long>, "
    "metaData struct<id:string>, commitInfo struct<timestamp:long>"
)


def backlog_of(diagnosis) -> tuple[int, int] | None:
    for finding in diagnosis.findings:
        if finding.code == "backlog":
            return finding.evidence["files"], finding.evidence["bytes"]
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", type=int, default=300)
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--spark-checkpoints", type=int, default=10)
    parser.add_argument("--stateful", type=int, default=60, help="how many of --checkpoints are stateful")
    parser.add_argument("--state-batches", type=int, default=30)
    parser.add_argument("--state-partitions", type=int, default=20)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bench-doctor"))
    args = parser.parse_args()
    template = args.workdir / "template"
    started = time.perf_counter()
    if not (template / "ckpt").exists():
        shutil.rmtree(template, ignore_errors=True)
        print(f"building the template ({args.commits} commits per table) ...", file=sys.stderr)
        build_template(template, args.commits)
    stateful_template = args.workdir / "stateful_template"
    if not (stateful_template / "ckpt").exists():
        shutil.rmtree(stateful_template, ignore_errors=True)
        print("building the stateful template ...", file=sys.stderr)
        build_stateful_template(stateful_template, args.state_batches, args.state_partitions)
    targets = build_copies(args.workdir, args.checkpoints - args.stateful)
    stateful = build_stateful_copies(args.workdir, args.stateful)
    targets += stateful
    setup_seconds = time.perf_counter() - started

    first_seconds, diagnoses = run_doctor(targets)
    second_seconds, _ = run_doctor(targets)
    serial_seconds, _ = run_doctor(targets, workers=1)
    subset = targets[: args.spark_checkpoints]
    subset_seconds, subset_diagnoses = run_doctor(subset, workers=1)

    from streamops.pipeline.run.spark_session import build_spark

    spark = build_spark(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"})
    json_seconds, json_facts = spark_json_history(spark, subset)
    tail_seconds, tail_facts = spark_checkpoint_tail(spark, subset)
    spark.stop()

    agree = 0
    for target, diagnosis in zip(subset, subset_diagnoses):
        ours = backlog_of(diagnosis)
        if ours is None:
            continue
        by_json = json_facts[f"file://{target.source_table}"]
        by_tail = tail_facts[str(target.source_table)]
        assert ours == (by_json["files"], by_json["bytes"]) == (by_tail["files"], by_tail["bytes"]), (
            target,
            ours,
            by_json,
            by_tail,
        )
        agree += 1
    scale = len(targets) / len(subset)
    counts: dict[str, int] = {}
    for diagnosis in diagnoses:
        for finding in diagnosis.findings:
            counts[f"{finding.code}:{finding.severity}"] = counts.get(f"{finding.code}:{finding.severity}", 0) + 1
    log = template / "source" / "_delta_log"
    print(
        json.dumps(
            {
                "benchmark": "checkpoint_doctor",
                "checkpoints": len(targets),
                "commits_per_source_table": len(list(log.glob("*.json"))),
                "commits_per_sink_table": len(list((template / "sink" / "_delta_log").glob("*.json"))),
                "delta_log_checkpoints_per_table": len(list(log.glob("*.checkpoint.parquet"))),
                "batches_per_checkpoint": read_checkpoint(template / "ckpt" / STREAM).latest_planned + 1,
                "stateful_checkpoints": len(stateful),
                "state_files_per_stateful_checkpoint": sum(
                    1
                    for p in (stateful_template / "ckpt" / STATEFUL_STREAM / "state").rglob("*")
                    if p.suffix in (".delta", ".snapshot")
                ),
                "stateful_with_state_missing": sum(
                    1
                    for d in diagnoses[len(targets) - len(stateful) :]
                    if any(f.code == "state_missing" for f in d.findings)
                ),
                "setup_seconds": round(setup_seconds, 1),
                "doctor_seconds_first_pass": round(first_seconds, 2),
                "doctor_seconds_second_pass": round(second_seconds, 2),
                "doctor_workers": DEFAULT_WORKERS,
                "doctor_seconds_one_thread": round(serial_seconds, 2),
                "doctor_ms_per_checkpoint_one_thread": round(1000 * serial_seconds / len(targets), 1),
                "load_average_1m_at_end": round(os.getloadavg()[0], 2),
                "findings": dict(sorted(counts.items())),
                "subset_checkpoints": len(subset),
                "doctor_seconds_subset_one_thread": round(subset_seconds, 2),
                "spark_json_history_seconds_subset": round(json_seconds, 2),
                "spark_checkpoint_tail_seconds_subset": round(tail_seconds, 2),
                "spark_json_history_seconds_extrapolated": round(json_seconds * scale, 1),
                "spark_checkpoint_tail_seconds_extrapolated": round(tail_seconds * scale, 1),
                "speedup_vs_spark_json_history": round(json_seconds / subset_seconds, 1),
                "speedup_vs_spark_checkpoint_tail": round(tail_seconds / subset_seconds, 1),
                "backlogs_cross_checked_with_spark": agree,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
