"""Change data capture: each source table's state in the lake, and how fast changes reach it.

Read from `_system/cdc_applies`, which a CDC stream writes in the same idempotent commits as the
batch's MERGEs: a row there is a change set that reached its table, never one that was only
attempted. Per table: its rows now, what the changes did (a high "changed nothing" count is
replays or late changes a newer one already superseded), and the lag from the database's commit
to the lake's, last batch and p95 over the recent ones. A table whose stream stopped keeps its
last lag here: its status (from the progress log, as on the Fleet page) says so.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.console import charts, display, lake_reads
from streamops.dashboards.console.display import show_table
from streamops.dashboards.console.page_shell import open_lake, page_path

# A page script's constants carry comments, not docstrings: Streamlit would draw a string literal.
RECENT_BATCHES = 100  # batches per table the p95 lag covers
SHOWN_BATCHES = 300  # newest batches of the chosen table its charts draw
# The tables' summary: what answers "is it current?" first.
SUMMARY_COLUMNS = [
    "table",
    "status",
    "rows",
    "lag_seconds",
    "p95_lag_seconds",
    "last_apply",
    "batches",
    "changes",
    "inserted",
    "updated",
    "deleted",
    "changed_nothing",
    "truncates",
    "stream",
]


def table_summary(applies: pd.DataFrame, rows: dict[str, int | None], status: dict[str, str]) -> pd.DataFrame:
    """One row per CDC table: its stream and status, rows now, totals, and its lag."""
    by_table = applies.sort_values("committed_at", kind="stable").groupby("table")
    summary = by_table.agg(
        stream=("stream", "last"),
        batches=("batch_id", "size"),
        changes=("changes", "sum"),
        inserted=("inserted", "sum"),
        updated=("updated", "sum"),
        deleted=("deleted", "sum"),
        ignored=("ignored", "sum"),
        truncates=("truncated", "sum"),
        last_apply=("committed_at", "last"),
        lag_seconds=("lag_seconds", "last"),
    )
    recent = by_table.tail(RECENT_BATCHES).groupby("table")["lag_seconds"]
    summary["p95_lag_seconds"] = recent.quantile(0.95)
    summary.insert(1, "status", summary["stream"].map(lambda s: status.get(s, "no progress")))
    summary.insert(2, "rows", summary.index.map(rows).astype("Int64"))
    return summary.reset_index().rename(columns={"ignored": "changed_nothing"})


def render(lake: LakeLayout) -> None:
    st.title("Change data capture")
    root = str(lake.root)
    applies = lake_reads.cdc_applies(root)
    if applies is None or applies.empty:
        st.info(
            "No CDC table yet: `streamops run --cdc debezium` keeps one silver table per source table "
            "(docs: Change data capture)."
        )
        return
    try:
        statuses, _ = lake_reads.fleet(root)
    except StreamopsError:
        statuses = []
    tables = tuple(sorted(applies["table"].unique()))
    summary = table_summary(
        applies, lake_reads.cdc_table_rows(root, tables), {row.stream: row.status for row in statuses}
    )
    st.caption(
        f"{len(summary)} tables kept current from {int(summary['changes'].sum()):,} changes; lag is the "
        "database's commit to the lake's, of the newest change of the table's last batch "
        f"(p95: over its last {RECENT_BATCHES} batches)"
    )
    show_table(
        summary,
        hide_index=True,
        key="cdc_tables",
        column_order=SUMMARY_COLUMNS,
        column_config={
            "rows": st.column_config.NumberColumn("rows now", format="localized"),
            "last_apply": st.column_config.DatetimeColumn(
                "last apply (UTC)", format=display.GRID_TIME_FORMAT, timezone="UTC"
            ),
            "lag_seconds": st.column_config.NumberColumn("lag (s)", format="%.1f"),
            "p95_lag_seconds": st.column_config.NumberColumn("p95 lag (s)", format="%.1f"),
            "changed_nothing": st.column_config.NumberColumn("changed nothing"),
        },
    )
    table = st.selectbox("Table", list(tables), key="table", bind="query-params")
    chosen = applies[applies["table"] == table].tail(SHOWN_BATCHES)
    left, right = st.columns(2)
    left.altair_chart(charts.cdc_lag(chosen), width="stretch")
    right.altair_chart(charts.cdc_changes(chosen), width="stretch")
    stream = summary.loc[summary["table"] == table, "stream"].iloc[0]
    if st.button(f"Open stream `{stream}`", key="open_stream"):
        st.switch_page(page_path("stream_view.py"), query_params={"stream": stream})
    show_table(chosen.iloc[::-1], hide_index=True, key="cdc_batches")


if __name__ == "__main__":
    render(open_lake())
