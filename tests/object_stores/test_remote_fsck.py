"""`streamops lake fsck` on S3 (moto): the same damaged files as on a local disk, the truncated
one moved aside on the store, and one FSCK commit that records them."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from store_servers import s3_store

from streamops.checkpoint_tools.table_fsck import FSCK_METADATA_KEY
from streamops.cli import main
from streamops.core.delta_format.log import DeltaLog

pytestmark = pytest.mark.services


def test_fsck_on_s3_lists_moves_aside_and_records(tmp_path, capsys, s3_server, store_env):
    local = tmp_path / "events"
    for version in range(3):
        write_deltalake(local, pa.table({"id": list(range(version * 5, version * 5 + 5))}), mode="append")
    missing, cut = (DeltaLog(local).commit(v).adds[0].path for v in (0, 1))
    (local / missing).unlink()
    cut_bytes = (local / cut).read_bytes()[:20]
    (local / cut).write_bytes(cut_bytes)
    store = s3_store(s3_server)
    store_env(store.env)
    table = store.upload(local)

    assert main(["lake", "fsck", table, "--json"]) == 1
    [listed] = json.loads(capsys.readouterr().out)["tables"]
    assert [(d["path"], d["damage"], d["version"]) for d in listed["damaged"]] == [
        (missing, "missing", 0),
        (cut, "truncated", 1),
    ]

    assert main(["lake", "fsck", table, "--yes", "--json"]) == 0
    [repaired] = json.loads(capsys.readouterr().out)["tables"]
    assert repaired["fsck_version"] == 3 and repaired["damaged"][1]["moved_to"] == f"{table}/_damaged/{cut}"
    after = store.download(table, tmp_path / "after")
    assert (after / "_damaged" / cut).read_bytes() == cut_bytes and not (after / cut).exists()
    dt = DeltaTable(str(after))
    assert sorted(dt.to_pyarrow_table()["id"].to_pylist()) == list(range(10, 15))
    assert [d["path"] for d in dt.history(1)[0][FSCK_METADATA_KEY]["dropped"]] == [missing, cut]

    assert main(["lake", "fsck", table]) == 0
    assert capsys.readouterr().out == f"{table}: clean\n"
