"""The console's pure parts: schema diffs, the fleet table's filters, sorting and pages, how values
read (display.py), what a source is named by (source_names.py), and the charts' time axes."""

from __future__ import annotations

import ast
import json

import pandas as pd
import pytest
from recorded_fleet import intended_status, write_recorded_fleet

from streamops.core.lake_layout import LakeLayout, group_of
from streamops.core.storage.location import Location
from streamops.dashboards.console import APP_PATH, charts, display
from streamops.dashboards.console.fleet_table import (
    FleetFilter,
    fleet_frame,
    page_count,
    page_of,
    sort_fleet,
    status_counts,
)
from streamops.dashboards.console.schema_diff import FieldChange, diff_schemas, flatten_schema
from streamops.dashboards.console.source_names import is_class_name, source_name
from streamops.monitor.fleet_status import fleet_status
from streamops.monitor.status_severity import SEVERITY


def struct(**fields) -> dict:
    return {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields.items()],
    }


OLD = struct(
    event_type="string",
    player=struct(id="string", level="long"),
    tags={"type": "array", "elementType": "string", "containsNull": True},
    items={"type": "array", "elementType": struct(sku="string"), "containsNull": True},
)
NEW = struct(
    event_type="string",
    player=struct(id="string", level="string", guild="string"),
    tags={"type": "array", "elementType": "string", "containsNull": True},
    items={"type": "array", "elementType": struct(sku="string", qty="long"), "containsNull": True},
    referrer="string",
)


def test_flatten_names_every_nested_path_with_its_type():
    assert flatten_schema(json.dumps(OLD)) == {
        "event_type": "string",
        "player": "struct",
        "player.id": "string",
        "player.level": "long",
        "tags": "array<string>",
        "tags[]": "string",
        "items": "array<struct>",
        "items[]": "struct",
        "items[].sku": "string",
    }
    assert flatten_schema(None) == {} and flatten_schema("") == {}


def test_diff_lists_added_removed_and_retyped_fields_in_path_order():
    assert diff_schemas(OLD, NEW) == [
        FieldChange("items[].qty", "added", None, "long"),
        FieldChange("player.guild", "added", None, "string"),
        FieldChange("player.level", "type_changed", "long", "string"),
        FieldChange("referrer", "added", None, "string"),
    ]
    assert diff_schemas(NEW, OLD)[0] == FieldChange("items[].qty", "removed", "long", None)
    assert diff_schemas(OLD, OLD) == []


@pytest.fixture(scope="module")
def thousand(tmp_path_factory):
    lake = LakeLayout.at(tmp_path_factory.mktemp("fleet") / "lake")
    write_recorded_fleet(lake, 1000)
    rows = fleet_status(lake)
    return rows, fleet_frame(rows)


def test_fleet_frame_keeps_fleet_status_order_and_values(thousand):
    rows, frame = thousand
    assert list(frame["stream"]) == [r.stream for r in rows]
    assert list(frame["status"]) == [intended_status(int(r.stream[-4:])) for r in rows]
    lagging = next(r for r in rows if r.status == "lagging")
    shown = frame[frame["stream"] == lagging.stream].iloc[0]
    assert shown["backlog_files"] == lagging.backlog.files and shown["group"] == group_of(lagging.stream)
    assert status_counts(rows) == {
        "failed": 100,
        "stalled": 100,
        "lagging": 100,
        "stopped": 100,
        "ok": 400,
        "idle": 200,
    }
    assert list(status_counts(rows)) == list(SEVERITY)


def test_filters_combine_and_search_reads_names_groups_and_reasons(thousand):
    _, frame = thousand
    failed = FleetFilter(statuses=("failed",)).apply(frame)
    assert len(failed) == 100 and set(failed["status"]) == {"failed"}
    assert list(FleetFilter(search="G0042").apply(frame)["stream"]) == ["silver_g0042"]
    assert len(FleetFilter(statuses=("failed", "stalled"), search="boom").apply(frame)) == 100
    assert list(FleetFilter(groups=("g0007", "g0008"), statuses=("lagging",)).apply(frame)["stream"]) == []
    assert len(FleetFilter(groups=("g0006",)).apply(frame)) == 1
    assert len(FleetFilter().apply(frame)) == 1000


