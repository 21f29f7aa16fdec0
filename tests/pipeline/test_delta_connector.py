"""The embedded Delta connector on real Spark and real Delta tables."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_streams import drain_batches
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import PostCommitHookProperties
from pyspark.errors import StreamingQueryException
from waiting import wait_until

from streamops.core.delta_format import commit_metadata
from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import TABLE_CONFIGURATION
from streamops.pipeline.delta_connector.batch_commit import _post_commit_hooks, commit_files
from streamops.pipeline.delta_connector.batch_writer import write_batch
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.delta_connector.data_files import DataFileBuilder
from streamops.pipeline.delta_connector.write_plan import FirstRows, TableTarget, WritePlan
from streamops.pipeline.runtime.spark_threads import active_session


def add_version(table: Path, start: int, files: int, rows_per_file: int = 3) -> None:
    """One commit holding `files` data files (one per partition value)."""
    ids = list(range(start, start + files * rows_per_file))
    write_deltalake(
        str(table),
        pa.table({"id": ids, "part": [str((i - start) // rows_per_file) for i in ids]}),
        mode="append",
        partition_by=["part"],
    )


def run_stream(spark, table: Path, checkpoint: Path, **options) -> list[tuple[int, list[int], dict]]:
    """Drain the table with Trigger.AvailableNow; returns (batch id, ids, end offset) per batch."""
    batches: list[tuple[int, list[int]]] = []

    def collect(df, batch_id):
        batches.append((batch_id, sorted(r.id for r in df.select("id").collect())))

    drain_batches(spark, table, checkpoint, collect, **options)
    ends = {
        int(name): json.loads(Path(checkpoint, "offsets", name).read_text().split("\n")[2])
        for name in os.listdir(Path(checkpoint, "offsets"))
        if name.isdigit()
    }
    return [(batch_id, ids, ends[batch_id]) for batch_id, ids in batches]


def test_seed_talk_walkthrough_max_files_five(spark, tmp_path):
    """8 files in version 0, maxFilesPerTrigger 5: batch 0 reads files 0-4, batch 1 files 5-7."""
    table = tmp_path / "keyval"
    add_version(table, 0, files=8)
    batches = run_stream(spark, table, tmp_path / "ck", maxFilesPerTrigger=5)
    assert [len(ids) for _, ids, _ in batches] == [15, 9]
    first, second = batches[0][2], batches[1][2]
    assert first == {
        "sourceVersion": 1,
        "reservoirId": DeltaTable(str(table)).metadata().id,
        "reservoirVersion": 0,
        "index": 4,
        "isStartingVersion": True,
    }
    assert (second["reservoirVersion"], second["index"], second["isStartingVersion"]) == (0, 7, True)
    assert sorted(i for _, ids, _ in batches for i in ids) == list(range(24))

    add_version(table, 24, files=8)
    more = run_stream(spark, table, tmp_path / "ck", maxFilesPerTrigger=5)
    assert [len(ids) for _, ids, _ in more] == [15, 9]
    assert (more[0][2]["reservoirVersion"], more[0][2]["index"], more[0][2]["isStartingVersion"]) == (1, 4, False)
    assert (more[1][2]["reservoirVersion"], more[1][2]["index"]) == (2, -1), "caught up: next version, index -1"
    assert sorted(i for _, ids, _ in more for i in ids) == list(range(24, 48))


def ids_of_add_action(table: Path, version: int, index: int) -> list[int]:
    """Oracle independent of the source: the ids in the index-th data-change add of a commit."""
    actions = [json.loads(line) for line in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]
    adds = [a["add"] for a in actions if "add" in a and a["add"].get("dataChange", True)]
    return sorted(pq.read_table(table / unquote(adds[index]["path"])).column("id").to_pylist())


def test_each_batch_reads_exactly_the_rows_of_the_add_actions_it_covers(spark, tmp_path):
    table = tmp_path / "t"
    add_version(table, 0, files=1)
    write_deltalake(str(table), pa.table({"id": [100], "part": ["x"]}), mode="append")
    add_version(table, 200, files=2)
    batches = run_stream(spark, table, tmp_path / "ck", startingVersion=0, maxFilesPerTrigger=1)
    by_version = [(end["reservoirVersion"], end["index"]) for _, _, end in batches]
    assert by_version == [(0, 0), (1, 0), (2, 0), (3, -1)]
    expected = [
        ids_of_add_action(table, 0, 0),
        ids_of_add_action(table, 1, 0),
        ids_of_add_action(table, 2, 0),
        ids_of_add_action(table, 2, 1),
    ]
    assert [ids for _, ids, _ in batches] == expected
    assert sorted(i for ids in expected for i in ids) == [0, 1, 2, 100, 200, 201, 202, 203, 204, 205]


def test_max_bytes_per_trigger_admits_at_least_one_file(spark, tmp_path):
    table = tmp_path / "t"
    add_version(table, 0, files=3)
    batches = run_stream(spark, table, tmp_path / "ck", maxBytesPerTrigger=1)
    assert [len(ids) for _, ids, _ in batches] == [3, 3, 3]


def test_starting_version_latest_reads_only_new_commits(spark, tmp_path):
    table = tmp_path / "t"
    add_version(table, 0, files=1)
    first_run = run_stream(spark, table, tmp_path / "ck", startingVersion="latest")
    assert [ids for _, ids, _ in first_run] in ([], [[]]), "a fresh checkpoint may plan one empty batch"
    add_version(table, 10, files=1)
    batches = run_stream(spark, table, tmp_path / "ck", startingVersion="latest")
    assert [ids for _, ids, _ in batches] == [[10, 11, 12]]


def test_schema_evolution_in_source_fills_missing_columns(spark, tmp_path):
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"id": [1]}), mode="append")
    when = pa.array([datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)], pa.timestamp("us", tz="UTC"))
    write_deltalake(str(table), pa.table({"id": [2], "extra": ["x"], "at": when}), mode="append", schema_mode="merge")
    rows = []
    query = (
        spark.readStream.format("streamops_delta")
        .option("path", str(table))
        .load()
        .writeStream.foreachBatch(lambda df, _: rows.extend(df.collect()))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(60)
    assert sorted((r.id, r.extra) for r in rows) == [(1, None), (2, "x")]
    assert [r.at.astimezone(timezone.utc) for r in rows if r.id == 2] == [
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    ]


def test_missing_table_is_a_clear_error(spark, tmp_path):
    with pytest.raises(Exception, match="no Delta table at"):
        spark.readStream.format("streamops_delta").option("path", str(tmp_path / "nope")).load()


def test_replaced_table_fails_the_stream_with_the_reason(spark, tmp_path):
    table = tmp_path / "t"
    add_version(table, 0, files=1)
    run_stream(spark, table, tmp_path / "ck")
    for entry in table.iterdir():
        if entry.is_dir():
            for f in entry.iterdir():
                f.unlink()
            entry.rmdir()
        else:
            entry.unlink()
    add_version(table, 50, files=1)
    with pytest.raises(StreamingQueryException, match="was replaced"):
        run_stream(spark, table, tmp_path / "ck")


def test_version_removed_by_log_cleanup_fails_with_the_fix(spark, tmp_path):
    """The stream stopped after version 0; log cleanup then removed versions it still needs."""
    table = tmp_path / "t"
    add_version(table, 0, files=1)
    run_stream(spark, table, tmp_path / "ck", startingVersion=0)
    for start in (10, 20, 30):
        add_version(table, start, files=1)
    DeltaTable(str(table)).create_checkpoint()
    for version in (0, 1, 2):
        (table / "_delta_log" / f"{version:020d}.json").unlink()
    with pytest.raises(StreamingQueryException, match="no longer in its Delta log"):
        run_stream(spark, table, tmp_path / "ck", startingVersion=0)


def test_writer_commits_once_per_batch_with_txn_and_metadata(tmp_path):
    table = tmp_path / "sink"
    info = BatchCommitInfo("silver_g1", 0, "query-1", '{"a":1}', '{"a":2}')
    first = write_batch(table, pa.table({"id": [1, 2]}), info)
    again = write_batch(table, pa.table({"id": [1, 2]}), info)
    assert (first.status, again.status) == ("written", "skipped")
    dt = DeltaTable(str(table))
    assert read_delta(dt).num_rows == 2
    assert dt.transaction_version("silver_g1") == 0
    commit = dt.history(1)[0]
    assert commit[commit_metadata.STREAM] == "silver_g1"
    assert commit[commit_metadata.BATCH_ID] == 0
    assert commit[commit_metadata.SOURCE_END] == '{"a":2}'
    assert commit["operationParameters"]["epochId"] == "0"
    assert BatchCommitInfo.from_commit_info(commit) == info


def test_writer_skips_older_batches_and_empty_batches(tmp_path):
    table = tmp_path / "sink"
    write_batch(table, pa.table({"id": [1]}), BatchCommitInfo("s", 5))
    assert write_batch(table, pa.table({"id": [9]}), BatchCommitInfo("s", 3)).status == "skipped"
    assert write_batch(table, pa.table({"id": pa.array([], pa.int64())}), BatchCommitInfo("s", 6)).status == "empty"
    assert write_batch(table, pa.table({"id": [2]}), BatchCommitInfo("other", 0)).status == "written"
    assert sorted(read_delta(str(table)).column("id").to_pylist()) == [1, 2]


def test_schema_merge_keeps_the_table_id(tmp_path):
    """A delta-rs regression once changed the table id on merge, which breaks Spark streams."""
    table = tmp_path / "sink"
    write_batch(table, pa.table({"id": [1]}), BatchCommitInfo("s", 0))
    table_id = DeltaTable(str(table)).metadata().id
    write_batch(table, pa.table({"id": [2], "new": ["x"]}), BatchCommitInfo("s", 1))
    write_batch(table, pa.table({"id": [3], "nested": pa.array([{"a": 1}])}), BatchCommitInfo("s", 2))
    dt = DeltaTable(str(table))
    assert dt.metadata().id == table_id
    assert [f.name for f in dt.schema().fields] == ["id", "new", "nested"]


def routed_frame(spark, rows: list[tuple[str, int, str]]):
    """(route, id, name) rows, three tasks: what a pipeline stream hands the sink."""
    return spark.createDataFrame(rows, "_route string, id long, name string").repartition(3)


def sink_plan(tmp_path: Path, batch_id: int, **extra) -> WritePlan:
    tables = {
        "a": TableTarget(str(tmp_path / "a"), columns={"id": "id", "name": "name"}),
        "b": TableTarget(str(tmp_path / "b"), columns={"id": "id"}),
    }
    return WritePlan(BatchCommitInfo("s", batch_id, "q-1"), tables, (("b",), ("a",)), "", **extra)


def test_the_sink_writes_from_tasks_and_commits_each_table_once_with_txn_and_stats(spark, tmp_path):
    rows = [("a", i, f"n{i}") for i in range(40)] + [("b", i, None) for i in range(7)]
    report = EmbeddedDelta().write_routes(routed_frame(spark, rows), sink_plan(tmp_path, 0))
    assert (report.tables["a"].status, report.tables["a"].rows, report.tables["b"].rows) == ("written", 40, 7)
    a = DeltaTable(str(tmp_path / "a"))
    assert sorted(read_delta(a).column("id").to_pylist()) == list(range(40))
    assert a.transaction_version("s") == 0 and a.history(1)[0][commit_metadata.QUERY_ID] == "q-1"
    adds = [
        json.loads(line)["add"]
        for line in (tmp_path / "a" / "_delta_log" / f"{a.version():020d}.json").read_text().splitlines()
        if '"add"' in line
    ]
    assert 1 <= len(adds) <= 3, "one file per task that had rows"
    stats = [json.loads(add["stats"]) for add in adds]
    assert sum(s["numRecords"] for s in stats) == 40
    assert min(s["minValues"]["id"] for s in stats) == 0 and max(s["maxValues"]["id"] for s in stats) == 39

    again = EmbeddedDelta().write_routes(routed_frame(spark, rows), sink_plan(tmp_path, 0))
    assert again.tables["a"].status == "skipped" and DeltaTable(str(tmp_path / "a")).version() == a.version()
    on_disk = {p.name for p in (tmp_path / "a").glob("*.parquet")}
    assert on_disk == {add["path"] for add in adds}, "a replay's files are deleted, nothing is left behind"


def test_the_sink_is_found_whatever_session_the_writing_thread_has_active(spark, tmp_path):
    """Spark looks a Python data source up in the thread's active session only, not in the
    session of the frame being written: a CDC table's thread left with none active after a
    delta-spark MERGE in a session of its own wrote its next batch's markers with
    DATA_SOURCE_NOT_FOUND until the write made its frame's session active."""
    from threading import Thread

    companion = spark._jvm.org.apache.spark.sql.SparkSession
    other = spark.newSession()
    rows = routed_frame(spark, [("b", 1, None)])
    outcome: list[object] = []

    def write() -> None:
        try:
            companion.setActiveSession(other._jsparkSession)
            with active_session(spark):
                during = companion.getActiveSession().get()
            after = companion.getActiveSession().get()
            outcome.append((during.equals(spark._jsparkSession), after.equals(other._jsparkSession)))
            companion.clearActiveSession()
            outcome.append(EmbeddedDelta().write_routes(rows, sink_plan(tmp_path, 0)))
        except Exception as error:  # reported below, from the test's thread
            outcome.append(error)

    thread = Thread(target=write)
    thread.start()
    thread.join()
    assert outcome[0] == (True, True), "the frame's session is active for the block, the thread's own after it"
    assert not isinstance(outcome[1], Exception), outcome[1]
    assert outcome[1].rows("b") == 1


