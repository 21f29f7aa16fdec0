"""A silver group's stream skips, as it reads bronze, the rows of types recorded for other groups."""

from __future__ import annotations

import pyarrow as pa
import pytest
from delta_streams import drain, drain_batches
from deltalake import write_deltalake
from pyspark.errors import StreamingQueryException

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.delta_connector.delta_source import ROW_FILTER_OPTION
from streamops.pipeline.registry.event_groups import EVENT_GROUPS_SCHEMA, assignment_rows
from streamops.pipeline.silver.group_rows import group_row_filter


def _bronze_like(table, types: list[str | None]) -> None:
    rows = pa.table({"id": list(range(len(types))), "event_type": pa.array(types, pa.string())})
    write_deltalake(str(table), rows, mode="append")


def test_rows_of_types_recorded_for_another_group_are_skipped_and_the_rest_read(spark, tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    EmbeddedDelta().create_table(lake.event_groups, EVENT_GROUPS_SCHEMA)
    write_deltalake(str(lake.event_groups), assignment_rows({"a": "g0001", "b": "g0002"}, batch_id=0), mode="append")
    table = tmp_path / "bronze"
    _bronze_like(table, ["a", "b", "c", None, "b", "a"])
    rows = drain(spark, table, tmp_path / "ck", **group_row_filter(lake, "g0001"))
    assert sorted((r["id"], r["event_type"]) for r in rows) == [(0, "a"), (2, "c"), (3, None), (5, "a")], (
        "`b` is g0002's; `c` is not recorded yet, so g0001 still reads it"
    )
    write_deltalake(str(lake.event_groups), assignment_rows({"c": "g0002"}, batch_id=1), mode="append")
    _bronze_like(table, ["c", "a"])
    later = drain(spark, table, tmp_path / "ck", **group_row_filter(lake, "g0001"))
    assert [r["event_type"] for r in later] == ["a"], "an assignment recorded since is used by the next batch"


def test_a_row_filter_that_names_no_function_stops_the_stream_with_one_line(spark, tmp_path):
    table = tmp_path / "bronze"
    _bronze_like(table, ["a"])
    with pytest.raises(StreamingQueryException) as failure:
        drain_batches(
            spark, table, tmp_path / "ck", lambda df, _: df.collect(), **{ROW_FILTER_OPTION: "no_such_module:rows"}
        )
    assert "rowFilter `no_such_module:rows` names no function" in str(failure.value)


def test_a_row_filter_on_a_column_the_table_lacks_stops_the_stream_with_one_line(spark, tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    EmbeddedDelta().create_table(lake.event_groups, EVENT_GROUPS_SCHEMA)
    write_deltalake(str(lake.event_groups), assignment_rows({"a": "g0002"}, batch_id=0), mode="append")
    table = tmp_path / "no_event_type"
    write_deltalake(str(table), pa.table({"id": [1, 2]}), mode="append")
    with pytest.raises(StreamingQueryException) as failure:
        drain_batches(spark, table, tmp_path / "ck", lambda df, _: df.collect(), **group_row_filter(lake, "g0001"))
    assert "skips rows by column `event_type`, which" in str(failure.value)
