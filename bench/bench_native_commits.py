"""The cost of a batch that appends to many tables on delta-spark, by commit path.

A silver group's batch writes each of its event types' tables. Measured on one delta-spark
session, the sides alternating round after round, each round `--batches` batches of
`--tables` tables with `--rows` rows per table:

- `writer`: one `df.write.format("delta")` append per table, with `txnAppId`/`txnVersion`
  (the job users write by hand, and what `--delta native` did before): a Spark job, a snapshot
  and a commit per table.
- `transactions`: the native connector as `streamops run --delta native` runs it
  (`NativeDelta.write_routes`): every table's files from one Spark job, then one delta-spark
  `OptimisticTransaction` commit per table with the batch's txn, read from the snapshot's
  checksum, its delta-spark calls made by the JVM helper (delta_connector/jvm_commits.py).
- `transactions_py4j`: the same commits with each delta-spark call made over py4j, as on a
  machine without a JDK compiler.
  Its tables are created as the connector creates them: a checkpoint every 10 commits, written
  by delta-rs outside Spark (pipeline/delta_connector/native_checkpoints.py).
- `transactions_spark_checkpoints`: the same commits on tables with delta-spark's default
  interval of 10, so delta-spark writes each checkpoint inside the commit, with Spark jobs.
- `transactions_txn_from_state` (with `--txn-from-state`): the py4j commits, the txn
  asked of `OptimisticTransaction.txnVersion`, which reconstructs the table's state in a Spark
  job.

Every side's tables take a checkpoint every 10 commits, and those batches are part of the
figures. The session writes Delta logs and checkpoint files on the local disk as
`streamops run` does, through java.nio (bronze/jvm/LocalFileLogStore.java,
LocalFileCheckpointManager.java.in); with `--hadoop-writers` through Hadoop's local file
system, as delta-spark does by default (a session setting, so a process of its own: alternate
processes to compare). Prints one JSON document: per side
the median seconds per batch and milliseconds per table over the rounds, and the 1-minute load
average read before each run.

    python bench/bench_native_commits.py --tables 20 --batches 10 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_support import machine

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.lake_layout import TABLE_CONFIGURATION
from streamops.pipeline.bronze.jvm_classifier import (
    CHECKPOINT_MANAGER_SETTING,
    LOG_STORE_SETTING,
    checkpointing_package,
)
from streamops.pipeline.delta_connector.connector import NativeDelta, session_needs
from streamops.pipeline.delta_connector.native_checkpoints import NATIVE_TABLE_CONFIGURATION
from streamops.pipeline.delta_connector.native_commit import (
    NativeCommits,
    Py4jCommits,
    Py4jTransaction,
    create_native_table,
)
from streamops.pipeline.delta_connector.write_plan import TableTarget, WritePlan
from streamops.pipeline.run.spark_session import build_spark

STREAM = "bench"
SIDES = ("writer", "transactions", "transactions_py4j", "transactions_spark_checkpoints")
HADOOP_LOG_STORE = "io.delta.storage.HDFSLogStore"
"""delta-spark's default LogStore for `file:` paths."""


def hadoop_checkpoint_manager() -> str:
    """Spark's default checkpoint file manager on a local disk, in this PySpark's package."""
    return f"{checkpointing_package()}.FileContextBasedCheckpointFileManager"


class TxnFromStateTransaction(Py4jTransaction):
    def _txn_version(self, stream: str) -> int:
        return int(self.txn.txnVersion(stream))


class TxnFromStateCommits(Py4jCommits):
    def start(self, session, table: str) -> Py4jTransaction:
        started = super().start(session, table)
        return TxnFromStateTransaction(started.session, started.txn)


class TxnFromState(NativeCommits):
    """The native committer over py4j, asking delta-spark's state reconstruction for the txn."""

    def _transactions(self) -> Py4jCommits:
        return TxnFromStateCommits(self.spark)


COMMITTERS = {
    "transactions": NativeCommits,
    "transactions_spark_checkpoints": NativeCommits,
    "transactions_py4j": lambda spark: NativeCommits(spark, jvm_helper=False),
    "transactions_txn_from_state": TxnFromState,
}