def test_tables_the_pipeline_creates_take_a_checkpoint_every_ten_commits(spark, tmp_path):
    """delta-rs replays every commit since the last checkpoint to refresh, read a txn and commit;
    at its default of 100 a streaming table's commit cost climbs for 100 batches."""
    sink_tables = [tmp_path / "a", tmp_path / "b"]
    for batch_id in range(11):
        rows = [("a", batch_id, "x"), ("b", batch_id, None)]
        EmbeddedDelta().write_routes(routed_frame(spark, rows), sink_plan(tmp_path, batch_id))
        write_batch(tmp_path / "small", pa.table({"id": [batch_id]}), BatchCommitInfo("s", batch_id))
    for table in [*sink_tables, tmp_path / "small"]:
        dt = DeltaTable(str(table))
        assert dt.metadata().configuration == TABLE_CONFIGURATION, table.name
        checkpoints = [int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.checkpoint.parquet")]
        assert len(checkpoints) == 1 and dt.version() - checkpoints[0] < 10, (table.name, dt.version(), checkpoints)


def test_the_sink_adds_new_columns_with_a_metadata_commit_and_refuses_a_type_change(spark, tmp_path):
    sink = EmbeddedDelta()
    sink.write_routes(routed_frame(spark, [("b", 1, None)]), sink_plan(tmp_path, 0))
    table_id = DeltaTable(str(tmp_path / "b")).metadata().id
    wider = replace(
        sink_plan(tmp_path, 1),
        tables={"b": TableTarget(str(tmp_path / "b"), columns={"id": "id", "name": "name"})},
        commit_stages=(("b",),),
    )
    sink.write_routes(routed_frame(spark, [("b", 2, "x")]), wider)
    b = DeltaTable(str(tmp_path / "b"))
    assert b.metadata().id == table_id and [f.name for f in b.schema().fields] == ["id", "name"]
    assert sorted(read_delta(b).to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "name": None}, {"id": 2, "name": "x"}]
    assert [h["operation"] for h in b.history()] == ["WRITE", "WRITE", "WRITE", "CREATE TABLE"]
    retyped = replace(wider, tables={"b": TableTarget(str(tmp_path / "b"), columns={"id": "name"})})
    with pytest.raises(Exception, match="streamops never rewrites a table"):
        sink.write_routes(routed_frame(spark, [("b", 3, "y")]), replace(retyped, commit=BatchCommitInfo("s", 2)))
    assert DeltaTable(str(tmp_path / "b")).count() == 2


