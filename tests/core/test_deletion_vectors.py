"""Deletion vectors read as Delta's protocol stores them, judged by the protocol's own examples
and by delta-rs, an independent reader of the same tables."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from delta_by_hand import HandTable
from deltalake import DeltaTable
from pyroaring import BitMap64

from streamops.core.delta_format.column_mapping import ColumnMapping
from streamops.core.delta_format.deletion_vectors import DeletionVector, DeletionVectorError, decode_bitmap
from streamops.core.delta_format.file_reader import read_data_file
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import DeltaFileIndex
from streamops.core.storage.location import Location


def test_the_protocols_examples_read_as_the_protocol_says():
    relative = DeletionVector.from_json(
        {
            "storageType": "u",
            "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
            "offset": 4,
            "sizeInBytes": 40,
            "cardinality": 6,
        }
    )
    assert str(relative.file(Location.of("s3://mytable/"))) == (
        "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    )
    inline = DeletionVector.from_json(
        {
            "storageType": "i",
            "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
            "sizeInBytes": 40,
            "cardinality": 6,
        }
    )
    assert list(inline.deleted_rows(Location.of("/unused"))) == [3, 4, 7, 11, 18, 29]


def test_an_inline_vector_keeps_rows_beyond_32_bits():
    rows = BitMap64([0, 7, 2**32 + 5])
    assert DeletionVector.inline(rows).deleted_rows(Location.of("/unused")) == rows


def deleted_table(root: Path) -> tuple[HandTable, int]:
    """Three partitioned files of ten rows; one DELETE gives them a vector of each storage type:
    two in one `u` file under a random prefix (one of them reached by absolute path, `p`) and one
    inline (`i`)."""
    table = HandTable(root, {"id": "long", "p": "string"}, partition_columns=("p",))
    adds = [
        table.data_file(
            f"p={p}/f{i}.parquet", pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), {"p": p}
        )
        for i, p in enumerate(["x", "y z", "w"])
    ]
    table.commit("WRITE", *({"add": add} for add in adds))
    first, second = table.deletion_vector_file([[0, 9], [1, 2, 3]], prefix="ab")
    absolute = DeletionVector.from_json(second).file(Location.of(root))
    by_path = {**second, "storageType": "p", "pathOrInlineDv": f"file://{absolute}"}
    version = table.delete_rows(adds, [first, by_path, table.inline_deletion_vector([5])])
    return table, version


def rows_read(root: Path, files) -> list[int]:
    dt = DeltaTable(str(root))
    columns = ColumnMapping.of_table(dt)
    target = pa.schema(dt.schema().to_arrow())
    return sorted(
        i for add in files for i in read_data_file(Location.of(root), add, columns, target).column("id").to_pylist()
    )


def test_snapshot_and_commit_files_drop_exactly_the_rows_delta_rs_drops(tmp_path):
    root = tmp_path / "t"
    _, version = deleted_table(root)
    expected = sorted(pa.table(DeltaTable(str(root)).scan()).column("id").to_pylist())
    assert len(expected) == 30 - 6

    snapshot = DeltaFileIndex(DeltaLog(root)).snapshot_files(version)
    assert all(add.has_deletion_vector for add in snapshot)
    assert rows_read(root, snapshot) == expected
    assert sum(add.num_records for add in snapshot) == len(expected)

    commit = DeltaFileIndex(DeltaLog(root), read_mode="ignoreChanges").commit_files(version)
    assert sorted(add.deletion_vector.storage_type for add in commit) == ["i", "p", "u"]
    assert rows_read(root, commit) == expected
    assert sum(add.num_records for add in commit) == len(expected)


def test_a_damaged_or_missing_vector_file_is_one_line_naming_it(tmp_path):
    root = tmp_path / "t"
    table, version = deleted_table(root)
    add = next(a for a in DeltaLog(root).commit(version).adds if a.deletion_vector.storage_type == "u")
    location = add.deletion_vector.file(Location.of(root))
    stored = bytearray(location.read_bytes())
    stored[add.deletion_vector.offset + 6] ^= 0xFF
    location.write_bytes(bytes(stored))
    with pytest.raises(DeletionVectorError, match="fails its size or CRC-32 check") as damaged:
        add.deletion_vector.deleted_rows(Location.of(root))
    location.delete()
    with pytest.raises(DeletionVectorError, match=f"`{location}` is missing") as missing:
        add.deletion_vector.deleted_rows(Location.of(root))
    assert "\n" not in str(damaged.value) + str(missing.value)


def test_text_that_is_not_z85_is_refused():
    for text in ("abc", "abcd~", "abcdé"):
        with pytest.raises(DeletionVectorError, match="not Z85"):
            DeletionVector("i", text, 4, 0).deleted_rows(Location.of("/unused"))


def test_bytes_that_are_no_roaring_bitmap_array_are_refused():
    with pytest.raises(DeletionVectorError, match="magic number"):
        decode_bitmap(b"\x00\x01\x02\x03rest")
    with pytest.raises(DeletionVectorError, match="damaged"):
        decode_bitmap(b"\xd1\xd3\x39\x64" + b"\xff" * 9)
