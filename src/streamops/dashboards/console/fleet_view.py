"""Fleet view: every stream's status at a glance, worst first, for fleets of hundreds.

Failed and stalled streams are counted in big red numbers and listed by name above everything
else; the table below is filtered, sorted and paged in memory (one `fleet_status` pass per cache
interval, no per-stream reads), and a row click opens that stream's view.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.console import charts, lake_reads
from streamops.dashboards.console.display import EM_DASH, display_frame, readable_times, show_table, utc_time
from streamops.dashboards.console.fleet_table import (
    COLUMNS,
    SORT_KEYS,
    FleetFilter,
    fleet_frame,
    page_count,
    page_of,
    sort_fleet,
    status_counts,
)
from streamops.dashboards.console.page_shell import open_lake, page_path, plain
from streamops.monitor.fleet_status import StreamStatusRow
from streamops.monitor.status_severity import ATTENTION, SEVERITY, WARNING, status_color

PAGE_SIZES = (25, 50, 100, 200)
ROW_HEIGHT = 35
TABLE_MAX_HEIGHT = 1200
ATTENTION_LISTED = 10
SORT_LABELS = {
    "severity": "status (worst first)",
    "backlog_seconds": "backlog seconds",
    "backlog_files": "backlog files",
    "backlog_bytes": "backlog bytes",
    "freshness_seconds": "freshness",
    "input_rows_per_second": "input rows/s",
    "processed_rows_per_second": "processed rows/s",
    "last_batch_age_seconds": "last batch age",
    "stream": "stream name",
}
# Each column's title and width: the default columns fit a 1280-pixel window beside the sidebar.
COLUMN_CONFIG = {
    "status": st.column_config.TextColumn("status", width=75),
    "stream": st.column_config.TextColumn("stream", width=120),
    "group": st.column_config.TextColumn("group", width=70),
    "last_batch_id": st.column_config.NumberColumn("last batch", format="%d", width=80),
    "last_batch_age_seconds": st.column_config.NumberColumn("last batch age", format="duration", width=100),
    "backlog_versions": st.column_config.NumberColumn("backlog versions", format="localized", width=80),
    "backlog_files": st.column_config.NumberColumn("backlog files", format="localized", width=80),
    "backlog_bytes": st.column_config.NumberColumn("backlog bytes", format="bytes", width=90),
    "backlog_seconds": st.column_config.NumberColumn("backlog (s)", format="%.0f s", width=85),
    "freshness_seconds": st.column_config.NumberColumn("freshness", format="duration", width=90),
    "input_rows_per_second": st.column_config.NumberColumn("rows/s in", format="%.1f", width=70),
    "processed_rows_per_second": st.column_config.NumberColumn("rows/s out", format="%.1f", width=80),
    "reason": st.column_config.TextColumn("reason", width=160),
}
# Shown until the column picker says otherwise; status and stream are always shown.
DEFAULT_COLUMNS = (
    "status",
    "stream",
    "last_batch_age_seconds",
    "backlog_seconds",
    "freshness_seconds",
    "input_rows_per_second",
    "processed_rows_per_second",
    "reason",
)
ALWAYS_SHOWN = ("status", "stream")


def render(lake: LakeLayout) -> None:
    st.title("Fleet")
    root = str(lake.root)
    try:
        rows, judged_at = lake_reads.fleet(root)
    except StreamopsError as error:
        st.info(f"Nothing to show yet: {error}")
        return
    st.caption(f"{len(rows)} streams, judged at {utc_time(judged_at)} by the status rules of `streamops status`")
    _attention(rows, lake)
    _counts(status_counts(rows))
    _trends(root)
    _table(rows, judged_at)


def _attention(rows: list[StreamStatusRow], lake: LakeLayout) -> None:
    urgent = [row for row in rows if row.status in ATTENTION]
    if not urgent:
        st.success("No failed or stalled stream.")
        return
    lines = [
        f"- {row.status.upper()} `{row.stream}`: {plain(readable_times(row.reason))}"
        for row in urgent[:ATTENTION_LISTED]
    ]
    if len(urgent) > ATTENTION_LISTED:
        lines.append(f"- ... and {len(urgent) - ATTENTION_LISTED} more (filter the table by status)")
    st.error(
        f"**{len(urgent)} stream{'s' if len(urgent) > 1 else ''} need{'' if len(urgent) > 1 else 's'} "
        "attention now**\n\n" + "\n".join(lines) + "\n\nClick a row below for its batches and the "
        f"checkpoint doctor's findings, or run `streamops checkpoint doctor --lake {lake.root}`.",
        icon=":material/error:",
    )


def _counts(counts: dict[str, int]) -> None:
    columns = st.columns(len(SEVERITY) + 1)
    with columns[0].container(border=True):
        st.caption("streams")
        st.markdown(f"## {sum(counts.values())}")
    for column, status in zip(columns[1:], SEVERITY):
        with column.container(border=True):
            st.caption(status)
            count = counts[status]
            color = status_color(status) if count and status in ATTENTION + WARNING else "gray"
            st.markdown(f"## :{color}[{count}]")


def _trends(root: str) -> None:
    trend = lake_reads.fleet_trend(root)
    if trend.empty:
        st.caption(f"No batch in the last {lake_reads.TREND_MINUTES} minutes.")
        return
    left, middle, right = st.columns(3)
    left.altair_chart(charts.trend(trend, "rows", "Rows read per minute"), width="stretch")
    middle.altair_chart(charts.trend(trend, "batches", "Batches per minute"), width="stretch")
    right.altair_chart(charts.trend(trend, "max_backlog_seconds", "Worst backlog (s)"), width="stretch")


def _table(rows: list[StreamStatusRow], judged_at: float) -> None:
    frame = fleet_frame(rows, now=judged_at)
    counts = frame["status"].value_counts()
    groups = sorted(g for g in frame["group"].unique() if g)
    a, b, c = st.columns([3, 2, 3])
    statuses = a.multiselect("Status", SEVERITY, key="status_filter", format_func=lambda s: f"{s} ({counts.get(s, 0)})")
    chosen_groups = b.multiselect("Group", groups, key="group_filter")
    search = c.text_input("Search", key="search", placeholder="stream, group or reason")
    d, e, f, g, h = st.columns([3, 2, 1.5, 1.5, 2], vertical_alignment="bottom")
    sort_key = d.selectbox("Sort by", SORT_KEYS, format_func=SORT_LABELS.__getitem__, key="sort")
    descending = e.selectbox(
        "Order", (True, False), format_func=lambda v: "high first" if v else "low first", key="descending"
    )
    page_size = f.selectbox("Rows", PAGE_SIZES, index=1, key="page_size")
    shown = sort_fleet(FleetFilter(tuple(statuses), tuple(chosen_groups), search).apply(frame), sort_key, descending)
    pages = page_count(len(shown), page_size)
    page = g.number_input("Page", min_value=1, max_value=pages, value=1, step=1, key="page")
    with h.popover("Columns", icon=":material/view_column:", width="stretch"):
        picked = st.multiselect(
            "Columns shown",
            [c for c in COLUMNS if c not in ALWAYS_SHOWN],
            default=[c for c in DEFAULT_COLUMNS if c not in ALWAYS_SHOWN],
            format_func=lambda c: COLUMN_CONFIG[c]["label"],
            key="fleet_columns",
        )
    window = display_frame(page_of(shown, int(page), page_size).reset_index(drop=True))
    window["reason"] = window["reason"].map(lambda r: readable_times(r) if isinstance(r, str) else r)
    st.caption(
        f"{len(shown)} of {len(frame)} streams match · page {min(int(page), pages)} of {pages} · "
        "click a row to open the stream"
    )
    selection = show_table(
        window.style.map(_status_style, subset=["status"]).apply(_attention_row, axis=1).format(na_rep=EM_DASH),
        column_config=COLUMN_CONFIG,
        column_order=[c for c in COLUMNS if c in ALWAYS_SHOWN or c in picked],
        hide_index=True,
        height=min(TABLE_MAX_HEIGHT, ROW_HEIGHT * (len(window) + 1) + 3),
        on_select="rerun",
        selection_mode="single-row",
        key="fleet_table",
    )
    chosen = selection.selection.rows if selection is not None else []
    if chosen:
        st.switch_page(page_path("stream_view.py"), query_params={"stream": window.iloc[chosen[0]]["stream"]})


def _status_style(status: str) -> str:
    color = charts.COLOR_HEX[status_color(status)]
    return f"color: {color}; font-weight: bold"


def _attention_row(row: pd.Series) -> list[str]:
    background = "background-color: rgba(214, 39, 40, 0.12)" if row["status"] in ATTENTION else ""
    return [background] * len(row)


if __name__ == "__main__":
    render(open_lake())
