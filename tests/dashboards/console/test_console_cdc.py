"""The console's Change data capture page, on a lake the real pipeline wrote from recorded
Debezium changes (tests/cdc_landing.py): what it shows is compared with the silver tables and
`_system/cdc_applies`, read independently with delta-rs."""

from __future__ import annotations

import json

import pytest
from cdc_landing import DATABASE, RECORDINGS, drain, land, recorded, values
from test_console_views import frame, lake_files, open_page, texts

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.delta_connector.connector import connector_for


@pytest.fixture(scope="module")
def cdc_lake(spark, tmp_path_factory) -> LakeLayout:
    root = tmp_path_factory.mktemp("cdc_lake")
    lines = values(recorded(RECORDINGS[0]))
    for number, start in enumerate(range(0, len(lines), 10)):
        land(root / "landing", f"changes-{number}.ndjson", lines[start : start + 10])
    lake = LakeLayout.at(root / "lake")
    drain(spark, lake, root / "landing", connector_for("embedded", spark), files=1)
    return lake


def test_each_table_shows_its_rows_what_its_changes_did_and_its_lag(console, cdc_lake):
    at = open_page(console, cdc_lake, "cdc_view.py")
    summary = frame(at, "table", "rows", "inserted", "p95_lag_seconds").set_index("table")
    assert set(summary.index) == set(DATABASE)
    applies = read_delta(cdc_lake.cdc_applies).to_pylist()
    for table, rows in DATABASE.items():
        mine = sorted((a for a in applies if a["table"] == table), key=lambda a: a["committed_at"])
        shown = summary.loc[table]
        assert shown["rows"] == len(rows) == read_delta(cdc_lake.silver(table)).num_rows, table
        assert shown["batches"] == len(mine) >= 1, table
        for column in ("changes", "inserted", "updated", "deleted"):
            assert shown[column] == sum(a[column] for a in mine), (table, column)
        assert shown["changed_nothing"] == sum(a["ignored"] for a in mine)
        assert shown["lag_seconds"] == pytest.approx(mine[-1]["lag_seconds"])
        assert shown["stream"] == mine[-1]["stream"] and shown["status"] == "no progress"
    assert summary["batches"].max() >= 2, "the landing was applied over several batches"
    assert summary.loc["public.customers", "truncates"] == 0
    assert summary.loc["public.order_lines", "truncates"] == 1, "the recording truncates order_lines"
    assert f"{len(DATABASE)} tables kept current" in texts(at)


def test_a_chosen_table_charts_its_batches_and_opens_its_stream(console, cdc_lake):
    at = open_page(console, cdc_lake, "cdc_view.py", table="public.order_lines")
    assert at.selectbox(key="table").value == "public.order_lines"
    batches = frame(at, "batch_id", "silver_version", "max_lag_seconds")
    applies = [a for a in read_delta(cdc_lake.cdc_applies).to_pylist() if a["table"] == "public.order_lines"]
    assert sorted(batches["batch_id"]) == sorted(a["batch_id"] for a in applies)
    assert list(batches["committed_at"]) == sorted(batches["committed_at"], reverse=True)
    titles = [json.loads(c.proto.spec)["title"] for c in at.get("vega_lite_chart")]
    assert titles == ["CDC lag per batch (s)", "Changes per batch"]
    stream = batches["stream"].iloc[0]
    at.button(key="open_stream").click().run()
    assert not at.exception
    assert at.query_params.get("stream") in (stream, [stream])


def test_a_table_name_from_the_url_that_is_not_a_cdc_table_is_not_used(console, cdc_lake):
    at = open_page(console, cdc_lake, "cdc_view.py", table="../../etc")
    assert at.selectbox(key="table").value in DATABASE


def test_the_page_writes_nothing_and_says_what_is_missing_on_a_lake_without_cdc(console, cdc_lake, tmp_path):
    before = lake_files(cdc_lake)
    open_page(console, cdc_lake, "cdc_view.py")
    assert lake_files(cdc_lake) == before
    empty = open_page(console, LakeLayout.at(tmp_path), "cdc_view.py")
    assert "No CDC table yet" in empty.info[0].value
