"""The console's Altair charts, built from the frames `lake_reads` returns.

Small and fixed-height on purpose: several sit side by side, and a glance should answer "is it
going up?". The input rate is the monitor's definition (rows over the time since the previous
batch of the same run started), not Spark's inputRowsPerSecond, which no-data triggers inflate.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from streamops.monitor.progress_record import COLUMN, PHASE_COLUMNS
from streamops.monitor.status_severity import StatusColor

SMALL_HEIGHT = 140
MAX_BAR_WIDTH = 28
TREND_BARS_WIDTH = 180
"""Pixels the bars of a per-minute chart share (its column is wider): one minute is a bar, not a wall."""
SECONDS_SHOWN_BELOW = 600.0
"""A time axis spanning less than this labels seconds."""
DAY = 86_400.0
COLOR_HEX: dict[StatusColor, str] = {
    "red": "#d62728",
    "orange": "#ff7f0e",
    "gray": "#7f7f7f",
    "green": "#2ca02c",
    "blue": "#1f77b4",
}
"""The console's shade of each status colour (where CSS, not Streamlit markdown, paints it)."""
BATCH_PHASES_SHOWN = ("addBatch", "getBatch", "latestOffset", "queryPlanning", "walCommit", "commitOffsets")
"""The parts of a trigger (triggerExecution is their total, drawn as the bar's outline)."""
CDC_OUTCOMES = {"inserted": "inserted", "updated": "updated", "deleted": "deleted", "ignored": "changed nothing"}
"""Columns of `_system/cdc_applies` that count what a batch's changes did, and how they read."""
PLOT_SIZING = alt.AutoSizeParams(type="fit-x", contains="padding")
"""The width fits the column; the height is the plot's own. Streamlit's default (`fit`) counts the
title, axes and legend inside the height, which left a chart with a legend below it no plot at
all: a flat line without a y axis."""


def small_chart(frame: pd.DataFrame, title: str, height: int = SMALL_HEIGHT) -> alt.Chart:
    """A chart whose plot is `height` pixels tall whatever its title, axes and legend take."""
    return alt.Chart(frame, title=title, height=height).properties(autosize=PLOT_SIZING)


def time_axis(frame: pd.DataFrame, column: str) -> alt.X:
    """A time x axis in UTC and 24-hour time, titled so: `20:57` (`20:57:30` over a span of
    minutes, `11-27 20:57` over days), whatever the browser's zone."""
    times = pd.to_datetime(frame[column], utc=True) if len(frame) else pd.Series(dtype="datetime64[ns, UTC]")
    span = (times.max() - times.min()).total_seconds() if len(times) else 0.0
    label = "%H:%M:%S" if span < SECONDS_SHOWN_BELOW else "%H:%M" if span < DAY else "%m-%d %H:%M"
    return alt.X(
        f"{column}:T",
        title="time (UTC)",
        scale=alt.Scale(type="utc"),
        axis=alt.Axis(format=label, labelOverlap=True, labelFlush=True),
    )


def time_tooltip(column: str, title: str) -> alt.Tooltip:
    """A moment in a tooltip, in UTC (a UTC time unit formats in UTC) and 24-hour time."""
    return alt.Tooltip(
        f"utcyearmonthdatehoursminutesseconds({column}):T", title=f"{title} (UTC)", format="%Y-%m-%d %H:%M:%S"
    )


