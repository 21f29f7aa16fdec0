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


def trend(frame: pd.DataFrame, column: str, title: str) -> alt.Chart:
    """One fleet-wide measure per minute."""
    return (
        small_chart(frame, title)
        .mark_bar()
        .encode(
            x=alt.X("minute:T", title=None), y=alt.Y(f"{column}:Q", title=None), tooltip=["minute:T", f"{column}:Q"]
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
            x=alt.X(f"{time_column}:T", title=None),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("measure:N", legend=alt.Legend(orient="bottom", title=None)),
            tooltip=[f"{COLUMN.batch_id}:Q", "measure:N", alt.Tooltip("value:Q", format=value_format)],
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
            x=alt.X("batch_id:O", title=None, axis=alt.Axis(labelOverlap=True)),
            y=alt.Y("ms:Q", stack="zero", title=None),
            color=alt.Color("phase:N", legend=alt.Legend(orient="right", title=None)),
            tooltip=["batch_id:Q", "phase:N", "ms:Q"],
        )
    )


def backlog(history: pd.DataFrame, measure: str) -> alt.Chart:
    column = getattr(COLUMN, f"backlog_{measure}")
    return (
        small_chart(history.dropna(subset=[column]), f"Backlog ({measure}) after each batch")
        .mark_area(line=True, opacity=0.3, interpolate="step-after")
        .encode(
            x=alt.X("timestamp:T", title=None),
            y=alt.Y(f"{column}:Q", title=None),
            tooltip=["batch_id:Q", f"{column}:Q"],
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
            x=alt.X("timestamp:T", title=None),
            y=alt.Y("lag_seconds:Q", title=None),
            tooltip=["batch_id:Q", alt.Tooltip("lag_seconds:Q", format=",.1f")],
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
            x=alt.X("batch_id:O", title=None, axis=alt.Axis(labelOverlap=True)),
            y=alt.Y("rows:Q", stack="zero", title=None),
            color=alt.Color("outcome:N", legend=alt.Legend(orient="right", title=None)),
            tooltip=["batch_id:Q", "outcome:N", alt.Tooltip("rows:Q", format=",")],
        )
    )
