"""Stream view: one stream's recent batches, from rates to the sink commits they made.

Answers the on-call questions in order: what is its status and why; how far behind is each
source; how big is its state and how far does its watermark trail; is input outrunning
processing; which phase of a batch takes the time; is the backlog growing; which source
versions did batch N read and did its write land (checkpoint_tools' correlation); and what would
a restart meet (the checkpoint doctor's findings, each with its fix).
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout
from streamops.core.storage.location import Location
from streamops.dashboards.console import charts, display, lake_reads
from streamops.dashboards.console.batch_table import (
    batch_rows,
    files_read,
    landing_file_rows,
    sink_commit_rows,
    table_name,
)
from streamops.dashboards.console.display import show_table
from streamops.dashboards.console.page_shell import code_span, open_lake, plain, severity_badge, status_badge
from streamops.dashboards.console.source_names import source_name
from streamops.monitor.fleet_status import StreamStatusRow

BATCH_WINDOWS = (20, 50, 100)
BACKLOG_MEASURES = ("seconds", "records", "files", "bytes", "versions")
LANDING_FILES_SHOWN = 500
CARDS_PER_ROW = 4


def render(lake: LakeLayout) -> None:
    root = str(lake.root)
    try:
        rows, _ = lake_reads.fleet(root)
    except StreamopsError:
        rows = []
    by_name = {row.stream: row for row in rows}
    streams = list(by_name) + [s for s in lake_reads.checkpoint_streams(root) if s not in by_name]
    if not streams:
        st.title("Stream")
        st.info("No stream has recorded progress or a checkpoint in this lake yet.")
        return
    stream = st.selectbox("Stream", streams, key="stream", bind="query-params")
    lake.checkpoint(stream)  # the name reaches a path below: refuse anything that could leave the lake
    st.title(stream)
    row = by_name.get(stream)
    _status(row)
    reads = _sources(lake, stream, row) if row is not None else []
    history = lake_reads.stream_history(root, stream)
    _charts(history)
    _batches(lake, stream, history, reads)
    _doctor(root, stream)


def _status(row: StreamStatusRow | None) -> None:
    if row is None:
        st.markdown(":gray[**NO PROGRESS**] this stream has a checkpoint but no row in the progress log")
        return
    st.markdown(f"{status_badge(row.status)} {plain(display.readable_times(row.reason))}")
    backlog = row.backlog
    versions = any(lag.kind == "delta" for lag in row.sources)
    cards = [
        ("Last batch", display.text(row.last_batch_id), None),
        (
            "Backlog",
            display.EM_DASH if backlog is None else display.count(backlog.files, "files"),
            None
            if backlog is None
            else display.size(backlog.bytes) + (f", {display.count(backlog.versions, 'versions')}" if versions else ""),
        ),
        ("Oldest unprocessed", display.EM_DASH if backlog is None else display.seconds(backlog.seconds), None),
        ("Freshness", display.seconds(row.freshness_seconds), None),
        ("Rows/s in", display.decimal(row.input_rows_per_second), None),
        ("Rows/s out", display.decimal(row.processed_rows_per_second), None),
    ]
    if row.state_rows is not None or row.watermark_lag_seconds is not None:
        cards += [
            ("State rows", display.count(row.state_rows), None),
            ("State memory", display.size(row.state_memory_bytes), None),
            ("Watermark lag", display.seconds(row.watermark_lag_seconds), None),
        ]
    for start in range(0, len(cards), CARDS_PER_ROW):
        columns = st.columns(CARDS_PER_ROW)
        for column, (label, value, note) in zip(columns, cards[start : start + CARDS_PER_ROW]):
            column.metric(label, value, note, delta_color="off", delta_arrow="off", border=True)
    for warning in row.warnings:
        st.markdown(f":orange[**{warning.code.upper()}**] {plain(warning.message)}")


# The sources table's columns; a measure no source of the stream has is left out.
SOURCE_COLUMNS = {
    "source": st.column_config.NumberColumn("#", format="%d", width=40),
    "reads": st.column_config.TextColumn("reads", help="the table, topics or folder the source reads"),
    "kind": st.column_config.TextColumn("kind"),
    "records_behind": st.column_config.NumberColumn("records behind", format="localized"),
    "worst_partition": st.column_config.NumberColumn("worst partition (records)", format="localized"),
    "est_seconds_to_read": st.column_config.NumberColumn(
        "time to read (s)", format="%.0f", help="estimated from the rate the stream read at recently"
    ),
    "files": st.column_config.NumberColumn("files waiting", format="localized"),
    "bytes": st.column_config.NumberColumn("bytes waiting", format="bytes"),
    "versions": st.column_config.NumberColumn("versions waiting", format="localized"),
    "oldest_seconds": st.column_config.NumberColumn("oldest waiting (s)", format="%.0f"),
    "retention_headroom": st.column_config.NumberColumn(
        "retention headroom (s)",
        format="%.0f",
        help="time left before VACUUM or log cleanup may remove the oldest unread data",
    ),
    "unread_changes": st.column_config.TextColumn(
        "unread change commits",
        help="unread commits that are not appends: the stream fails there by default",
    ),
    "from": st.column_config.TextColumn("from", help="measured by the monitor, or reported by the source"),
}


def source_frame(row: StreamStatusRow, names: list[str]) -> pd.DataFrame:
    """One row per source: what it reads, how far behind it is. A measure that applies to none
    of the stream's sources (records behind for a Delta source) is left out, not shown empty."""
    frame = pd.DataFrame(
        [
            {
                "source": lag.source,
                "reads": name,
                "kind": lag.kind,
                "records_behind": lag.offsets,
                "worst_partition": lag.max_partition_offsets,
                "est_seconds_to_read": estimate,
                "files": lag.files,
                "bytes": lag.bytes,
                "versions": lag.versions if lag.kind == "delta" else None,
                "oldest_seconds": lag.seconds,
                "retention_headroom": _least(lag.retention_files_seconds, lag.retention_log_seconds),
                "unread_changes": ", ".join(c.describe() for c in lag.change_commits) or None,
                "from": "measured" if lag.measured else "reported",
            }
            for lag, estimate, name in zip(row.sources, row.estimated_seconds, names)
        ],
        columns=list(SOURCE_COLUMNS),
    )
    return frame.dropna(axis="columns", how="all")


