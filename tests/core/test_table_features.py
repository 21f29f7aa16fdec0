"""A table's protocol, read from its log (delta-rs refuses to open tables whose features it
lacks), decides whether streamops' readers can read it; a refusal names one feature."""

from __future__ import annotations

import json
import os

import pyarrow as pa
from delta_by_hand import HandTable
from deltalake import DeltaTable, TableFeatures, write_deltalake

from streamops.core.delta_format.column_mapping import ColumnMapping
from streamops.core.delta_format.file_reader import read_data_file
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import DeltaFileIndex
from streamops.core.delta_format.table_features import TableProtocol, read_protocol, unreadable_reader_feature
from streamops.core.storage.location import Location


def test_tables_delta_rs_writes_are_readable_however_their_protocol_is_stored(tmp_path):
    plain, mapped, checkpointed = tmp_path / "plain", tmp_path / "mapped", tmp_path / "v2"
    write_deltalake(str(plain), pa.table({"id": [1]}))
    write_deltalake(str(mapped), pa.table({"id": [1]}), configuration={"delta.columnMapping.mode": "name"})
    write_deltalake(str(checkpointed), pa.table({"id": [1]}))
    DeltaTable(str(checkpointed)).alter.add_feature(TableFeatures.V2Checkpoint, allow_protocol_versions_increase=True)
    write_deltalake(str(checkpointed), pa.table({"id": [2]}), mode="append")
    DeltaTable(str(checkpointed)).create_checkpoint()
    for version in (0, 1, 2):
        os.unlink(checkpointed / "_delta_log" / f"{version:020d}.json")

    assert read_protocol(DeltaLog(plain)) == TableProtocol(1, None)
    assert read_protocol(DeltaLog(mapped)) == TableProtocol(2, None)
    assert read_protocol(DeltaLog(checkpointed)) == TableProtocol(3, ["v2Checkpoint"]), "from the checkpoint"
    assert all(unreadable_reader_feature(read_protocol(DeltaLog(t))) is None for t in (plain, mapped, checkpointed))


def test_a_feature_no_reader_here_implements_is_named(tmp_path):
    made_up = HandTable(tmp_path / "made_up", {"id": "long"}, reader_features=("deletionVectors", "madeUpFeature"))
    assert unreadable_reader_feature(read_protocol(DeltaLog(made_up.root))) == "madeUpFeature"
    variant = HandTable(tmp_path / "variant", {"id": "long"}, reader_features=("variantType",))
    assert unreadable_reader_feature(read_protocol(DeltaLog(variant.root))) == "variantType"

    future = HandTable(tmp_path / "future", {"id": "long"}, reader_features=())
    future.commit("UPGRADE", {"protocol": {"minReaderVersion": 4, "minWriterVersion": 7}})
    assert unreadable_reader_feature(read_protocol(DeltaLog(future.root))) == "reader version 4"


def test_type_widening_reads_files_from_before_the_change_in_the_wider_type(tmp_path):
    """PROTOCOL.md "Type Widening": files keep the type they were written with; readers widen.
    (delta-rs 1.6.6 opens such a table but refuses to scan it, so the expected rows are the
    protocol's.)"""
    table = HandTable(tmp_path / "t", {"id": "integer"}, reader_features=("typeWidening",))
    table.commit("WRITE", {"add": table.data_file("a.parquet", pa.table({"id": pa.array([1, 2], pa.int32())}))})
    metadata = json.loads((table.log / f"{0:020d}.json").read_text().splitlines()[2])["metaData"]
    widened = {
        "type": "struct",
        "fields": [
            {
                "name": "id",
                "type": "long",
                "nullable": True,
                "metadata": {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]},
            }
        ],
    }
    table.commit("CHANGE COLUMN", {"metaData": {**metadata, "schemaString": json.dumps(widened)}})
    table.commit("WRITE", {"add": table.data_file("b.parquet", pa.table({"id": pa.array([2**40], pa.int64())}))})
    dt = DeltaTable(str(table.root))
    assert unreadable_reader_feature(read_protocol(DeltaLog(table.root))) is None
    columns = ColumnMapping.of_table(dt)
    target = pa.schema(dt.schema().to_arrow())
    files = DeltaFileIndex(DeltaLog(table.root)).snapshot_files(table.version)
    read = pa.concat_tables(read_data_file(Location.of(table.root), add, columns, target) for add in files)
    assert read.schema.field("id").type == pa.int64() and sorted(read.column("id").to_pylist()) == [1, 2, 2**40]