def test_held_rows_stop_a_halting_batch_before_anything_is_committed(spark, tmp_path):
    rows = [("a", 1, "x"), ("hold", 2, "y")]
    report = EmbeddedDelta().write_routes(routed_frame(spark, rows), sink_plan(tmp_path, 0, halt_on_held_rows=True))
    assert report.halted and report.tallies["hold"] == {"": 1}
    assert not DeltaTable.is_deltatable(str(tmp_path / "a")) or DeltaTable(str(tmp_path / "a")).count() == 0
    assert not list((tmp_path / "a").glob("*.parquet")), "the attempt's files are deleted"


def test_the_sink_reports_each_keys_first_flagged_row_before_any_commit(spark, tmp_path):
    """Bronze's one pass: the tasks find each new key's first row (least rank over every task),
    the driver sees them before any table is committed, and a refusal there commits nothing."""
    rows = [("a", i, f"k{i % 3}") for i in range(30)] + [("b", 100, None)]
    frame = (
        spark.createDataFrame(rows, "_route string, id long, name string")
        .repartition(3)
        .selectExpr("*", "name IS NOT NULL AND name <> 'k2' AS flag", "-id AS rank")
    )
    wanted = FirstRows(flag_column="flag", key_columns=("name",), order_columns=("rank",), value_column="id")
    seen: list[dict] = []

    def before_commit(first_rows):
        seen.append(dict(first_rows))
        assert not DeltaTable.is_deltatable(str(tmp_path / "a")), "called before any commit"

    report = EmbeddedDelta().write_routes(frame, sink_plan(tmp_path, 0, first_rows=wanted), before_commit)
    assert seen == [{("k0",): ((-27,), 27), ("k1",): ((-28,), 28)}], "k2 is not flagged; the least rank wins"
    assert report.tables["a"].rows == 30 and DeltaTable(str(tmp_path / "a")).count() == 30

    def refuse(first_rows):
        raise RuntimeError("registry refused")

    with pytest.raises(RuntimeError, match="registry refused"):
        EmbeddedDelta().write_routes(frame, sink_plan(tmp_path / "refused", 0, first_rows=wanted), refuse)
    assert not DeltaTable.is_deltatable(str(tmp_path / "refused" / "a"))
    assert not list((tmp_path / "refused").rglob("*.parquet")), "the written files are deleted"