def source_names(lake: LakeLayout, stream: str, row: StreamStatusRow) -> list[str]:
    """What each source of the stream reads (`source_names.source_name`), from the descriptions
    and offsets of its newest progress."""
    root = str(lake.root)
    described = lake_reads.stream_sources(root, stream)

    def table_with_id(table_id: str) -> Location | None:
        found = lake_reads.table_with_id(root, table_id)
        return None if found is None else Location.of(found)

    names = []
    for lag in row.sources:
        progress = described[lag.source] if 0 <= lag.source < len(described) else {}
        offsets = [progress.get(key) for key in ("end_offset", "start_offset", "latest_offset")]
        description = progress.get("description") or lag.description
        names.append(
            source_name(description, lag.kind, offsets, lake.root, table_with_id, lake.stream_source_table(stream))
        )
    return names


def _sources(lake: LakeLayout, stream: str, row: StreamStatusRow) -> list[str]:
    """Each source's lag: measured by the monitor where it can, else what the source reports.
    Returns what each source reads."""
    if not row.sources:
        return []
    names = source_names(lake, stream, row)
    frame = source_frame(row, names)
    show_table(frame, hide_index=True, column_config=SOURCE_COLUMNS, key="sources_table")
    with st.expander("How Spark describes each source"):
        show_table(
            pd.DataFrame(
                {
                    "source": [lag.source for lag in row.sources],
                    "reads": names,
                    "description": [lag.description for lag in row.sources],
                }
            ),
            hide_index=True,
            column_config={
                "source": SOURCE_COLUMNS["source"],
                "description": st.column_config.TextColumn("Spark's description"),
            },
            key="source_descriptions",
        )
    return names


