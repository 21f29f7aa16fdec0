"""The embedded Delta source on what real Delta tables contain: deletion vectors, column mapping,
checkpoints (classic and v2) with the commits before them cleaned up, commits that delete or
rewrite data while a stream runs, and reader features it cannot read. Every expected row set
comes from delta-rs reading the same table (`DeltaTable.scan()`), or from Delta's documented
rules for change commits."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pyarrow as pa
import pytest
from delta_by_hand import HandTable
from delta_streams import RunningStream, drain, source
from deltalake import DeltaTable, TableFeatures, write_deltalake
from pyspark.errors import StreamingQueryException

from streamops.core.delta_format.deletion_vectors import DeletionVector
from streamops.core.storage.location import Location


def ids(rows: list[dict]) -> list[int]:
    return sorted(r["id"] for r in rows)


def scanned(table: Path) -> list[dict]:
    return sorted(pa.table(DeltaTable(str(table)).scan()).to_pylist(), key=lambda r: r["id"])


def refusal_line(message: str) -> str:
    """The one line of a query's error that is ours (Spark wraps it in its own text)."""
    return next(line for line in message.splitlines() if "source table `" in line)


# -- deletion vectors ----------------------------------------------------------------------------


def table_with_deletion_vectors(root: Path) -> None:
    """v1: three files of ten rows; v2: a DELETE giving them vectors (`u` with a random prefix,
    `p`, inline `i`); v3: one more file."""
    table = HandTable(root, {"id": "long"})
    adds = [
        table.data_file(f"f{i}.parquet", pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}))
        for i in range(3)
    ]
    table.commit("WRITE", *({"add": add} for add in adds))
    first, second = table.deletion_vector_file([[0, 9], [1, 2, 3]], prefix="q7")
    absolute = DeletionVector.from_json(second).file(Location.of(root))
    table.delete_rows(
        adds,
        [
            first,
            {**second, "storageType": "p", "pathOrInlineDv": f"file://{absolute}"},
            table.inline_deletion_vector([5]),
        ],
    )
    table.commit("WRITE", {"add": table.data_file("f3.parquet", pa.table({"id": pa.array([100, 101], pa.int64())}))})


def test_deletion_vectors_hide_their_rows_from_the_snapshot_and_from_reread_files(spark, tmp_path):
    table = tmp_path / "t"
    table_with_deletion_vectors(table)
    live = ids(scanned(table))
    assert len(live) == 30 - 6 + 2

    assert ids(drain(spark, table, tmp_path / "snapshot")) == live
    everything = list(range(30))
    assert ids(drain(spark, table, tmp_path / "skip", startingVersion=1, skipChangeCommits="true")) == everything + [
        100,
        101,
    ]
    reread = drain(spark, table, tmp_path / "changes", startingVersion=1, ignoreChanges="true")
    assert ids(reread) == sorted(everything + live), (
        "ignoreChanges re-reads the files of version 2, without their deleted rows"
    )
    with pytest.raises(StreamingQueryException) as stopped:
        drain(spark, table, tmp_path / "default", startingVersion=1)
    assert "at version 2 (DELETE, rewrite)" in refusal_line(str(stopped.value))


# -- column mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["name", "id"])
def test_a_column_mapped_table_streams_with_its_logical_names(spark, tmp_path, mode):
    table = tmp_path / "t"
    item = pa.struct([("x", pa.int64()), ("y", pa.string())])

    def rows(start: int, part: str) -> pa.Table:
        return pa.table(
            {
                "id": pa.array([start, start + 1], pa.int64()),
                "part": [part, part],
                "item": pa.array([{"x": start, "y": "a"}, None], item),
            }
        )

    write_deltalake(str(table), rows(0, "a b"), partition_by=["part"], configuration={"delta.columnMapping.mode": mode})
    write_deltalake(str(table), rows(10, "c"), mode="append")
    expected = scanned(table)
    assert expected[0]["item"] == {"x": 0, "y": "a"} and expected[0]["part"] == "a b"
    assert sorted(drain(spark, table, tmp_path / "snapshot"), key=lambda r: r["id"]) == expected
    assert sorted(drain(spark, table, tmp_path / "commits", startingVersion=0), key=lambda r: r["id"]) == expected


def test_timestamps_without_time_zone_stream_as_spark_timestamp_ntz(spark, tmp_path):
    table = tmp_path / "t"
    at = pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5), None], pa.timestamp("us"))
    write_deltalake(str(table), pa.table({"id": [1, 2], "at": at}))
    assert DeltaTable(str(table)).protocol().reader_features == ["timestampNtz"]
    assert sorted(drain(spark, table, tmp_path / "ck"), key=lambda r: r["id"]) == scanned(table)


# -- checkpoints ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["classic", "v2"])
def test_a_stream_reads_a_table_whose_early_commits_only_a_checkpoint_holds(spark, tmp_path, kind):
    table = tmp_path / "t"
    write_deltalake(
        str(table), pa.table({"id": [0, 1]}), configuration={"delta.logRetentionDuration": "interval 0 seconds"}
    )
    if kind == "v2":
        DeltaTable(str(table)).alter.add_feature(TableFeatures.V2Checkpoint, allow_protocol_versions_increase=True)
    for start in (10, 20):
        write_deltalake(str(table), pa.table({"id": [start, start + 1]}), mode="append")
    dt = DeltaTable(str(table))
    checkpoint_version = dt.version()
    dt.create_checkpoint()
    dt.cleanup_metadata()
    for start in (30, 40):
        write_deltalake(str(table), pa.table({"id": [start, start + 1]}), mode="append")
    log = sorted(os.listdir(table / "_delta_log"))
    assert f"{0:020d}.json" not in log and f"{checkpoint_version:020d}.checkpoint.parquet" in log
    assert ("v2Checkpoint" in (DeltaTable(str(table)).protocol().reader_features or ())) == (kind == "v2")

    assert (
        ids(drain(spark, table, tmp_path / "snapshot")) == ids(scanned(table)) == [0, 1, 10, 11, 20, 21, 30, 31, 40, 41]
    )
    later = drain(spark, table, tmp_path / "later", startingVersion=checkpoint_version + 1)
    assert ids(later) == [30, 31, 40, 41]


