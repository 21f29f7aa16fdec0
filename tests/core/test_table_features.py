"""A table's protocol, read from its log (delta-rs refuses to open tables whose features it
lacks), decides whether streamops' readers can read it; a refusal names one feature."""

from __future__ import annotations

import os

import pyarrow as pa
from delta_by_hand import HandTable
from deltalake import DeltaTable, TableFeatures, write_deltalake

from streamops.delta_log import DeltaLog
from streamops.table_features import TableProtocol, read_protocol, unreadable_reader_feature


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
