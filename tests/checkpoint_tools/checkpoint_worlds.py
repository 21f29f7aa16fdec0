"""Real checkpoints made by real Spark queries, for checkpoint_tools tests.

- a Delta world: a lake whose bronze/events table (delta-rs appends) is read 1 file per trigger
  in stream `silver_core`, which writes two silver tables per batch with txn (like a silver
  group), on each connector: the streamops Delta source with delta-rs writes (`embedded`), or
  delta-spark's own `format("delta")` source and writer (`native`, Delta's own offsets);
- a file world: Spark's file source over a landing directory, stream `bronze`, compacting its
  file-source log every 4 batches and deleting the replaced files at once (cleanupDelay=0);
- a rate world: a stateful aggregation over the rate source (state store present).
Tests copy a world into their own tmp_path before injecting a fault.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.transaction import AddAction

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.delta_connector.batch_writer import write_batch

SILVER_STREAM = "silver_core"
BRONZE_STREAM = "bronze"
EVENT_SINKS = ("evt_even", "evt_odd")
FILE_COMPACT_INTERVAL = 4


SOURCE_FORMATS = {"embedded": "streamops_delta", "native": "delta"}


@dataclass(frozen=True)
class World:
    lake: LakeLayout
    stream: str
    checkpoint: Path
    source: Path | None
    sinks: tuple[Path, ...]
    query_id: str
    batches: int
    landing: Path | None = None
    connector: str = "embedded"

    def copy_to(self, target: Path) -> World:
        """An independent copy (lake and landing) under `target`."""
        lake_root = target / "lake"
        shutil.copytree(self.lake.root, lake_root, symlinks=True)
        lake = LakeLayout.at(lake_root)
        moved = lambda p: None if p is None else lake_root / p.relative_to(self.lake.root)
        return replace(
            self,
            lake=lake,
            checkpoint=moved(self.checkpoint),
            source=moved(self.source),
            sinks=tuple(moved(s) for s in self.sinks),
        )


SOURCE_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def append_version(table: Path, first_id: int, files: int = 1, rows: int = 5) -> int:
    """Commit one version of `files` parquet files with `rows` rows each; returns the next id.

    The files are written first and committed together (create_write_transaction), so one
    version holds several files, as in the seed talk's walk-through.
    """
    if not DeltaTable.is_deltatable(str(table)):
        DeltaTable.create(str(table), schema=SOURCE_SCHEMA)
    actions = []
    next_id = first_id
    now_ms = int(time.time() * 1000)
    for index in range(files):
        ids = list(range(next_id, next_id + rows))
        name = f"part-{uuid.uuid4()}.parquet"
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]}), table / name)
        actions.append(
            AddAction(name, (table / name).stat().st_size, {}, now_ms + index, True, json.dumps({"numRecords": rows}))
        )
        next_id += rows
    DeltaTable(str(table)).create_write_transaction(actions, "append", SOURCE_SCHEMA)
    return next_id


def append_versions(table: Path, first_id: int, versions: int, rows: int = 5) -> int:
    for _ in range(versions):
        first_id = append_version(table, first_id, 1, rows)
    return first_id


def delta_foreach_batch(stream: str, sinks: tuple[Path, ...], seen: list[int], query_ids: dict, connector: str):
    """A foreachBatch that splits rows over `sinks` by id parity, each write idempotent (txn)."""

    def run(df, batch_id: int) -> None:
        seen.append(batch_id)
        commit = BatchCommitInfo(stream=stream, batch_id=batch_id, query_id=query_ids.get("id"))
        if connector == "native":
            for parity, sink in enumerate(sinks):
                (
                    df.where(f"id % 2 = {parity}")
                    .write.format("delta")
                    .mode("append")
                    .option("txnAppId", stream)
                    .option("txnVersion", batch_id)
                    .option("userMetadata", commit.to_user_metadata())
                    .save(str(sink))
                )
            return
        table = df.toArrow()
        for parity, sink in enumerate(sinks):
            part = table.filter(pc.equal(pc.bit_wise_and(table["id"], 1), parity))
            write_batch(sink, part, commit)

    return run


def run_delta_stream(
    spark,
    source: Path,
    checkpoint: Path,
    sinks: tuple[Path, ...],
    stream: str,
    max_files: int = 1,
    connector: str = "embedded",
) -> tuple[list[int], str]:
    """Run the stream until the source is drained (availableNow); returns (batch ids run, query id)."""
    seen: list[int] = []
    query_ids: dict = {}
    metadata = checkpoint / "metadata"
    if metadata.exists():
        query_ids["id"] = json.loads(metadata.read_text())["id"]
    query = (
        spark.readStream.format(SOURCE_FORMATS[connector])
        .option("path", str(source))
        .option("maxFilesPerTrigger", str(max_files))
        .load()
        .writeStream.foreachBatch(delta_foreach_batch(stream, sinks, seen, query_ids, connector))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
    )
    handle = None
    try:
        handle = query.start()
        query_ids["id"] = str(handle.id)
        handle.awaitTermination(120)
    finally:
        if handle is not None and handle.isActive:
            handle.stop()
    return seen, str(handle.id)


def build_delta_world(spark, root: Path, connector: str = "embedded") -> World:
    """Versions 1 (3 files) and 2 (1 file) are read as the starting snapshot (4 batches), then
    versions 3 (2 files) and 4 (1 file) as commits (3 batches): 7 batches, 35 rows."""
    lake = LakeLayout.at(root / "lake")
    source = Path(lake.bronze_events)
    next_id = append_version(source, 0, files=3)
    next_id = append_version(source, next_id, files=1)
    sinks = tuple(Path(lake.silver(name)) for name in EVENT_SINKS)
    checkpoint = Path(lake.checkpoint(SILVER_STREAM))
    first, _ = run_delta_stream(spark, source, checkpoint, sinks, SILVER_STREAM, connector=connector)
    next_id = append_version(source, next_id, files=2)
    append_version(source, next_id, files=1)
    second, query_id = run_delta_stream(spark, source, checkpoint, sinks, SILVER_STREAM, connector=connector)
    return World(
        lake, SILVER_STREAM, checkpoint, source, sinks, query_id, len(first) + len(second), connector=connector
    )


def run_file_stream(
    spark, landing: Path, checkpoint: Path, sink: Path, stream: str
) -> tuple[list[tuple[int, list[str]]], str]:
    """File source over `landing`, one file per trigger, drained with availableNow."""
    seen: list[tuple[int, list[str]]] = []
    query_ids: dict = {}

    def run(df, batch_id: int) -> None:
        rows = df.selectExpr("id", "input_file_name() AS file").collect()
        seen.append((batch_id, sorted({r["file"] for r in rows})))
        data = pa.table({"id": pa.array([r["id"] for r in rows], pa.int64())})
        write_batch(sink, data, BatchCommitInfo(stream=stream, batch_id=batch_id, query_id=query_ids.get("id")))

    spark.conf.set("spark.sql.streaming.fileSource.log.compactInterval", str(FILE_COMPACT_INTERVAL))
    spark.conf.set("spark.sql.streaming.fileSource.log.cleanupDelay", "0")
    handle = None
    try:
        handle = (
            spark.readStream.schema("id long")
            .option("maxFilesPerTrigger", "1")
            .json(str(landing))
            .writeStream.foreachBatch(run)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query_ids["id"] = str(handle.id)
        handle.awaitTermination(120)
    finally:
        if handle is not None and handle.isActive:
            handle.stop()
        spark.conf.unset("spark.sql.streaming.fileSource.log.compactInterval")
        spark.conf.unset("spark.sql.streaming.fileSource.log.cleanupDelay")
    return seen, str(handle.id)


def write_landing(landing: Path, first: int, count: int) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        (landing / f"events-{i:03d}.json").write_text(json.dumps({"id": i}) + "\n")


def build_file_world(spark, root: Path, files: int = 10) -> World:
    lake = LakeLayout.at(root / "lake")
    landing = root / "landing"
    write_landing(landing, 0, files)
    checkpoint = Path(lake.checkpoint(BRONZE_STREAM))
    bronze = Path(lake.bronze_events)
    seen, query_id = run_file_stream(spark, landing, checkpoint, bronze, BRONZE_STREAM)
    return World(lake, BRONZE_STREAM, checkpoint, None, (bronze,), query_id, len(seen), landing)


def build_rate_world(spark, root: Path, runs: int = 3) -> World:
    """A stateful query (count by key over the rate source), run `runs` times with Trigger.Once.
    The rate source has rows only for whole seconds elapsed since its first batch: each run
    starts a second after the previous one, so each plans a batch."""
    lake = LakeLayout.at(root / "lake")
    checkpoint = Path(lake.checkpoint("rate_counts"))
    query_id = ""
    for run in range(runs):
        if run:
            time.sleep(1.1)
        handle = None
        try:
            handle = (
                spark.readStream.format("rate")
                .option("rowsPerSecond", "20")
                .load()
                .selectExpr("value % 3 AS key")
                .groupBy("key")
                .count()
                .writeStream.outputMode("complete")
                .format("noop")
                .option("checkpointLocation", str(checkpoint))
                .trigger(once=True)
                .start()
            )
            query_id = str(handle.id)
            handle.awaitTermination(120)
        finally:
            if handle is not None and handle.isActive:
                handle.stop()
    planned = len([p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()])
    return World(lake, "rate_counts", checkpoint, None, (), query_id, planned)


def sink_rows(sinks: tuple[Path, ...]) -> list[int]:
    ids: list[int] = []
    for sink in sinks:
        if DeltaTable.is_deltatable(str(sink)):
            ids.extend(read_delta(str(sink)).column("id").to_pylist())
    return sorted(ids)


def source_rows(source: Path) -> list[int]:
    return sorted(read_delta(str(source)).column("id").to_pylist())