def _least(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _charts(history: pd.DataFrame) -> None:
    if history.empty:
        st.info("No batch of this stream in the progress log yet.")
        return
    st.caption(
        "The newest batch in the progress log"
        if len(history) == 1
        else f"The newest {len(history)} batches in the progress log"
    )
    left, middle, right = st.columns(3)
    left.altair_chart(charts.rates(history), width="stretch")
    middle.altair_chart(charts.phases(history), width="stretch")
    with right:
        measured = [m for m in BACKLOG_MEASURES if history[charts.BACKLOG_COLUMNS[m]].notna().any()]
        if measured:
            measure = st.selectbox("Backlog in", measured, key="backlog_measure")
            st.altair_chart(charts.backlog(history, measure), width="stretch")
        else:
            st.caption("No backlog was measured or reported for this stream's sources.")
    stateful = history["state_rows_total"].notna().any()
    watermarked = history["watermark"].notna().any()
    if stateful or watermarked:
        left, middle, _ = st.columns(3)
        if stateful:
            left.altair_chart(charts.state(history), width="stretch")
        if watermarked:
            middle.altair_chart(charts.watermark_lag(history), width="stretch")


# The batch table's columns in the order they are read: when the batch ran, what it read, what it wrote.
BATCH_COLUMNS = {
    "batch_id": st.column_config.NumberColumn("batch", format="%d", width=55),
    "status": st.column_config.TextColumn("status", width=85),
    "committed_at": st.column_config.DatetimeColumn(
        "committed (UTC)", format=display.GRID_TIME_FORMAT, timezone="UTC", width=145
    ),
    "planned_at": st.column_config.DatetimeColumn(
        "planned (UTC)", format=display.GRID_TIME_FORMAT, timezone="UTC", width=145
    ),
    "source_versions": st.column_config.TextColumn("source versions", width=110),
    "source_rows": st.column_config.NumberColumn("source rows", format="localized", width=80),
    "rows_read": st.column_config.NumberColumn("rows read", format="localized", width=80),
    "duration_ms": st.column_config.NumberColumn("duration", format="%d ms", width=80),
    "source_files": st.column_config.NumberColumn("source files", format="localized", width=70),
    "source_bytes": st.column_config.NumberColumn("source bytes", format="bytes", width=80),
    "sink_commits": st.column_config.TextColumn("sink commits", width="large"),
    "problem": st.column_config.TextColumn("problem", width="large"),
}
ALWAYS_SHOWN = ("batch_id", "status")


def shown_batches(table: pd.DataFrame) -> pd.DataFrame:
    """The batch table without the columns that hold nothing for this stream (a stream that
    reads landing files has no source versions; one that writes through foreachBatch to no
    Delta table has no sink commits)."""
    empty = [
        column for column in table.columns if column not in ALWAYS_SHOWN and table[column].map(display.is_missing).all()
    ]
    return table.drop(columns=empty)


def _batches(lake: LakeLayout, stream: str, history: pd.DataFrame, reads: list[str]) -> None:
    st.subheader("Batches: offsets, source versions, sink commits")
    last = st.selectbox("Newest batches", BATCH_WINDOWS, key="batch_window")
    correlation = lake_reads.correlation(str(lake.root), stream, last)
    if correlation is None:
        st.info(f"No checkpoint at `{lake.checkpoint(stream)}`: batches cannot be tied to source and sink commits.")
        return
    sources = [table_name(correlation["source_table"], lake.root)] if correlation["source_table"] else reads
    st.caption(
        f"checkpoint `{table_name(correlation['checkpoint'], lake.root)}` · reads "
        + (", ".join(code_span(source) for source in sources) or "no Delta table")
        + " · writes "
        + (", ".join(f"`{table_name(t, lake.root)}`" for t in correlation["sink_tables"]) or "no Delta table found")
    )
    table = batch_rows(correlation, history, lake.root)
    batches = shown_batches(table)
    show_table(
        batches,
        hide_index=True,
        column_config=BATCH_COLUMNS,
        column_order=[c for c in BATCH_COLUMNS if c in batches.columns],
        key="batch_table",
    )
    commits = sink_commit_rows(correlation, lake.root)
    with st.expander(f"Sink commits ({len(commits)})"):
        show_table(commits, hide_index=True, column_config={"batch_id": BATCH_COLUMNS["batch_id"]}, key="sink_commits")
    if correlation["landing_files"]:
        files = landing_file_rows(correlation)
        with st.expander(f"Landing files taken ({len(files)}; newest {LANDING_FILES_SHOWN} shown)"):
            show_table(
                files.head(LANDING_FILES_SHOWN),
                hide_index=True,
                column_config={"batch_id": BATCH_COLUMNS["batch_id"]},
                key="landing_files",
            )
    if not table.empty and correlation["source_table"]:
        batch_id = st.selectbox("Files read by batch", table["batch_id"].tolist(), key="files_batch")
        show_table(files_read(correlation, batch_id), hide_index=True, key="files_read")
        offsets = next(b for b in correlation["batches"] if b["batch_id"] == batch_id)
        with st.expander("Offsets as the checkpoint recorded them"):
            st.code(
                json.dumps({"start": offsets["start_offsets"], "end": offsets["end_offsets"]}, indent=2),
                language="json",
            )


def _doctor(root: str, stream: str) -> None:
    st.subheader("Checkpoint doctor")
    result = lake_reads.diagnosis(root, stream)
    if result is None:
        st.info("No checkpoint to diagnose.")
        return
    findings = result["findings"]
    st.markdown(
        f"{severity_badge(result['worst'])} latest planned batch {display.text(result['latest_planned'])}, "
        f"latest committed {display.text(result['latest_committed'])} · the same findings as "
        f"`streamops checkpoint doctor {result['checkpoint']}`"
    )
    if not findings:
        st.success("No finding: a restart would resume cleanly.")
        return
    show_table(
        pd.DataFrame(findings, columns=["severity", "code", "message", "fix"]),
        hide_index=True,
        column_config={
            "message": st.column_config.TextColumn("message", width="large"),
            "fix": st.column_config.TextColumn("fix", width="large"),
        },
        key="findings",
    )
    for finding in findings:
        with st.expander(f"{finding['severity']} · {finding['code']}: evidence"):
            st.json(finding["evidence"])


if __name__ == "__main__":
    render(open_lake())