def test_sorting_puts_unknown_values_last_and_severity_worst_first(thousand):
    _, frame = thousand
    by_backlog = sort_fleet(frame, "backlog_files", descending=True)
    assert by_backlog.iloc[0]["backlog_files"] == frame["backlog_files"].max()
    assert sort_fleet(frame, "backlog_files", descending=False).iloc[0]["backlog_files"] == 0
    worst = sort_fleet(frame.sample(frac=1, random_state=1), "severity")
    assert list(worst["status"]) == sorted(worst["status"], key=SEVERITY.index)
    assert list(sort_fleet(frame, "stream", descending=False)["stream"][:2]) == ["silver_g0000", "silver_g0001"]
    with pytest.raises(ValueError, match="cannot sort the fleet by `nope`"):
        sort_fleet(frame, "nope")  # type: ignore[arg-type]


def test_pages_cover_every_row_once(thousand):
    _, frame = thousand
    assert page_count(len(frame), 50) == 20 and page_count(0, 50) == 1
    seen = [s for p in range(1, 21) for s in page_of(frame, p, 50)["stream"]]
    assert seen == list(frame["stream"])
    assert list(page_of(frame, 99, 50)["stream"]) == list(frame["stream"][-50:])


def test_text_from_the_lake_cannot_format_link_or_colour_the_page():
    from streamops.dashboards.console.page_shell import plain

    assert plain("[x](http://a) :red[y] *b* `c`") == r"\[x\]\(http\://a\) \:red\[y\] \*b\* \`c\`"


# -- how values read --------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", [None, float("nan"), pd.NaT, pd.NA, "", "  "])
def test_a_missing_value_reads_as_an_em_dash_everywhere(missing):
    assert display.text(missing) == display.EM_DASH
    assert display.seconds(missing) == display.size(missing) == display.count(missing, "files") == display.EM_DASH
    assert display.decimal(missing) == display.utc_time(missing) == display.EM_DASH


def test_text_is_a_value_whatever_it_says_and_numbers_carry_their_unit():
    assert display.text("null") == "null" and display.text(0) == "0"
    assert display.count(1234, "files") == "1,234 files" and display.decimal(1674.6) == "1,675"
    assert display.seconds(45) == "45s" and display.size(1536) == "1.5 KB"


def test_times_read_as_24_hour_utc_whatever_zone_they_come_in():
    assert display.utc_time(0) == "1970-01-01 00:00:00 UTC"
    assert display.utc_time(pd.Timestamp("2026-11-27 21:57:03", tz="Europe/Paris")) == "2026-11-27 20:57:03 UTC"
    assert display.utc_time(pd.Timestamp("2026-11-27 20:57:03")) == "2026-11-27 20:57:03 UTC", "naive is UTC"


def test_a_table_holds_no_empty_text_and_its_times_are_utc_and_titled_so():
    frame = pd.DataFrame(
        {
            "sink_commits": ["silver/a v1", "", None],
            "lag_seconds": [1.0, None, 2.0],
            "committed_at": pd.to_datetime(["2026-11-27 20:57:03", None, "2026-11-27 21:00:00"]),
        }
    )
    shown = display.display_frame(frame)
    assert shown["sink_commits"].tolist()[1:] == [None, None]
    assert str(shown["committed_at"].dt.tz) == "UTC" and shown["committed_at"].iloc[0].hour == 20
    config = display.table_config(shown, {"sink_commits": {"label": "sink commits"}})
    assert config["sink_commits"] == {"label": "sink commits"}, "what the page configured is kept"
    assert config["lag_seconds"]["label"] == "lag (s)"
    assert config["committed_at"]["label"] == "committed at (UTC)"
    assert config["committed_at"]["type_config"]["format"] == display.GRID_TIME_FORMAT
    assert "HH" in display.GRID_TIME_FORMAT and "hh" not in display.GRID_TIME_FORMAT


# -- what a source reads ------------------------------------------------------------------------------

LAKE = Location.local("/data/lake")
EMBEDDED = "org.apache.spark.sql.execution.datasources.v2.python.PythonMicroBatchStreamWithAdmissionControl"
BRONZE_ID = "4a9a5c0e-0a43-4c8b-9d0f-7b7a4f1f2c11"


def delta_offset(table_id: str) -> str:
    return json.dumps(
        {"sourceVersion": 1, "reservoirId": table_id, "reservoirVersion": 3, "index": -1, "isStartingVersion": False}
    )


def tables_by_id(table_id: str) -> Location | None:
    return LAKE / "bronze" / "events" if table_id == BRONZE_ID else None


