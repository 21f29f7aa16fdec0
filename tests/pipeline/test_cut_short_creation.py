"""A kill while delta-spark created a table left `_delta_log` with no version; every later
native start then failed with DELTA_TABLE_NOT_FOUND (CI's crash cycles, a kill 10 s in)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streamops.core.delta_format.read import is_table, open_table
from streamops.pipeline.delta_connector.cut_short_creation import clear_cut_short_creation

SCHEMA = pa.schema([("event_type", pa.string())])


def cut_short(table) -> None:
    """What delta-spark leaves when killed before commit 0: its folders and a temporary commit."""
    (table / "_delta_log" / "_staged_commits").mkdir(parents=True)
    (table / "_delta_log" / ".00000000000000000000.json.3f1c9e.tmp").write_bytes(b'{"commitInfo":')


def test_a_native_table_whose_creation_a_kill_cut_short_is_created_on_the_next_start(spark, tmp_path):
    from streamops.pipeline.delta_connector.connector import connector_for

    table = tmp_path / "schema_registry"
    cut_short(table)
    connector_for("native", spark).create_table(table, SCHEMA)
    assert is_table(table)
    created = open_table(table)
    assert created.version() == 0 and created.schema().to_arrow().names == ["event_type"]


@pytest.mark.parametrize(
    "kept",
    [
        "00000000000000000000.json",
        "00000000000000000003.checkpoint.parquet",
        "00000000000000000001.crc",
        "_staged_commits/00000000000000000001.6a2f.json",
    ],
)
def test_a_log_that_holds_any_version_is_left_alone(tmp_path, kept):
    table = tmp_path / "t"
    cut_short(table)
    (table / "_delta_log" / kept).write_bytes(b"{}")
    assert clear_cut_short_creation(table) is False
    assert (table / "_delta_log" / kept).exists()


def test_only_a_log_without_versions_is_removed(tmp_path):
    table = tmp_path / "t"
    assert clear_cut_short_creation(table) is False, "no log: nothing to remove"
    cut_short(table)
    (table / "part-0.parquet").write_bytes(b"data outside the log")
    assert clear_cut_short_creation(table) is True
    assert not (table / "_delta_log").exists() and (table / "part-0.parquet").exists()
