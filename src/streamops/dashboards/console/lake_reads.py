"""Everything the console reads from a lake, cached, read-only, through the packages that own it.

Statuses come from `streamops.monitor.fleet_status`, batches and findings from `checkpoint_tools`, tables
through delta-rs. Each read is cached for `CACHE_SECONDS` and keyed by the lake root and the
validated names it was given, so a page rerun (every click) costs a dictionary lookup and a
1,000-stream fleet is judged once per interval, not once per viewer. Names reach a path only
through `LakeLayout`, which rejects anything that could leave the lake.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pandas as pd
import streamlit as st

from streamops.checkpoint_tools.correlation import correlate
from streamops.checkpoint_tools.doctor import checkpoint_targets, diagnose
from streamops.checkpoint_tools.sink_index import SinkTableIndex
from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.core.lake_layout import BRONZE_EVENTS_TABLE, BRONZE_STREAM, LakeLayout, is_valid_event_type
from streamops.core.storage.location import Location
from streamops.dashboards.console import LAKE_ENV
from streamops.dashboards.exceptions import ConsoleError
from streamops.monitor.expectation_status import rule_statuses
from streamops.monitor.fleet_status import StreamStatusRow, fleet_status
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import COLUMN, PHASE_COLUMNS

CACHE_SECONDS = 10
TREND_MINUTES = 60
HISTORY_BATCHES = 300
"""Newest batches of one stream the stream view charts."""
QUARANTINE_COLUMNS = [
    "stream",
    "batch_id",
    "reason",
    "detail",
    "event_type",
    "schema_hash",
    "raw_text",
    "source_file",
    "ingest_time",
]
HISTORY_COLUMNS = [
    COLUMN.timestamp,
    COLUMN.run_id,
    COLUMN.batch_id,
    COLUMN.num_input_rows,
    COLUMN.input_rows_per_second,
    COLUMN.processed_rows_per_second,
    COLUMN.batch_duration_ms,
    *PHASE_COLUMNS.values(),
    COLUMN.backlog_versions,
    COLUMN.backlog_files,
    COLUMN.backlog_bytes,
    COLUMN.backlog_seconds,
    COLUMN.backlog_offsets,
    COLUMN.event_time_max,
    COLUMN.watermark,
    COLUMN.state_rows_total,
    COLUMN.state_memory_bytes,
    COLUMN.state_rows_dropped_by_watermark,
]


def console_lake() -> LakeLayout:
    """The lake `streamops console --lake DIR` was started with."""
    root = os.environ.get(LAKE_ENV)
    if not root:
        raise ConsoleError(f"no lake given: start the console with `streamops console --lake DIR` (or set {LAKE_ENV})")
    if not Location.of(root).is_dir():
        raise ConsoleError(f"the lake `{root}` does not exist: check --lake")
    return LakeLayout.at(root)


# -- fleet and streams (monitor) ------------------------------------------------------------------


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def fleet(root: str) -> tuple[list[StreamStatusRow], float]:
    """Every stream's status (what `streamops status` prints) and when it was judged."""
    now = time.time()
    return fleet_status(LakeLayout.at(root), now=now), now


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def fleet_trend(root: str, minutes: int = TREND_MINUTES) -> pd.DataFrame:
    """Per minute over the last `minutes`: rows read, batches, streams reporting, worst backlog."""
    log = ProgressLog(LakeLayout.at(root).query_progress)
    columns = [COLUMN.timestamp, COLUMN.stream, COLUMN.num_input_rows, COLUMN.backlog_seconds]
    frame = log.read(columns=columns, events=["progress"], days=log.days()[:2]).to_pandas()
    since = pd.Timestamp.now(tz="UTC") - timedelta(minutes=minutes)
    frame = frame[frame[COLUMN.timestamp] >= since]
    if frame.empty:
        return pd.DataFrame(columns=["minute", "rows", "batches", "streams", "max_backlog_seconds"])
    per_minute = frame.assign(minute=frame[COLUMN.timestamp].dt.floor("min")).groupby("minute")
    return per_minute.agg(
        rows=(COLUMN.num_input_rows, "sum"),
        batches=(COLUMN.stream, "size"),
        streams=(COLUMN.stream, "nunique"),
        max_backlog_seconds=(COLUMN.backlog_seconds, "max"),
    ).reset_index()


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def stream_history(root: str, stream: str, batches: int = HISTORY_BATCHES) -> pd.DataFrame:
    """The newest `batches` progress rows of one stream, oldest first, newest days read first
    (none when no monitor ever wrote the lake's progress log: its checkpoints still show)."""
    location = LakeLayout.at(root).query_progress
    log = ProgressLog(location)
    frames: list[pd.DataFrame] = []
    found = 0
    for day in log.days() if is_table(location) else []:
        frame = log.read(columns=HISTORY_COLUMNS, events=["progress"], streams=[stream], days=[day]).to_pandas()
        frames.append(frame)
        found += len(frame)
        if found >= batches:
            break
    if not frames:
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    history = pd.concat(frames, ignore_index=True).sort_values(COLUMN.timestamp, kind="stable")
    return history.tail(batches).reset_index(drop=True)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def stream_sources(root: str, stream: str) -> list[dict[str, Any]]:
    """Each source of the stream's newest progress row as Spark described it (`description`,
    `start_offset`, `end_offset`, `latest_offset`, ...), in Spark's source order; none without one."""
    location = LakeLayout.at(root).query_progress
    log = ProgressLog(location)
    for day in log.days() if is_table(location) else []:
        rows = log.read(columns=[COLUMN.timestamp, COLUMN.sources], events=["progress"], streams=[stream], days=[day])
        if rows.num_rows:
            newest = max(rows.to_pylist(), key=lambda row: row[COLUMN.timestamp])
            return list(newest[COLUMN.sources] or [])
    return []