def test_uncommitted_first_batch_replays_the_same_files_after_new_commits(spark, tmp_path):
    """Spark re-asks the initial offset when it replays batch 0; new commits must not move it."""
    table, checkpoint = tmp_path / "t", tmp_path / "ck"
    add_version(table, 0, files=2)

    def fail(df, batch_id):
        raise RuntimeError("crash in batch 0")

    query = (
        spark.readStream.format("streamops_delta")
        .option("path", str(table))
        .load()
        .writeStream.foreachBatch(fail)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match="crash in batch 0"):
        query.awaitTermination(60)
    assert (checkpoint / "offsets" / "0").exists() and not (checkpoint / "commits" / "0").exists()
    add_version(table, 100, files=1)
    add_version(table, 200, files=1)

    batches = run_stream(spark, table, checkpoint)
    assert batches[0][1] == [0, 1, 2, 3, 4, 5], "batch 0 replays exactly the snapshot it planned"
    assert sorted(i for _, ids, _ in batches for i in ids) == [0, 1, 2, 3, 4, 5, 100, 101, 102, 200, 201, 202]


def test_starting_version_latest_replays_its_first_batch_exactly(spark, tmp_path):
    table, checkpoint = tmp_path / "t", tmp_path / "ck"
    add_version(table, 0, files=1)
    seen = []

    def fail_first(df, batch_id):
        ids = sorted(r.id for r in df.select("id").collect())
        if ids and not seen:
            seen.append(ids)
            raise RuntimeError("crash in the first batch with data")

    query = (
        spark.readStream.format("streamops_delta")
        .option("path", str(table))
        .option("startingVersion", "latest")
        .load()
        .writeStream.foreachBatch(fail_first)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0.5 seconds")
        .start()
    )
    try:
        wait_until(lambda: query.lastProgress is not None, 60, "the first trigger, which fixes `latest`")
        add_version(table, 10, files=1)
        with pytest.raises(StreamingQueryException, match="crash in the first batch"):
            query.awaitTermination(60)
    finally:
        query.stop()
    add_version(table, 20, files=1)
    batches = run_stream(spark, table, checkpoint, startingVersion="latest")
    assert seen == [[10, 11, 12]]
    assert [ids for _, ids, _ in batches if ids][0] == [10, 11, 12]
    assert sorted(i for _, ids, _ in batches for i in ids) == [10, 11, 12, 20, 21, 22]