# -- commits that are not appends, while a stream runs ---------------------------------------------


def appended(table: Path, values: list[int]) -> int:
    write_deltalake(str(table), pa.table({"id": values, "v": ["new"] * len(values)}), mode="append")
    return DeltaTable(str(table)).version()


@pytest.mark.parametrize(
    "operation, kind, option",
    [
        ("DELETE", "delete", "skipChangeCommits=true (or ignoreDeletes=true)"),
        ("UPDATE", "rewrite", "skipChangeCommits=true"),
    ],
)
def test_by_default_a_running_stream_stops_at_a_commit_that_deletes_or_rewrites(
    spark, tmp_path, operation, kind, option
):
    table = tmp_path / "t"
    appended(table, [0, 1])
    appended(table, [10, 11])
    stream = RunningStream(spark, table, tmp_path / "ck")
    try:
        stream.wait_for([0, 1, 10, 11])
        if operation == "DELETE":
            DeltaTable(str(table)).delete("id >= 10")
        else:
            DeltaTable(str(table)).update(updates={"v": "'changed'"}, predicate="id = 0")
        version = DeltaTable(str(table)).version()
        appended(table, [20])
        line = refusal_line(stream.failure())
    finally:
        stream.stop()
    assert f"at version {version} ({operation}, {kind})" in line and option in line
    assert f"startingVersion={version + 1}" in line
    assert sorted(stream.ids) == [0, 1, 10, 11], "nothing after the change was read"


def test_skip_change_commits_skips_delete_update_merge_and_overwrite_with_the_rows_they_add(spark, tmp_path):
    table = tmp_path / "t"
    appended(table, [0, 1, 2])
    stream = RunningStream(spark, table, tmp_path / "ck", skipChangeCommits="true")
    try:
        stream.wait_for([0, 1, 2])
        dt = DeltaTable(str(table))
        dt.delete("id = 2")
        dt.update(updates={"v": "'updated'"}, predicate="id = 1")
        changes = pa.table({"id": [0, 7], "v": ["merged", "inserted"]})
        (
            dt.merge(changes, predicate="t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        write_deltalake(str(table), pa.table({"id": [50], "v": ["overwritten"]}), mode="overwrite")
        appended(table, [60, 61])
        stream.wait_for([0, 1, 2, 60, 61])
        assert stream.query.isActive
    finally:
        stream.stop()
    assert [h["operation"] for h in DeltaTable(str(table)).history()][:5] == [
        "WRITE",
        "WRITE",
        "MERGE",
        "UPDATE",
        "DELETE",
    ]


def test_ignore_deletes_skips_a_pure_delete_and_stops_at_a_rewrite(spark, tmp_path):
    table = tmp_path / "t"
    appended(table, [0, 1])
    appended(table, [10, 11])
    stream = RunningStream(spark, table, tmp_path / "ck", ignoreDeletes="true")
    try:
        stream.wait_for([0, 1, 10, 11])
        DeltaTable(str(table)).delete("id >= 10")
        appended(table, [20])
        stream.wait_for([0, 1, 10, 11, 20])
        DeltaTable(str(table)).update(updates={"v": "'changed'"}, predicate="id = 0")
        version = DeltaTable(str(table)).version()
        line = refusal_line(stream.failure())
    finally:
        stream.stop()
    assert f"at version {version} (UPDATE, rewrite)" in line and "skipChangeCommits=true" in line


# -- reader features -------------------------------------------------------------------------------


def test_a_reader_feature_the_source_cannot_read_is_refused_when_the_stream_is_defined(spark, tmp_path):
    table = HandTable(tmp_path / "t", {"id": "long"}, reader_features=("deletionVectors", "madeUpFeature"))
    table.commit("WRITE", {"add": table.data_file("a.parquet", pa.table({"id": pa.array([1], pa.int64())}))})
    expected = (
        f"source table `{table.root}` uses the Delta reader feature `madeUpFeature`, which the embedded "
        "Delta source cannot read; use --delta native on a cluster with delta-spark"
    )
    with pytest.raises(Exception) as at_load:
        source(spark, table.root)
    assert expected in str(at_load.value).splitlines()[0] or expected in str(at_load.value)

    batches: list[int] = []
    with pytest.raises(Exception) as at_start:
        query = (
            source(spark, table.root, schema="id long")
            .writeStream.foreachBatch(lambda df, batch_id: batches.append(batch_id))
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination(60)
        finally:
            query.stop()
    assert expected in str(at_start.value) and batches == []


def test_a_table_upgraded_to_such_a_feature_stops_a_running_stream_with_the_same_line(spark, tmp_path):
    table = HandTable(tmp_path / "t", {"id": "long"})
    table.commit("WRITE", {"add": table.data_file("a.parquet", pa.table({"id": pa.array([1], pa.int64())}))})
    stream = RunningStream(spark, table.root, tmp_path / "ck")
    try:
        stream.wait_for([1])
        table.commit(
            "UPGRADE",
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": ["deletionVectors", "madeUpFeature"],
                    "writerFeatures": ["deletionVectors", "madeUpFeature"],
                }
            },
        )
        line = refusal_line(stream.failure())
    finally:
        stream.stop()
    assert "uses the Delta reader feature `madeUpFeature`" in line and "use --delta native" in line
