"""Every console view, run with Streamlit's AppTest on a lake the real pipeline wrote.

Each test compares what the page shows with what the lake holds, read independently (delta-rs,
the generator's manifest, checkpoint_tools), so a view that showed stale, partial or made-up
data would fail.
"""

from __future__ import annotations

import json
import os

import pytest
from built_lake import FAILING_STREAM

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.console.page_shell import plain
from streamops.dashboards.console.schema_diff import diff_schemas
from streamops.monitor.fleet_status import fleet_status


def table(path) -> list[dict]:
    return read_delta(str(path)).to_pylist()


def texts(at) -> str:
    """Every piece of text on the page, for `in` checks."""
    parts = [
        e.value
        for kind in ("markdown", "caption", "title", "subheader", "error", "warning", "success", "info")
        for e in getattr(at, kind)
    ]
    parts += [e.value for e in at.get("code")]
    return "\n".join(str(p) for p in parts)


def frame(at, *columns: str, without: str = ""):
    """The one table on the page that has all of `columns` (and not the column `without`)."""
    matches = [d.value for d in at.dataframe if set(columns) <= set(d.value.columns) and without not in d.value.columns]
    assert len(matches) == 1, f"{len(matches)} tables with columns {columns} on the page"
    return matches[0]


def raised(at) -> list[str]:
    """Each exception the page raised, with where."""
    return [e.value + "\n" + "".join(e.stack_trace) for e in at.exception]


def open_page(console, lake, page: str, **params):
    at = console(lake).run()
    assert not at.exception, raised(at)
    if page != "fleet_view.py":
        at.switch_page(page)
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, raised(at)
    return at


def lake_files(lake: LakeLayout) -> dict[str, tuple[int, int]]:
    return {
        os.path.join(d, f): (os.stat(os.path.join(d, f)).st_size, os.stat(os.path.join(d, f)).st_mtime_ns)
        for d, _, files in os.walk(lake.root)
        for f in files
    }


# -- fleet ----------------------------------------------------------------------------------------


def test_fleet_counts_every_stream_and_puts_the_failed_one_first_in_red(console, built_lake):
    lake = built_lake.lake
    expected = fleet_status(lake)
    at = open_page(console, lake, "fleet_view.py")
    page = texts(at)
    assert f"{len(expected)} streams, judged at" in page
    (banner,) = at.error
    assert "1 stream needs attention now" in banner.value
    assert f"FAILED `{FAILING_STREAM}`: {plain('ValueError: boom in batch 1')}" in banner.value
    big_numbers = [m.value for m in at.markdown if m.value.startswith("## ")]
    assert big_numbers[:3] == [f"## {len(expected)}", "## :red[1]", "## :gray[0]"]  # total, failed, stalled
    shown = frame(at, "last_batch_age_seconds")
    assert list(shown["stream"]) == [r.stream for r in expected]
    assert shown.iloc[0]["status"] == "failed" and shown.iloc[0]["stream"] == FAILING_STREAM
    assert set(shown["stream"]) >= {"bronze", "management", "silver_g0001", "silver_g0002"}
    assert set(shown.loc[shown["stream"] == "silver_g0001", "group"]) == {"g0001"}
    titles = [json.loads(c.proto.spec)["title"] for c in at.get("vega_lite_chart")]
    assert titles == ["Rows read per minute", "Batches per minute", "Worst backlog (s)"]


def test_fleet_filters_search_and_sort(console, built_lake):
    at = open_page(console, built_lake.lake, "fleet_view.py")
    at.multiselect(key="status_filter").set_value(["stopped"]).run()
    stopped = frame(at, "last_batch_age_seconds")
    assert FAILING_STREAM not in set(stopped["stream"]) and set(stopped["status"]) == {"stopped"}
    at.text_input(key="search").set_value("g0002").run()
    assert list(frame(at, "last_batch_age_seconds")["stream"]) == ["silver_g0002"]
    at.text_input(key="search").set_value("").run()
    at.multiselect(key="status_filter").set_value([]).run()
    at.selectbox(key="sort").set_value("stream").run()
    at.selectbox(key="descending").set_value(False).run()
    names = list(frame(at, "last_batch_age_seconds")["stream"])
    assert names == sorted(names)


