"""`streamops lake optimize`: compaction commits that change no data, so a streaming reader never
reads a row twice; a conflicting commit makes the compaction start again; a concurrent
compaction of the same files, which delta-rs does not detect, is reported as an error."""

from __future__ import annotations

import json

import pyarrow as pa
from checkpoint_worlds import append_versions
from deltalake import DeltaTable, write_deltalake
from waiting import wait_until

from streamops.checkpoint_tools.stream_readers import StreamReaders, find_readers
from streamops.checkpoint_tools.stream_safe_optimize import optimize_table
from streamops.cli import main
from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.read import read_delta
from streamops.core.storage.location import Location
from streamops.pipeline.delta_connector.batch_writer import write_batch
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.delta_connector.write_plan import TableTarget, WritePlan

NO_READERS = StreamReaders((), ())


class SlipsACommitIn(DeltaLog):
    """A DeltaLog whose first handle is followed by another writer's commit before it is used:
    the race of a concurrent writer, made deterministic."""

    def __init__(self, table, concurrent) -> None:
        super().__init__(table)
        self.concurrent = concurrent
        self.opened = 0

    def open_version(self, version=None):
        handle = super().open_version(version)
        self.opened += 1
        if self.opened == 1:
            self.concurrent()
        return handle


def small_table(path, files: int = 6):
    for i in range(files):
        write_deltalake(str(path), pa.table({"id": [i]}), mode="append")
    return Location.of(path)


def ids(path) -> list[int]:
    return sorted(read_delta(str(path)).column("id").to_pylist())


def test_a_conflicting_commit_makes_the_compaction_start_again(tmp_path):
    table = small_table(tmp_path / "t")
    log = SlipsACommitIn(table, lambda: DeltaTable(str(table)).delete("id = 2"))
    result = optimize_table(table, NO_READERS, dry_run=False, log=log)
    assert result.attempts == 2 and not result.duplicated
    assert (result.files_removed, result.files_added) == (5, 1)
    assert ids(table) == [0, 1, 3, 4, 5]
    commit = log.refresh().commit(result.version)
    assert commit.commit_info["operation"] == "OPTIMIZE"
    assert not commit.data_adds and not commit.data_removes  # dataChange=false everywhere


def test_a_concurrent_compaction_that_delta_rs_lets_through_is_reported(tmp_path, capsys):
    table = small_table(tmp_path / "t")
    log = SlipsACommitIn(table, lambda: DeltaTable(str(table)).optimize.compact())
    result = optimize_table(table, NO_READERS, dry_run=False, log=log)
    assert result.duplicated and result.raced_with == (result.version - 1,)
    assert ids(table) == sorted(list(range(6)) * 2), "the race this guards against: every row twice"


def test_cli_dry_run_counts_and_a_run_compacts(tmp_path, capsys):
    table = small_table(tmp_path / "t")
    code = main(["lake", "optimize", str(table), "--dry-run", "--json"])
    [planned] = json.loads(capsys.readouterr().out)["tables"]
    assert code == 0 and (planned["live_files"], planned["small_files"], planned["version"]) == (6, 6, None)
    assert DeltaTable(str(table)).version() == 5
    code = main(["lake", "optimize", str(table)])
    out = capsys.readouterr().out
    assert code == 0 and "6 -> 1" in out and DeltaTable(str(table)).version() == 6
    assert ids(table) == list(range(6))


def test_optimize_during_a_streaming_append_loses_and_repeats_nothing(spark, tmp_path):
    table, copy = tmp_path / "events", tmp_path / "copy"
    writer_ckpt, reader_ckpt = tmp_path / "ckpt_writer", tmp_path / "ckpt_reader"
    append_versions(table, 10_000_000, 1)  # the table exists before the reader starts
    sink = EmbeddedDelta()

    def write(df, batch_id):
        plan = WritePlan(
            BatchCommitInfo("writer", batch_id, None),
            {"t": TableTarget(str(table), columns={"id": "id", "name": "name"})},
            ("t",),
            "",
        )
        sink.write_routes(df.selectExpr("'t' AS _route", "value AS id", "CAST(value AS STRING) AS name"), plan)

    def copy_batch(df, batch_id):
        write_batch(copy, df.toArrow(), BatchCommitInfo("reader", batch_id, None))

    writer = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 40)
        .load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(writer_ckpt))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    reader = (
        spark.readStream.format("streamops_delta")
        .option("maxFilesPerTrigger", 3)
        .load(str(table))
        .writeStream.foreachBatch(copy_batch)
        .option("checkpointLocation", str(reader_ckpt))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    compactions = []
    try:
        for round_number in range(3):
            wait_until(
                lambda: DeltaLog(table).refresh().latest_version() >= 6 * (round_number + 1) + len(compactions),
                timeout=90,
                what="more streaming appends",
            )
            readers = find_readers(None, [Location.of(reader_ckpt)])
            result = optimize_table(Location.of(table), readers, dry_run=False)
            assert not result.duplicated and [r.stream for r in result.readers] == ["ckpt_reader"]
            compactions.append(result)
    finally:
        writer.stop()
        reader.stop()
    assert all(c.version is not None and c.files_removed > c.files_added for c in compactions)
    drained = (
        spark.readStream.format("streamops_delta")
        .load(str(table))
        .writeStream.foreachBatch(copy_batch)
        .option("checkpointLocation", str(reader_ckpt))
        .trigger(availableNow=True)
        .start()
    )
    drained.awaitTermination(120)
    written = ids(table)
    assert len(written) == len(set(written)), "no row appended twice"
    assert ids(copy) == written, "the reader read every row once: none lost, none re-read from a compaction"
