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
from streamops.core.plain_text import human_bytes, human_seconds
from streamops.dashboards.console import charts, lake_reads
from streamops.dashboards.console.batch_table import (
    batch_rows,
    files_read,
    landing_file_rows,
    sink_commit_rows,
    table_name,
)
from streamops.dashboards.console.page_shell import open_lake, plain, severity_badge, status_badge
from streamops.monitor.fleet_status import StreamStatusRow

BATCH_WINDOWS = (20, 50, 100)
BACKLOG_MEASURES = ("seconds", "files", "bytes", "versions")
LANDING_FILES_SHOWN = 500


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
    if row is not None:
        _sources(row)
    history = lake_reads.stream_history(root, stream)
    _charts(history)
    _batches(lake, stream, history)
    _doctor(root, stream)


def _status(row: StreamStatusRow | None) -> None:
    if row is None:
        st.markdown(":gray[**NO PROGRESS**] this stream has a checkpoint but no row in the progress log")
        return
    st.markdown(f"{status_badge(row.status)} {plain(row.reason)}")
    a, b, c, d, e, f = st.columns(6)
    a.metric("Last batch", "-" if row.last_batch_id is None else row.last_batch_id, border=True)
    backlog = row.backlog
    b.metric(
        "Backlog",
        "unknown" if backlog is None else f"{backlog.files} files",
        None if backlog is None else f"{human_bytes(backlog.bytes)}, {backlog.versions} versions",
        delta_color="off",
        delta_arrow="off",
        border=True,
    )
    c.metric("Oldest unprocessed", "-" if backlog is None else human_seconds(backlog.seconds), border=True)
    d.metric("Freshness", human_seconds(row.freshness_seconds), border=True)
    # one number per card: "in / out" in one card was cut off ("4,170 / 7,…") on ordinary widths
    e.metric("Rows/s in", f"{row.input_rows_per_second or 0:,.0f}", border=True)
    f.metric("Rows/s out", f"{row.processed_rows_per_second or 0:,.0f}", border=True)
    if row.state_rows is not None or row.watermark_lag_seconds is not None:
        g, h, i, _ = st.columns(4)
        g.metric("State rows", "-" if row.state_rows is None else f"{row.state_rows:,}", border=True)
        memory = row.state_memory_bytes
        h.metric("State memory", "-" if memory is None else human_bytes(memory), border=True)
        i.metric("Watermark lag", human_seconds(row.watermark_lag_seconds), border=True)
    for warning in row.warnings:
        st.markdown(f":orange[**{warning.code.upper()}**] {plain(warning.message)}")


def _sources(row: StreamStatusRow) -> None:
    """Each source's lag: measured by the monitor where it can, else what the source reports."""
    if not row.sources:
        return
    frame = pd.DataFrame(
        [
            {
                "source": lag.source,
                "kind": lag.kind,
                "description": lag.description,
                "records_behind": lag.offsets,
                "worst_partition": lag.max_partition_offsets,
                "est_seconds_to_read": estimate,
                "files": lag.files,
                "bytes": lag.bytes,
                "versions": lag.versions,
                "oldest_seconds": lag.seconds,
                "retention_headroom": _least(lag.retention_files_seconds, lag.retention_log_seconds),
                "unread_changes": ", ".join(c.describe() for c in lag.change_commits) or None,
                "from": "measured" if lag.measured else "reported",
            }
            for lag, estimate in zip(row.sources, row.estimated_seconds)
        ]
    )
    st.dataframe(
        frame,
        hide_index=True,
        column_config={
            "bytes": st.column_config.NumberColumn("bytes", format="bytes"),
            "est_seconds_to_read": st.column_config.NumberColumn("est. s to read", format="%.0f"),
            "oldest_seconds": st.column_config.NumberColumn("oldest (s)", format="%.0f"),
            "retention_headroom": st.column_config.NumberColumn(
                "retention headroom (s)",
                format="%.0f",
                help="time left before VACUUM or log cleanup may remove the oldest unread data",
            ),
            "unread_changes": st.column_config.TextColumn(
                "unread change commits",
                help="unread commits that are not appends: the stream fails there by default",
            ),
        },
        key="sources_table",
    )


def _least(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _charts(history: pd.DataFrame) -> None:
    if history.empty:
        st.info("No batch of this stream in the progress log yet.")
        return
    st.caption(f"The newest {len(history)} batches in the progress log")
    left, middle, right = st.columns(3)
    left.altair_chart(charts.rates(history), width="stretch")
    middle.altair_chart(charts.phases(history), width="stretch")
    with right:
        measure = st.segmented_control("Backlog in", BACKLOG_MEASURES, default="seconds", key="backlog_measure")
        st.altair_chart(charts.backlog(history, measure or "seconds"), width="stretch")
    stateful = history["state_rows_total"].notna().any()
    watermarked = history["watermark"].notna().any()
    if stateful or watermarked:
        left, middle, _ = st.columns(3)
        if stateful:
            left.altair_chart(charts.state(history), width="stretch")
        if watermarked:
            middle.altair_chart(charts.watermark_lag(history), width="stretch")


def _batches(lake: LakeLayout, stream: str, history: pd.DataFrame) -> None:
    st.subheader("Batches: offsets, source versions, sink commits")
    last = st.selectbox("Newest batches", BATCH_WINDOWS, key="batch_window")
    correlation = lake_reads.correlation(str(lake.root), stream, last)
    if correlation is None:
        st.info(f"No checkpoint at `{lake.checkpoint(stream)}`: batches cannot be tied to source and sink commits.")
        return
    st.caption(
        f"checkpoint `{table_name(correlation['checkpoint'], lake.root)}` · source "
        f"`{table_name(correlation['source_table'], lake.root) if correlation['source_table'] else 'landing files'}` · "
        "sinks " + (", ".join(f"`{table_name(t, lake.root)}`" for t in correlation["sink_tables"]) or "none found")
    )
    table = batch_rows(correlation, history, lake.root)
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            "source_bytes": st.column_config.NumberColumn("source bytes", format="bytes"),
            "sink_commits": st.column_config.TextColumn("sink commits", width="large"),
        },
        key="batch_table",
    )
    commits = sink_commit_rows(correlation, lake.root)
    with st.expander(f"Sink commits ({len(commits)})"):
        st.dataframe(commits, hide_index=True)
    if correlation["landing_files"]:
        files = landing_file_rows(correlation)
        with st.expander(f"Landing files taken ({len(files)}; newest {LANDING_FILES_SHOWN} shown)"):
            st.dataframe(files.head(LANDING_FILES_SHOWN), hide_index=True)
    if not table.empty and correlation["source_table"]:
        batch_id = st.selectbox("Files read by batch", table["batch_id"].tolist(), key="files_batch")
        st.dataframe(files_read(correlation, batch_id), hide_index=True, key="files_read")
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
        f"{severity_badge(result['worst'])} latest planned batch {result['latest_planned']}, "
        f"latest committed {result['latest_committed']} · the same findings as "
        f"`streamops checkpoint doctor {result['checkpoint']}`"
    )
    if not findings:
        st.success("No finding: a restart would resume cleanly.")
        return
    st.dataframe(
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