def test_expired_commits_are_looked_for_only_by_the_commit_that_writes_a_checkpoint(tmp_path):
    """delta-rs lists the whole log for expired commits after every commit unless told not to;
    streamops lets it look when it writes a checkpoint, as Delta Spark does, and they still go."""
    table = str(tmp_path / "t")

    def commit(batch_id: int) -> PostCommitHookProperties:
        hooks = _post_commit_hooks(DeltaTable(table)) if DeltaTable.is_deltatable(table) else None
        builder = DataFileBuilder(table, pa.schema([("id", pa.int64())]))
        builder.write(pa.table({"id": [batch_id]}))
        commit_files(table, [builder.close()], BatchCommitInfo("s", batch_id))
        return hooks

    commit(0)
    DeltaTable(table).alter.set_table_properties({"delta.logRetentionDuration": "interval 0 seconds"})
    looked = {DeltaTable(table).version() + 1: commit(batch_id).cleanup_expired_logs for batch_id in range(1, 12)}
    assert looked == {v: (None if v % 10 == 0 else False) for v in range(3, 14)}
    commits = sorted(int(p.name.split(".")[0]) for p in (tmp_path / "t" / "_delta_log").glob("*.json"))
    assert 0 < commits[0] <= 10, "the commit that wrote checkpoint 10 removed the expired commits before it"
    dt = DeltaTable(table)
    assert dt.transaction_version("s") == 11 and sorted(r["id"] for r in read_delta(dt).to_pylist()) == list(range(12))
