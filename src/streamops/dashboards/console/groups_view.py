"""Event groups: which streaming query serves which event types, and how that query is doing.

A silver stream `silver_<group>` serves every event type of its group, so a failed group stream
means every one of its event types stops getting fresh rows: this view names them.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout, silver_stream
from streamops.dashboards.console import charts, lake_reads
from streamops.dashboards.console.display import GRID_TIME_FORMAT, show_table
from streamops.dashboards.console.page_shell import open_lake, page_path
from streamops.monitor.fleet_status import StreamStatusRow


def group_summary(groups: pd.DataFrame, rows: list[StreamStatusRow]) -> pd.DataFrame:
    """One row per group: its stream, the stream's status, and its event types."""
    status = {row.stream: row.status for row in rows}
    summary = (
        groups.groupby("group")
        .agg(
            event_types=("event_type", "size"),
            types=("event_type", lambda t: ", ".join(sorted(t))),
            first_assigned=("assigned_at", "min"),
        )
        .reset_index()
    )
    summary.insert(1, "stream", summary["group"].map(silver_stream))
    summary.insert(2, "status", summary["stream"].map(lambda s: status.get(s, "no progress")))
    return summary


def render(lake: LakeLayout) -> None:
    st.title("Event groups")
    root = str(lake.root)
    groups = lake_reads.event_groups(root)
    if groups is None or groups.empty:
        st.info("No event group yet: the management stream assigns one when the registry sees a new event type.")
        return
    try:
        rows, _ = lake_reads.fleet(root)
    except StreamopsError:
        rows = []
    summary = group_summary(groups, rows)
    st.caption(f"{len(groups)} event types in {len(summary)} groups, one silver stream each")
    selection = show_table(
        summary,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key="group_table",
        column_config={
            "group": st.column_config.TextColumn("group", width=70),
            "stream": st.column_config.TextColumn("stream", width=120),
            "status": st.column_config.TextColumn("status", width=80),
            "event_types": st.column_config.NumberColumn("event types", format="%d", width=85),
            "types": st.column_config.TextColumn("names", width=260),
            "first_assigned": st.column_config.DatetimeColumn(
                "first assigned (UTC)", format=GRID_TIME_FORMAT, timezone="UTC", width=150
            ),
        },
    )
    st.caption("Click a group to open its stream.")
    st.altair_chart(charts.bars(summary, "group", "event_types", "Event types per group"), width="stretch")
    chosen = selection.selection.rows if selection is not None else []
    if chosen:
        st.switch_page(page_path("stream_view.py"), query_params={"stream": summary.iloc[chosen[0]]["stream"]})
    search = st.text_input("Find an event type", key="event_type_search", placeholder="e.g. match_end")
    shown = (
        groups[groups["event_type"].str.contains(search.strip(), case=False, regex=False)] if search.strip() else groups
    )
    show_table(shown, hide_index=True, key="assignments")


if __name__ == "__main__":
    render(open_lake())