def trend(frame: pd.DataFrame, column: str, title: str) -> alt.Chart:
    """One fleet-wide measure per minute, one bar per minute that has data: a time axis drew the
    first minutes as a bar at each edge of an empty hour."""
    minutes = frame.assign(minute_label=pd.to_datetime(frame["minute"], utc=True).dt.strftime("%H:%M"))
    return (
        small_chart(minutes, title)
        .mark_bar(size=max(2, min(MAX_BAR_WIDTH, TREND_BARS_WIDTH // max(1, len(minutes)))))
        .encode(
            x=alt.X(
                "minute_label:O",
                title="minute (UTC)",
                sort=list(minutes.sort_values("minute")["minute_label"]),
                axis=alt.Axis(labelAngle=0, labelOverlap="greedy"),
                scale=alt.Scale(paddingInner=0.2),
            ),
            y=alt.Y(f"{column}:Q", title=None),
            tooltip=[
                alt.Tooltip("minute_label:O", title="minute (UTC)"),
                alt.Tooltip(f"{column}:Q", format=",.0f", title=title),
            ],
        )
    )


def with_input_rate(history: pd.DataFrame) -> pd.DataFrame:
    """Adds `input_rate`: the batch's rows over the seconds since the previous batch of its run."""
    gap = history.groupby(COLUMN.run_id)[COLUMN.timestamp].diff().dt.total_seconds()
    rate = history[COLUMN.num_input_rows] / gap.where(gap > 0)
    return history.assign(input_rate=rate)


def measures_over_time(
    frame: pd.DataFrame,
    time_column: str,
    measures: dict[str, str],
    title: str,
    value_format: str = ",.1f",
    interpolate: str = "linear",
) -> alt.Chart:
    """One line per measure (column -> how the legend names it) after each batch."""
    long = frame.melt(
        id_vars=[time_column, COLUMN.batch_id], value_vars=list(measures), var_name="measure", value_name="value"
    ).replace({"measure": measures})
    return (
        small_chart(long.dropna(), title)
        .mark_line(point=True, interpolate=interpolate)
        .encode(
            x=time_axis(long, time_column),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("measure:N", legend=alt.Legend(orient="bottom", title=None)),
            tooltip=[
                alt.Tooltip(f"{COLUMN.batch_id}:Q", title="batch"),
                time_tooltip(time_column, "time"),
                "measure:N",
                alt.Tooltip("value:Q", format=value_format),
            ],
        )
    )


def rates(history: pd.DataFrame) -> alt.Chart:
    measures = {"input_rate": "input", COLUMN.processed_rows_per_second: "processed"}
    return measures_over_time(with_input_rate(history), COLUMN.timestamp, measures, "Input vs processed rows/s")


def phases(history: pd.DataFrame) -> alt.Chart:
    columns = {PHASE_COLUMNS[p]: p for p in BATCH_PHASES_SHOWN}
    long = history.melt(id_vars=[COLUMN.batch_id], value_vars=list(columns), var_name="phase", value_name="ms").replace(
        {"phase": columns}
    )
    return (
        small_chart(long.dropna(), "Batch duration by phase (ms)")
        .mark_bar()
        .encode(
            x=alt.X("batch_id:O", title="batch", axis=alt.Axis(labelOverlap=True, labelAngle=0)),
            y=alt.Y("ms:Q", stack="zero", title=None),
            color=alt.Color("phase:N", legend=alt.Legend(orient="bottom", title=None, columns=2)),
            tooltip=[alt.Tooltip("batch_id:Q", title="batch"), "phase:N", alt.Tooltip("ms:Q", format=",", title="ms")],
        )
    )


BACKLOG_COLUMNS = {
    "seconds": COLUMN.backlog_seconds,
    "records": COLUMN.backlog_offsets,
    "files": COLUMN.backlog_files,
    "bytes": COLUMN.backlog_bytes,
    "versions": COLUMN.backlog_versions,
}
"""Each way the backlog is counted, and the progress log's column that holds it after each batch."""


def backlog(history: pd.DataFrame, measure: str) -> alt.Chart:
    column = BACKLOG_COLUMNS[measure]
    return (
        small_chart(history.dropna(subset=[column]), f"Backlog ({measure})")
        .mark_area(line=True, opacity=0.3, interpolate="step-after")
        .encode(
            x=time_axis(history, COLUMN.timestamp),
            y=alt.Y(f"{column}:Q", title=None, axis=alt.Axis(format=",~f")),
            tooltip=[
                alt.Tooltip("batch_id:Q", title="batch"),
                time_tooltip(COLUMN.timestamp, "batch start"),
                alt.Tooltip(f"{column}:Q", format=",", title=measure),
            ],
        )
    )


def state(history: pd.DataFrame) -> alt.Chart:
    """Rows held by the stream's stateful operators after each batch, with rows dropped as late."""
    measures = {COLUMN.state_rows_total: "held", COLUMN.state_rows_dropped_by_watermark: "dropped late"}
    return measures_over_time(
        history, COLUMN.timestamp, measures, "State rows after each batch", value_format=",", interpolate="step-after"
    )


def watermark_lag(history: pd.DataFrame) -> alt.Chart:
    """Batch start minus its watermark: a line that only climbs while rows arrive is a stalled
    watermark (Spark reports the epoch until it sets one; those batches are left out)."""
    watermark = history[COLUMN.watermark].where(history[COLUMN.watermark] > pd.Timestamp(0, tz="UTC"))
    frame = history.assign(lag_seconds=(history[COLUMN.timestamp] - watermark).dt.total_seconds())
    return (
        small_chart(frame.dropna(subset=["lag_seconds"]), "Watermark lag (s)")
        .mark_line(point=True)
        .encode(
            x=time_axis(frame, COLUMN.timestamp),
            y=alt.Y("lag_seconds:Q", title=None),
            tooltip=[
                alt.Tooltip("batch_id:Q", title="batch"),
                time_tooltip(COLUMN.timestamp, "batch start"),
                alt.Tooltip("lag_seconds:Q", format=",.1f", title="lag (s)"),
            ],
        )
    )


def bars(frame: pd.DataFrame, category: str, value: str, title: str) -> alt.Chart:
    """Counts per category, largest first (quarantine by reason, event types per group)."""
    return (
        small_chart(frame, title, height=max(SMALL_HEIGHT, 22 * len(frame)))
        .mark_bar()
        .encode(
            y=alt.Y(f"{category}:N", sort="-x", title=None),
            x=alt.X(f"{value}:Q", title=None),
            tooltip=[f"{category}:N", f"{value}:Q"],
        )
    )


def cdc_lag(applies: pd.DataFrame) -> alt.Chart:
    """Each batch's lag, source commit -> silver commit: of its newest change and its oldest."""
    measures = {"lag_seconds": "newest change", "max_lag_seconds": "oldest change"}
    return measures_over_time(applies, "committed_at", measures, "CDC lag per batch (s)")


def cdc_changes(applies: pd.DataFrame) -> alt.Chart:
    """What each batch's changes did to the table, stacked."""
    long = applies.melt(
        id_vars=["batch_id"], value_vars=list(CDC_OUTCOMES), var_name="outcome", value_name="rows"
    ).replace({"outcome": CDC_OUTCOMES})
    return (
        small_chart(long[long["rows"] > 0], "Changes per batch")
        .mark_bar()
        .encode(
            x=alt.X("batch_id:O", title="batch", axis=alt.Axis(labelOverlap=True, labelAngle=0)),
            y=alt.Y("rows:Q", stack="zero", title=None),
            color=alt.Color("outcome:N", legend=alt.Legend(orient="right", title=None)),
            tooltip=[alt.Tooltip("batch_id:Q", title="batch"), "outcome:N", alt.Tooltip("rows:Q", format=",")],
        )
    )
