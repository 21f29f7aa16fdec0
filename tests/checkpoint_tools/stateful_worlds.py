"""Checkpoints of real stateful Spark queries, one per kind of state, for the state tests.

Every query reads JSON files from a landing directory one file per trigger (so batch N reads
file N) and runs with `availableNow`, so a checkpoint holds exactly one batch per file. Confs a
query needs (offset log v2, RocksDB, changelog checkpointing, state checkpoint format v2) are
set only while it starts and runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
OFFSET_LOG_V2 = {"spark.sql.streaming.offsetLog.formatVersion": "2"}
ROCKSDB_ONLY = {"spark.sql.streaming.stateStore.providerClass": ROCKSDB}
ROCKSDB_CHANGELOG_V2 = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
}
SCHEMA = "k long, v long, ts timestamp"


def write_landing(landing: Path, first: int, count: int) -> None:
    """File i holds keys 0..2 with value i, timestamped i minutes after midnight."""
    landing.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        rows = [{"k": k, "v": i, "ts": f"2026-01-01T00:{i:02d}:00"} for k in range(3)]
        (landing / f"part-{i:04d}.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


@contextmanager
def confs(spark: SparkSession, values: Mapping[str, str]) -> Iterator[None]:
    before = {key: spark.conf.get(key, None) for key in values}
    for key, value in values.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def landing_stream(spark: SparkSession, landing: Path) -> DataFrame:
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(landing))


def aggregation(spark: SparkSession, landing: Path) -> DataFrame:
    return landing_stream(spark, landing).groupBy("k").agg(F.sum("v").alias("total"), F.count("*").alias("n"))


def deduplication(spark: SparkSession, landing: Path) -> DataFrame:
    return landing_stream(spark, landing).withWatermark("ts", "1 hour").dropDuplicates(["k", "ts"])


def stream_join(spark: SparkSession, landing: Path) -> DataFrame:
    left = landing_stream(spark, landing).withWatermark("ts", "1 hour").alias("l")
    right = landing_stream(spark, landing).withWatermark("ts", "1 hour").alias("r")
    return left.join(
        right,
        F.expr("l.k = r.k AND r.ts BETWEEN l.ts AND l.ts + INTERVAL 1 MINUTE"),
    ).select(F.col("l.k"), F.col("l.v"), F.col("r.v").alias("rv"))


def grouped_state(spark: SparkSession, landing: Path) -> DataFrame:
    """applyInPandasWithState: PySpark's flatMapGroupsWithState."""

    def count(key, frames, state):
        import pandas as pd

        seen = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
        state.update((seen,))
        yield pd.DataFrame({"k": [key[0]], "seen": [seen]})

    return (
        landing_stream(spark, landing)
        .groupBy("k")
        .applyInPandasWithState(count, "k long, seen long", "seen long", "Update", "NoTimeout")
    )


def transform_with_state(spark: SparkSession, landing: Path) -> DataFrame:
    """transformWithStateInPandas (RocksDB only): operator metadata v2 and `_stateSchema/`."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
    from pyspark.sql.types import LongType, StructField, StructType

    class Counter(StatefulProcessor):
        def init(self, handle: StatefulProcessorHandle) -> None:
            self.count = handle.getValueState("count", StructType([StructField("n", LongType())]))

        def handleInputRows(self, key, rows, timerValues):
            import pandas as pd

            n = (self.count.get()[0] if self.count.exists() else 0) + sum(len(r) for r in rows)
            self.count.update((n,))
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

        def close(self) -> None:
            self.count = None

    return (
        landing_stream(spark, landing)
        .groupBy("k")
        .transformWithStateInPandas(Counter(), outputStructType="k long, n long", outputMode="Update", timeMode="None")
    )


def run_available(
    spark: SparkSession,
    query: Callable[[SparkSession, Path], DataFrame],
    landing: Path,
    checkpoint: Path,
    name: str,
    mode: str = "update",
    conf: Mapping[str, str] | None = None,
) -> list:
    """Run `query` until the landing is drained; returns the memory sink's final rows."""
    with confs(spark, conf or {}):
        handle = (
            query(spark, landing)
            .writeStream.outputMode(mode)
            .format("memory")
            .queryName(name)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        try:
            handle.awaitTermination(180)
        finally:
            if handle.isActive:
                handle.stop()
    if handle.exception() is not None:
        raise AssertionError(f"query {name} failed: {handle.exception()}")
    return spark.table(name).collect()
