"""What a Delta source offset may point at: files of this table only (a table replaced at the
same path is refused), data appended only (a commit that deletes or rewrites is refused unless
skipped on purpose), and every file it names is one the table holds, however its partition
values are spelled."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from streamops.core.delta_format.log import DeltaLog, data_file_path
from streamops.core.delta_format.source_offsets import (
    BASE_INDEX,
    DeltaFileIndex,
    DeltaSourceOffset,
    SourceTableChangedError,
)

HOSTILE_PARTITIONS = ["a b", "x/y", "..", "../../escape", "c%d", "é"]


def append(table: Path, values: list[int], partitions: list[str] | None = None) -> None:
    data = {"v": values} if partitions is None else {"v": values, "p": partitions}
    write_deltalake(str(table), pa.table(data), mode="append", partition_by=None if partitions is None else ["p"])


def test_an_offset_is_written_with_deltas_own_field_names():
    offset = DeltaSourceOffset(4, 2, True, "table-id")
    assert offset.to_json_dict() == {
        "sourceVersion": 1,
        "reservoirId": "table-id",
        "reservoirVersion": 4,
        "index": 2,
        "isStartingVersion": True,
    }
    assert DeltaSourceOffset.from_json(offset.to_json_dict()) == offset
    assert DeltaSourceOffset.is_delta_offset(offset.to_json_dict())
    assert not DeltaSourceOffset.is_delta_offset({"logOffset": 3}) and not DeltaSourceOffset.is_delta_offset("4")


def test_a_table_replaced_at_the_same_path_is_refused(tmp_path):
    table = tmp_path / "source"
    append(table, [1])
    recorded = DeltaSourceOffset(0, BASE_INDEX, False, DeltaLog(table).table_id())
    DeltaFileIndex(DeltaLog(table)).check_same_table(recorded)
    shutil.rmtree(table)
    append(table, [1])
    with pytest.raises(SourceTableChangedError, match=r"was replaced: .* start a new checkpoint") as error:
        DeltaFileIndex(DeltaLog(table)).check_same_table(recorded)
    assert "\n" not in str(error.value)
    DeltaFileIndex(DeltaLog(table)).check_same_table(DeltaSourceOffset(0, BASE_INDEX, False, ""))


def test_a_commit_that_deletes_or_rewrites_data_is_refused_unless_its_read_mode_says_otherwise(tmp_path):
    table = tmp_path / "source"
    append(table, [1, 2])
    append(table, [3])
    DeltaTable(str(table)).delete("v = 3")  # the whole file of version 1: a delete only
    DeltaTable(str(table)).delete("v = 1")  # part of version 0's file: a rewrite
    write_deltalake(str(table), pa.table({"v": [9]}), mode="overwrite")
    strict = DeltaFileIndex(DeltaLog(table))
    assert len(strict.commit_files(1)) == 1
    for version, operation in ((2, "DELETE"), (3, "DELETE"), (4, "WRITE")):
        with pytest.raises(
            SourceTableChangedError, match=f"at version {version} \\({operation}, .*skipChangeCommits=true"
        ) as error:
            strict.commit_files(version)
        assert "\n" not in str(error.value)
    assert {v: c.kind for v, c in strict.changes.items()} == {2: "delete", 3: "rewrite", 4: "rewrite"}

    skipping = DeltaFileIndex(DeltaLog(table), read_mode="skipChangeCommits")
    assert [f.version for f in skipping.files_after(DeltaSourceOffset(0, BASE_INDEX, False), 4)] == [0, 1]
    deletes_only = DeltaFileIndex(DeltaLog(table), read_mode="ignoreDeletes")
    assert deletes_only.commit_files(2) == ()
    with pytest.raises(SourceTableChangedError):
        deletes_only.commit_files(3)
    rereading = DeltaFileIndex(DeltaLog(table), read_mode="ignoreChanges")
    assert [f.version for f in rereading.files_after(DeltaSourceOffset(0, BASE_INDEX, False), 4)] == [0, 1, 3, 4]
    measuring = DeltaFileIndex(DeltaLog(table), strict=False)
    assert [f.version for f in measuring.files_after(DeltaSourceOffset(0, BASE_INDEX, False), 4)] == [0, 1]
    assert [c.version for c in measuring.changes_between(2, 3)] == [2, 3]


def test_a_schema_change_stops_a_stream_under_every_read_mode_but_optimize_changes_nothing(tmp_path):
    table = tmp_path / "source"
    append(table, [1])
    append(table, [2])
    DeltaTable(str(table)).optimize.compact()  # version 2: dataChange=false
    write_deltalake(str(table), pa.table({"v": [3], "w": ["x"]}), mode="append", schema_mode="merge")  # 3
    started_before = DeltaFileIndex(DeltaLog(table), read_mode="skipChangeCommits", schema_version=1)
    assert started_before.commit_files(2) == ()
    with pytest.raises(SourceTableChangedError, match=r"schema of source table .* changed at version 3 .*restart"):
        started_before.commit_files(3)
    started_after = DeltaFileIndex(DeltaLog(table), schema_version=3)
    assert len(started_after.commit_files(3)) == 1 and not started_after.changes
    measuring = DeltaFileIndex(DeltaLog(table), strict=False)
    assert len(measuring.commit_files(3)) == 1 and measuring.changes[3].kind == "schema_change"
    assert measuring.changes[3].outcomes() == {
        "failOnChanges": "fail",
        "ignoreDeletes": "fail",
        "skipChangeCommits": "fail",
        "ignoreChanges": "fail",
    }


def test_every_file_an_offset_range_names_is_a_file_of_the_table(tmp_path):
    table = tmp_path / "source"
    append(table, list(range(len(HOSTILE_PARTITIONS))), HOSTILE_PARTITIONS)
    append(table, list(range(len(HOSTILE_PARTITIONS))), HOSTILE_PARTITIONS)
    index = DeltaFileIndex(DeltaLog(table))
    latest = index.refresh()
    snapshot = list(index.files_after(DeltaSourceOffset(0, BASE_INDEX, True), latest))
    commits = list(index.files_after(DeltaSourceOffset(0, BASE_INDEX, False), latest))
    assert len(snapshot) == len(commits) == 2 * len(HOSTILE_PARTITIONS)
    assert {f.file.path for f in snapshot[: len(HOSTILE_PARTITIONS)]} == {
        f.file.path for f in commits if f.version == 0
    }
    root = table.resolve()
    for indexed in snapshot + commits:
        location = Path(data_file_path(table, indexed.file.path))
        assert location.is_file() and location.resolve().parent.parent == root, indexed.file.path
    first = index.snapshot_files(0)
    assert list(first) == sorted(first, key=lambda add: (add.modification_time, add.path))
    assert {dict(f.file.partition_values)["p"] for f in commits} == set(HOSTILE_PARTITIONS)