def make_tables(spark, root: Path, tables: int, configuration: dict[str, str]) -> list[str]:
    from pyspark.sql.types import StructType

    shutil.rmtree(root, ignore_errors=True)
    paths = [str(root / f"t{n:03d}") for n in range(tables)]
    for path in paths:
        create_native_table(spark, path, StructType.fromDDL("id long, name string"), configuration)
    return paths


def run_writer(spark, paths: list[str], batches: int, rows: int) -> float:
    frame = spark.range(rows).selectExpr("id", "cast(id as string) as name")
    started = time.perf_counter()
    for batch in range(batches):
        for path in paths:
            (
                frame.write.format("delta")
                .mode("append")
                .option("txnAppId", STREAM)
                .option("txnVersion", batch)
                .save(path)
            )
    return time.perf_counter() - started


def run_transactions(spark, paths: list[str], batches: int, rows: int, commits: NativeCommits) -> float:
    from pyspark.sql import functions as F

    native = NativeDelta(spark)
    object.__setattr__(native, "commits", commits)
    routes = [f"t{n:03d}" for n in range(len(paths))]
    frame = spark.range(rows * len(paths)).select(
        F.concat(F.lit("t"), F.lpad((F.col("id") % len(paths)).cast("string"), 3, "0")).alias("_route"),
        "id",
        F.col("id").cast("string").alias("name"),
    )
    tables = {route: TableTarget(path, columns={"id": "id", "name": "name"}) for route, path in zip(routes, paths)}
    started = time.perf_counter()
    for batch in range(batches):
        native.write_routes(frame, WritePlan(BatchCommitInfo(STREAM, batch), tables, (tuple(routes),), ""))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--rows", type=int, default=100, help="rows per table and batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--txn-from-state", action="store_true", help="also measure the txn read through txnVersion")
    parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated, of: " + ", ".join(SIDES))
    parser.add_argument(
        "--hadoop-writers", action="store_true", help="write logs and checkpoint files through Hadoop, not java.nio"
    )
    args = parser.parse_args()

    conf, packages = session_needs("native")
    if args.hadoop_writers:
        conf = {**conf, LOG_STORE_SETTING: HADOOP_LOG_STORE, CHECKPOINT_MANAGER_SETTING: hadoop_checkpoint_manager()}
    spark = build_spark(conf=conf, packages=packages)
    sides = [side for side in SIDES if side in args.sides.split(",")]
    sides += ["transactions_txn_from_state"] if args.txn_from_state else []
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="bench-native-commits-") as scratch:
        for round_number in range(args.rounds):
            order = sides if round_number % 2 == 0 else list(reversed(sides))
            for side in order:
                root = Path(scratch) / side
                spark_checkpoints = side in ("writer", "transactions_spark_checkpoints")
                configuration = TABLE_CONFIGURATION if spark_checkpoints else NATIVE_TABLE_CONFIGURATION
                paths = make_tables(spark, root, args.tables, configuration)
                load = round(os.getloadavg()[0], 2)
                if side == "writer":
                    seconds = run_writer(spark, paths, args.batches, args.rows)
                else:
                    seconds = run_transactions(spark, paths, args.batches, args.rows, COMMITTERS[side](spark))
                runs[side].append({"seconds": round(seconds, 2), "load_average_1m_before": load})
    result: dict[str, Any] = {
        "benchmark": "native_commits",
        "machine": machine(),
        "tables": args.tables,
        "batches": args.batches,
        "rows_per_table": args.rows,
        "rounds": args.rounds,
        "log_writers": "hadoop" if args.hadoop_writers else "java.nio",
        "sides": {},
    }
    for side, measured in runs.items():
        median = statistics.median(run["seconds"] for run in measured)
        result["sides"][side] = {
            "runs": measured,
            "median_seconds_per_batch": round(median / args.batches, 3),
            "median_ms_per_table": round(median / args.batches / args.tables * 1000, 1),
        }
    if "writer" in sides:
        writer = result["sides"]["writer"]["median_seconds_per_batch"]
        for side in sides[1:]:
            result["sides"][side]["speedup_over_writer"] = round(
                writer / result["sides"][side]["median_seconds_per_batch"], 2
            )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