def test_the_fleet_table_shows_few_columns_and_the_picker_adds_the_others(console, built_lake):
    at = open_page(console, built_lake.lake, "fleet_view.py")
    (table,) = [d for d in at.dataframe if "last_batch_age_seconds" in d.value.columns]
    shown = list(table.proto.column_order)
    assert shown[:2] == ["status", "stream"] and "reason" in shown
    assert not {"group", "backlog_files", "backlog_bytes", "backlog_versions", "last_batch_id"} & set(shown)
    at.multiselect(key="fleet_columns").set_value([*shown[2:], "group", "backlog_files"]).run()
    (table,) = [d for d in at.dataframe if "last_batch_age_seconds" in d.value.columns]
    assert {"group", "backlog_files"} <= set(table.proto.column_order)
    assert list(table.proto.column_order)[:3] == ["status", "stream", "group"], "in the table's own order"


def test_an_empty_lake_says_what_is_missing_on_every_page(console, tmp_path):
    empty = LakeLayout.at(tmp_path)
    fleet = open_page(console, empty, "fleet_view.py")
    assert "Nothing to show yet: no progress log" in fleet.info[0].value
    assert "No stream has recorded progress" in open_page(console, empty, "stream_view.py").info[0].value
    assert "schema registry is empty" in open_page(console, empty, "schema_view.py").info[0].value
    assert "Nothing quarantined" in open_page(console, empty, "quarantine_view.py").success[0].value
    assert "No event group yet" in open_page(console, empty, "groups_view.py").info[0].value


def test_a_missing_lake_is_one_line(console, tmp_path):
    at = console(tmp_path / "nowhere").run()
    assert [e.value for e in at.error] == [f"the lake `{tmp_path / 'nowhere'}` does not exist: check --lake"]


# -- stream -----------------------------------------------------------------------------------------


def test_stream_view_ties_batches_to_source_versions_and_sink_commits(console, built_lake):
    from streamops.checkpoint_tools.correlation import correlate

    lake = built_lake.lake
    at = open_page(console, lake, "stream_view.py", stream="silver_g0001")
    assert [t.value for t in at.title] == ["silver_g0001"]
    assert ":gray[**STOPPED**]" in texts(at)
    expected = correlate(lake.checkpoint("silver_g0001"), lake=lake, last_batches=20).to_json()
    batches = frame(at, "sink_commits", "source_versions")
    assert list(batches["batch_id"]) == sorted((b["batch_id"] for b in expected["batches"]), reverse=True)
    for _, shown in batches.iterrows():
        truth = next(b for b in expected["batches"] if b["batch_id"] == shown["batch_id"])
        versions = truth["source"]["versions"]
        assert shown["source_versions"] == (
            f"{min(versions)}" if len(set(versions)) == 1 else f"{min(versions)}-{max(versions)}"
        )
        assert shown["source_rows"] == truth["source"]["rows"]
        for commit in truth["sink_commits"]:
            assert f"{os.path.relpath(commit['table'], lake.root)} v{commit['version']}" in shown["sink_commits"]
    assert any("silver/" in cell for cell in batches["sink_commits"])
    newest = batches.iloc[0]["batch_id"]
    files = frame(at, "is_starting_version")
    truth_files = next(b for b in expected["batches"] if b["batch_id"] == newest)["source"]["files"]
    assert list(files["path"]) == [f["path"] for f in truth_files]
    charts = [json.loads(c.proto.spec)["title"] for c in at.get("vega_lite_chart")]
    assert charts == ["Input vs processed rows/s", "Batch duration by phase (ms)", "Backlog (seconds)"]
    sources = frame(at, "reads", "kind")
    assert list(sources["reads"]) == ["bronze/events"] and list(sources["kind"]) == ["delta"]
    assert "No finding: a restart would resume cleanly." in texts(at) or len(frame(at, "code", "fix"))


def test_stream_view_of_the_failed_stream_shows_why_and_the_doctors_findings(console, built_lake):
    at = open_page(console, built_lake.lake, "stream_view.py", stream=FAILING_STREAM)
    page = texts(at)
    assert f":red[**FAILED**] {plain('ValueError: boom in batch 1')}" in page
    findings = frame(at, "code", "fix")
    assert "uncommitted_batch" in set(findings["code"])
    row = findings[findings["code"] == "uncommitted_batch"].iloc[0]
    assert row["severity"] in ("warning", "info") and "restart" in row["fix"].lower()
    batches = frame(at, "batch_id", "planned_at")
    assert {"committed", "planned"} <= set(batches["status"])  # batch 1 planned, never committed
    assert "source_versions" not in batches and "sink_commits" not in batches, "a rate source into foreachBatch"


def test_stream_view_ignores_a_stream_name_that_is_not_in_the_lake(console, built_lake):
    at = open_page(console, built_lake.lake, "stream_view.py", stream="../../etc")
    worst = fleet_status(built_lake.lake)[0].stream
    assert [t.value for t in at.title] == [worst]


# -- schemas --------------------------------------------------------------------------------------