# -- checkpoints (checkpoint_tools) ---------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _sink_index(root: str) -> tuple[SinkTableIndex, threading.Lock]:
    """One txn-owner index per lake for every viewer: it refreshes by reading new commits only."""
    return SinkTableIndex(LakeLayout.at(root)), threading.Lock()


@contextmanager
def _refreshed_sink_index(root: str) -> Iterator[SinkTableIndex]:
    """The lake's index, brought up to date and held for this reader alone."""
    index, lock = _sink_index(root)
    with lock:
        index.refresh()
        yield index


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def correlation(root: str, stream: str, last_batches: int) -> dict[str, Any] | None:
    """`streamops checkpoint correlate --json` of the stream's checkpoint; None without one."""
    lake = LakeLayout.at(root)
    checkpoint = lake.checkpoint(stream)
    if not checkpoint.is_dir():
        return None
    with _refreshed_sink_index(root) as index:
        return correlate(checkpoint, lake=lake, stream=stream, last_batches=last_batches, sink_index=index).to_json()


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def diagnosis(root: str, stream: str) -> dict[str, Any] | None:
    """`streamops checkpoint doctor --json` of the stream's checkpoint; None without one."""
    lake = LakeLayout.at(root)
    checkpoint = lake.checkpoint(stream)
    if not checkpoint.is_dir():
        return None
    with _refreshed_sink_index(root) as index:
        (target,) = checkpoint_targets([checkpoint], lake=lake, stream=stream, index=index)
        sink_logs = {table: index.log(table) for table in target.sink_tables}
    return diagnose(target, sink_logs=sink_logs).to_json()


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def table_with_id(root: str, table_id: str) -> str | None:
    """The lake's Delta table whose table id is `table_id` (what a Delta source's offsets name
    as `reservoirId`), or None when no table of the lake has it."""
    with _refreshed_sink_index(root) as index:
        table = index.table_with_id(table_id)
    return None if table is None else str(table)


def checkpoint_streams(root: str) -> list[str]:
    """Streams that have a checkpoint in the lake (a stream may have one but no progress yet)."""
    return [path.name for path in LakeLayout.at(root).checkpoint_dirs()]


# -- tables (delta-rs) ----------------------------------------------------------------------------


def _read(
    path: Location, columns: Sequence[str] | None = None, filters: list[tuple] | None = None
) -> pd.DataFrame | None:
    """The table as a frame, or None while it does not exist yet (a lake still starting)."""
    if not is_table(path):
        return None
    table = read_delta(path, columns=list(columns) if columns else None, filters=filters)
    return table.to_pandas()


