"""Column-mapped tables (delta-rs writes them in `name` and `id` mode) read with logical names,
nested fields included, exactly as delta-rs's own scan reads them.

The judge is `DeltaTable.scan()`: delta-rs 1.6.6's `to_pyarrow_table()` returns nulls for every
data column of a column-mapped table (it looks the logical names up in the files)."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from streamops.core.delta_format.column_mapping import ColumnMapping
from streamops.core.delta_format.file_reader import read_data_file
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import BASE_INDEX, DeltaFileIndex, DeltaSourceOffset
from streamops.core.storage.location import Location

ITEM = pa.struct([("x", pa.int64()), ("y", pa.string())])


def rows(start: int, part: str) -> pa.Table:
    ids = [start, start + 1]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": [part, part],
            "item": pa.array([{"x": i, "y": f"y{i}"} for i in ids], ITEM),
            "items": pa.array([[{"x": start, "y": None}], None], pa.list_(ITEM)),
            "labels": pa.array([[("k", {"x": start, "y": "v"})], []], pa.map_(pa.string(), ITEM)),
        }
    )


def mapped_table(root: Path, mode: str) -> DeltaTable:
    write_deltalake(str(root), rows(0, "a b"), partition_by=["part"], configuration={"delta.columnMapping.mode": mode})
    write_deltalake(str(root), rows(10, "c"), mode="append")
    return DeltaTable(str(root))


def read(root: Path, files) -> list[dict]:
    dt = DeltaTable(str(root))
    columns = ColumnMapping.of_table(dt)
    target = pa.schema(dt.schema().to_arrow())
    found = [r for add in files for r in read_data_file(Location.of(root), add, columns, target).to_pylist()]
    return sorted(found, key=lambda r: r["id"])


@pytest.mark.parametrize("mode", ["name", "id"])
def test_snapshot_and_commit_files_read_as_delta_rs_scans_them(tmp_path, mode):
    root = tmp_path / mode
    dt = mapped_table(root, mode)
    expected = sorted(pa.table(dt.scan()).to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in expected] == [0, 1, 10, 11] and expected[0]["item"] == {"x": 0, "y": "y0"}
    log = DeltaLog(root)
    assert log.commit(1).adds[0].partition_values[0][0] != "part", "the log keys partitions by physical name"

    index = DeltaFileIndex(log)
    assert read(root, index.snapshot_files(1)) == expected
    commits = [f.file for f in index.files_after(DeltaSourceOffset(0, BASE_INDEX, False), 1)]
    assert read(root, commits) == expected


def test_id_mode_finds_columns_by_field_id_whatever_the_file_calls_them(tmp_path):
    """PROTOCOL.md: in `id` mode readers resolve columns by Parquet field id. (delta-rs 1.6.6
    resolves by physical name even here and returns nulls for such a file.)"""
    root = tmp_path / "t"
    dt = mapped_table(root, "id")
    fields = {f["name"]: f["metadata"]["delta.columnMapping.id"] for f in json.loads(dt.schema().to_json())["fields"]}
    nested = json.loads(dt.schema().to_json())["fields"][2]["type"]["fields"]

    def field_id(value: int) -> dict:
        return {b"PARQUET:field_id": str(value).encode()}

    schema = pa.schema(
        [
            pa.field("renamed_by_someone", pa.int64(), metadata=field_id(fields["id"])),
            pa.field(
                "whatever",
                pa.struct(
                    [pa.field("zz", pa.int64(), metadata=field_id(nested[0]["metadata"]["delta.columnMapping.id"]))]
                ),
                metadata=field_id(fields["item"]),
            ),
        ]
    )
    pq.write_table(
        pa.table({"renamed_by_someone": [99], "whatever": [{"zz": 7}]}, schema=schema), root / "by_id.parquet"
    )
    add = {
        "path": "by_id.parquet",
        "partitionValues": {},
        "size": (root / "by_id.parquet").stat().st_size,
        "modificationTime": int(time.time() * 1000),
        "dataChange": True,
        "stats": json.dumps({"numRecords": 1}),
    }
    (root / "_delta_log" / f"{2:020d}.json").write_text(
        json.dumps({"commitInfo": {"operation": "WRITE"}}) + "\n" + json.dumps({"add": add}) + "\n"
    )

    assert read(root, DeltaLog(root).commit(2).adds) == [
        {"id": 99, "part": None, "item": {"x": 7, "y": None}, "items": None, "labels": None}
    ]


def test_a_mode_the_protocol_does_not_enable_is_not_followed(tmp_path):
    """delta-rs writes this table with reader version 3 for `timestampNtz`, a column mapping mode
    in its properties but no `columnMapping` reader feature, and logical names in its files."""
    root = tmp_path / "t"
    at = pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5)], pa.timestamp("us"))
    write_deltalake(str(root), pa.table({"id": [1], "at": at}), configuration={"delta.columnMapping.mode": "name"})
    dt = DeltaTable(str(root))
    assert dt.protocol().reader_features == ["timestampNtz"]
    assert ColumnMapping.of_table(dt).mode == "none"
    assert (
        read(root, DeltaLog(root).commit(0).adds)
        == pa.table(dt.scan()).to_pylist()
        == [{"id": 1, "at": datetime.datetime(2026, 1, 2, 3, 4, 5)}]
    )