def test_schema_view_shows_history_diff_and_prototype_from_the_registry(console, built_lake):
    lake, manifest = built_lake.lake, built_lake.manifest
    registry = table(lake.schema_registry)
    drifted = sorted(manifest["drift"]["new_attribute_top"])[0]
    rows = sorted((r for r in registry if r["event_type"] == drifted), key=lambda r: r["seen_order"])
    at = open_page(console, lake, "schema_view.py", event_type=drifted)
    history = frame(at, "variation_hash", "changes")
    assert list(history["variation_hash"]) == [r["variation_hash"] for r in rows]
    assert list(history["change_kind"]) == ["new_event_type", "added_fields"]
    added = json.loads(rows[1]["changed_fields"])[0]["path"]
    assert added in history.iloc[1]["changes"]

    at.radio(key="diff_basis").set_value("variations").run()
    diff = frame(at, "path", "change")
    expected = diff_schemas(rows[0]["variation_schema_json"], rows[1]["variation_schema_json"])
    assert [tuple(r) for r in diff[["path", "change"]].itertuples(index=False)] == [
        (c.path, c.change) for c in expected
    ]
    assert added in set(diff["path"]) and set(diff["change"]) == {"added"}

    prototype = json.loads(rows[-1]["prototype"])
    assert json.dumps(prototype, indent=2) in [c.value for c in at.get("code")]


def test_schema_view_shows_the_incompatible_change_alert(console, built_lake):
    lake, manifest = built_lake.lake, built_lake.manifest
    (incompatible,) = manifest["drift"]["incompatible_type"]
    alerts = [a for a in table(lake.schema_alerts) if a["event_type"] == incompatible]
    at = open_page(console, lake, "schema_view.py", event_type=incompatible)
    assert "incompatible schema change" in at.warning[0].value
    shown = frame(at, "field", "rows_affected", without="event_type")
    assert list(shown["field"]) == [a["field"] for a in alerts] and "player.level" in set(shown["field"])
    level = shown[shown["field"] == "player.level"]
    assert level["rows_affected"].sum() == manifest["event_types"][incompatible]["incompatible_rows"]


# -- quarantine and groups ------------------------------------------------------------------------


def test_quarantine_counts_match_the_manifest_and_records_show_their_text(console, built_lake):
    lake, manifest = built_lake.lake, built_lake.manifest
    at = open_page(console, lake, "quarantine_view.py", reason="malformed_json")
    counts = frame(at, "rows").groupby("reason")["rows"].sum().to_dict()
    expected = {k: v for k, v in manifest["expected_quarantine"].items() if v}
    assert counts == expected, "incompatible values are rescued in silver, not quarantined (the default policy)"
    records = frame(at, "raw_text")
    assert set(records["reason"]) == {"malformed_json"} and len(records) == expected["malformed_json"]
    raw = {r["raw_text"] for r in table(lake.bronze_quarantine) if r["reason"] == "malformed_json"}
    (full_text,) = [c.value for c in at.main.get("code")]
    assert full_text in raw


def test_groups_view_lists_each_group_its_stream_and_its_event_types(console, built_lake):
    lake = built_lake.lake
    assignments = table(lake.event_groups)
    at = open_page(console, lake, "groups_view.py")
    summary = frame(at, "types")
    by_group: dict[str, list[str]] = {}
    for row in assignments:
        by_group.setdefault(row["group"], []).append(row["event_type"])
    assert list(summary["group"]) == sorted(by_group)
    for _, row in summary.iterrows():
        assert row["stream"] == f"silver_{row['group']}"
        assert row["types"] == ", ".join(sorted(by_group[row["group"]]))
        assert row["status"] == "stopped"
    at.text_input(key="event_type_search").set_value(assignments[0]["event_type"]).run()
    assert assignments[0]["event_type"] in set(frame(at, "management_batch_id")["event_type"])


def test_no_view_writes_to_the_lake(console, built_lake):
    lake = built_lake.lake
    before = lake_files(lake)
    for page in ("fleet_view.py", "stream_view.py", "schema_view.py", "quarantine_view.py", "groups_view.py"):
        open_page(console, lake, page)
    assert lake_files(lake) == before


@pytest.mark.parametrize("page", ["stream_view.py", "schema_view.py", "quarantine_view.py"])
def test_pages_bind_their_choice_to_the_url(console, built_lake, page):
    """Names come from lists read from the lake; an unknown one from the URL is never used."""
    key = {"stream_view.py": "stream", "schema_view.py": "event_type", "quarantine_view.py": "reason"}[page]
    at = open_page(console, built_lake.lake, page, **{key: "x/../../y"})
    assert at.selectbox(key=key).value != "x/../../y"