def _read_sorted(path: Location, by: str | list[str], ascending: bool = True) -> pd.DataFrame | None:
    frame = _read(path)
    return None if frame is None else frame.sort_values(by, ascending=ascending, kind="stable")


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def schema_registry(root: str) -> pd.DataFrame | None:
    return _read_sorted(LakeLayout.at(root).schema_registry, ["event_type", "seen_order"])


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def schema_alerts(root: str) -> pd.DataFrame | None:
    return _read_sorted(LakeLayout.at(root).schema_alerts, "detected_at", ascending=False)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def event_groups(root: str) -> pd.DataFrame | None:
    return _read_sorted(LakeLayout.at(root).event_groups, ["group", "event_type"])


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def quarantine_counts(root: str) -> pd.DataFrame | None:
    """Quarantined rows per reason, stream and event type (no record text is read)."""
    frame = _read(LakeLayout.at(root).bronze_quarantine, columns=["reason", "stream", "event_type"])
    if frame is None:
        return None
    counts = frame.fillna({"event_type": ""}).groupby(["reason", "stream", "event_type"]).size()
    return counts.rename("rows").reset_index().sort_values(["reason", "rows"], ascending=[True, False])


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def quarantine_rows(root: str, reason: str) -> pd.DataFrame | None:
    """Quarantined records of one reason, newest first (the raw bytes column is not read)."""
    frame = _read(LakeLayout.at(root).bronze_quarantine, columns=QUARANTINE_COLUMNS, filters=[("reason", "=", reason)])
    return (
        None
        if frame is None
        else frame.sort_values("ingest_time", ascending=False, kind="stable").reset_index(drop=True)
    )


EXPECTATION_REASON = "expectation"
"""The quarantine reason of rows a `drop` rule removed; their `detail` names the rules they failed."""


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def expectation_rules(root: str) -> pd.DataFrame | None:
    """Every rule of every table from `_system/expectations` (what `streamops status` judges),
    failing ones first; None when no run had rules."""
    statuses = rule_statuses(LakeLayout.at(root))
    if not statuses:
        return None
    frame = pd.DataFrame([{**vars(status), "failing": status.failing} for status in statuses])
    for column in ("failing_since", "last_committed_at"):
        frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    frame["failing_since_batch_id"] = frame["failing_since_batch_id"].astype("Int64")
    return frame


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def expectation_examples(root: str, table: str, rows: int) -> pd.DataFrame | None:
    """The newest `rows` rows `drop` rules sent from `table` to the quarantine: bronze's rules
    quarantine from the bronze stream, a silver or CDC table's from its group's."""
    filters = [("reason", "=", EXPECTATION_REASON)]
    if table == BRONZE_EVENTS_TABLE:
        filters.append(("stream", "=", BRONZE_STREAM))
    else:
        filters += [("stream", "!=", BRONZE_STREAM), ("event_type", "=", table)]
    frame = _read(LakeLayout.at(root).bronze_quarantine, columns=QUARANTINE_COLUMNS, filters=filters)
    if frame is None:
        return None
    return frame.sort_values("ingest_time", ascending=False, kind="stable").head(rows).reset_index(drop=True)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def cdc_applies(root: str) -> pd.DataFrame | None:
    """`_system/cdc_applies`: one row per CDC table and batch, oldest first."""
    return _read_sorted(LakeLayout.at(root).cdc_applies, ["committed_at", "table"])


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def cdc_table_rows(root: str, tables: tuple[str, ...]) -> dict[str, int | None]:
    """Rows in each CDC table now, from its files' statistics (every file streamops writes has
    them): no data file is read, so a table of any size costs one log read."""
    lake = LakeLayout.at(root)
    rows: dict[str, int | None] = {}
    for table in tables:
        location = lake.silver(table)
        rows[table] = open_table(location).count() if is_table(location) else None
    return rows


def registry_event_types(registry: pd.DataFrame | None) -> list[str]:
    """Event types of the registry that are safe table names (the registry only holds those)."""
    if registry is None:
        return []
    return sorted(t for t in registry["event_type"].unique() if is_valid_event_type(t))