@pytest.mark.parametrize(
    ("description", "kind", "offsets", "layout", "reads"),
    [
        (EMBEDDED, "delta", [delta_offset(BRONZE_ID)], None, "bronze/events"),
        (
            EMBEDDED,
            "delta",
            [None, delta_offset("elsewhere")],
            LAKE / "_system" / "schema_registry",
            "_system/schema_registry",
        ),
        (EMBEDDED, "delta", [delta_offset("elsewhere")], None, "Delta table elsewhere"),
        ("DeltaSource[file:/data/lake/bronze/events]", "delta", [], None, "bronze/events"),
        ("DeltaSource[s3://other/orders]", "delta", [], None, "s3://other/orders"),
        ("KafkaV2[Subscribe[events]]", "kafka", [], None, "topic events"),
        ("KafkaV2[Subscribe[a,b]]", "kafka", [], None, "topics a, b"),
        ("KafkaV2[SubscribePattern[game-.*]]", "kafka", [], None, "topics matching game-.*"),
        ("KafkaSource[Assign[orders-0, orders-1]]", "kafka", [], None, "topic orders"),
        ("com.example.KafkaReader", "kafka", ['{"clicks": {"0": 5, "1": 7}}'], None, "topic clicks"),
        ("FileStreamSource[file:/data/landing]", "file", [], None, "/data/landing"),
        ("FileStreamSource[file:/data/lake/landing]", "file", [], None, "landing"),
        (
            "RateStreamV2[rowsPerSecond=20, rampUpTimeSeconds=0, numPartitions=default",
            "rate",
            [],
            None,
            "generated rows, 20 rows/s",
        ),
        (
            "RatePerMicroBatchStream[rowsPerBatch=5, numPartitions=1]",
            "rate_micro_batch",
            [],
            None,
            "generated rows, 5 rows a batch",
        ),
        (EMBEDDED, "python", [], None, "a Python data source"),
        ("com.example.sources.Mystery@1a2b3c", "unknown", [], None, "a source Spark does not name"),
        ("TextSocketV2[localhost:9999]", "socket", [], None, "localhost:9999"),
    ],
)
def test_a_source_is_named_by_what_it_reads(description, kind, offsets, layout, reads):
    named = source_name(description, kind, offsets, LAKE, tables_by_id, layout)
    assert named == reads
    assert not is_class_name(named)


def test_class_names_are_recognised():
    assert is_class_name(EMBEDDED) and is_class_name("com.example.sources.Mystery@1a2b3c")
    assert not is_class_name("bronze/events") and not is_class_name("KafkaV2[Subscribe[a.b]]")


# -- charts ---------------------------------------------------------------------------------------------


def test_per_minute_charts_draw_only_the_minutes_that_have_data():
    minutes = pd.DataFrame(
        {"minute": pd.to_datetime(["2026-11-27 21:30", "2026-11-27 20:57"], utc=True), "rows": [3, 5]}
    )
    x = charts.trend(minutes, "rows", "Rows read per minute").to_dict()["encoding"]["x"]
    assert x["type"] == "ordinal" and x["sort"] == ["20:57", "21:30"] and "UTC" in x["title"]


@pytest.mark.parametrize(("span", "label"), [(90, "%H:%M:%S"), (3 * 3600, "%H:%M"), (3 * 86400, "%m-%d %H:%M")])
def test_time_axes_are_24_hour_utc_at_any_span(span, label):
    start = pd.Timestamp("2026-11-27 20:57:03", tz="UTC")
    frame = pd.DataFrame({"timestamp": [start, start + pd.Timedelta(seconds=span)]})
    x = charts.time_axis(frame, "timestamp").to_dict()
    assert x["scale"] == {"type": "utc"} and x["axis"]["format"] == label and "UTC" in x["title"]


@pytest.mark.parametrize("page", [APP_PATH, *sorted(APP_PATH.parent.glob("*_view.py"))], ids=lambda p: p.name)
def test_a_page_script_holds_no_string_streamlit_would_draw(page):
    """Streamlit draws every bare string of a page script's top level but its docstring (its
    "magic"): a docstring under a constant there lands on the page."""
    body = ast.parse(page.read_text()).body
    floating = [
        node.lineno
        for node in body[1:]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    ]
    assert floating == [], f"{page.name}: string literals at lines {floating}"
