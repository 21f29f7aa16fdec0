"""The console's pure parts: schema diffs, and the fleet table's filters, sorting and pages."""

from __future__ import annotations

import json

import pytest
from recorded_fleet import intended_status, write_recorded_fleet

from streamops.core.lake_layout import LakeLayout, group_of
from streamops.dashboards.console.fleet_table import (
    FleetFilter,
    fleet_frame,
    page_count,
    page_of,
    sort_fleet,
    status_counts,
)
from streamops.dashboards.console.schema_diff import FieldChange, diff_schemas, flatten_schema
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
