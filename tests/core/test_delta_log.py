"""Where the Delta log reader looks: only `<20 digits>.json` files are commits, an add action's
path is URL-encoded and relative to the table (decoded once, never leaving it), and a version
the log no longer or not yet holds is an error saying which."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from streamops.core.delta_format.log import DeltaLog, commit_file_name, data_file_path
from streamops.core.exceptions import TableNotFoundError, VersionNotInLogError
from streamops.core.lake_layout import DELTA_LOG_DIR

HOSTILE_PARTITIONS = ["a b", "x/y", "..", "../../escape", "c%d", "%2e%2e%2f", "é", "q?r#s"]
"""Partition values that would leave the table, or decode twice, if a path were handled naively."""


def partitioned_table(path: Path) -> DeltaLog:
    write_deltalake(
        str(path), pa.table({"p": HOSTILE_PARTITIONS, "v": list(range(len(HOSTILE_PARTITIONS)))}), partition_by=["p"]
    )
    return DeltaLog(path)


def test_commit_files_are_named_by_twenty_digit_versions():
    assert commit_file_name(0) == "00000000000000000000.json"
    assert commit_file_name(123) == "00000000000000000123.json"


def test_an_add_path_is_decoded_once_and_stays_inside_the_table(tmp_path):
    table = tmp_path / "table"
    log = partitioned_table(table)
    adds = log.commit(0).data_adds
    assert len(adds) == len(HOSTILE_PARTITIONS)
    root = table.resolve()
    for add in adds:
        location = Path(data_file_path(table, add.path))
        assert location.is_file(), (add.path, location)
        assert location.resolve().parent.parent == root, f"{add.path} resolved outside one partition directory"
        assert location.parent.name.startswith("p=") and "/" not in location.parent.name[2:]
    assert {add.partition_values for add in adds} == {(("p", value),) for value in HOSTILE_PARTITIONS}


def test_absolute_paths_and_uris_are_used_as_written(tmp_path):
    assert data_file_path(tmp_path, "/data/elsewhere/part-0.parquet") == "/data/elsewhere/part-0.parquet"
    assert data_file_path(tmp_path, "s3://bucket/t/part%20a.parquet") == "s3://bucket/t/part%20a.parquet"
    assert data_file_path(f"{tmp_path}/", "p=a%2520b/f.parquet") == f"{tmp_path}/p=a%20b/f.parquet"


def test_only_commit_json_files_count_as_versions(tmp_path):
    table = tmp_path / "table"
    for i in range(3):
        write_deltalake(str(table), pa.table({"x": [i]}), mode="append")
    DeltaTable(str(table)).create_checkpoint()
    log_dir = table / DELTA_LOG_DIR
    for stray in (
        ".00000000000000000000.json.crc",
        "00000000000000000000.json.tmp",
        "_last_vacuum_info",
        "garbage.json",
        "-1.json",
        "0x10.json",
        "00000000000000000099.json.partial",
    ):
        (log_dir / stray).write_text("{}")
    os.remove(log_dir / commit_file_name(0))
    log = DeltaLog(table)
    assert log.earliest_version() == 1
    retention = log.retention()
    assert (retention.earliest_commit, retention.earliest_snapshot, retention.latest_commit) == (1, 2, 2)
    assert [len(log.commit(v).data_adds) for v in (1, 2)] == [1, 1]


def test_a_version_outside_the_log_says_which_side_it_is_on(tmp_path):
    table = tmp_path / "table"
    for i in range(3):
        write_deltalake(str(table), pa.table({"x": [i]}), mode="append")
    DeltaTable(str(table)).create_checkpoint()
    os.remove(table / DELTA_LOG_DIR / commit_file_name(0))
    log = DeltaLog(table)
    with pytest.raises(
        VersionNotInLogError, match=r"version 0 .* is no longer in its Delta log \(log cleanup keeps versions >= 1\)"
    ):
        log.commit(0)
    with pytest.raises(VersionNotInLogError, match=r"version 7 .* does not exist yet \(latest is 2\)"):
        log.commit(7)
    with pytest.raises(VersionNotInLogError):
        log.commit(-1)


def test_a_path_without_a_table_is_named_in_one_line(tmp_path):
    with pytest.raises(TableNotFoundError) as error:
        DeltaLog(tmp_path / "missing").latest_version()
    assert f"`{tmp_path / 'missing'}`" in str(error.value) and "\n" not in str(error.value)
