"""How every value in the console reads: the one place for missing values, units and times.

A missing value is an em dash, never `None`, `nan`, `NaT` or an empty cell; a time is 24-hour
UTC and says so; a number carries its unit, in its cell or in its column's title. Pages build
their text with these helpers and draw every table with `show_table`, so a page cannot forget
one of the rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from streamops.core.plain_text import human_bytes, human_seconds

EM_DASH = "—"
"""What a missing value reads as, in a table cell, a card or a sentence."""
TIME_FORMAT = "%Y-%m-%d %H:%M:%S UTC"
GRID_TIME_FORMAT = "YYYY-MM-DD HH:mm:ss"
"""A table's time column, in the grid's own (Moment.js) notation; its title says UTC."""
UNIT_SUFFIXES = (("_seconds", "s"), ("_ms", "ms"))
"""Column-name endings that are a unit, and how a column title writes it."""
BYTE_COLUMNS = frozenset({"bytes", "size"})


def is_missing(value: object) -> bool:
    """None, NaN, NaT, pandas' NA, or empty text. Text is otherwise a value, whatever it says:
    a quarantined line may well read `null`."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return not value.strip()
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or an array: a value, even when empty
        return False


def text(value: object) -> str:
    """Any value as text; a missing one is an em dash."""
    return EM_DASH if is_missing(value) else str(value)


def seconds(value: float | None) -> str:
    """A duration as `45s`, `12m`, `3.5h` (the CLI's notation)."""
    return EM_DASH if is_missing(value) else human_seconds(value)


def size(value: float | None) -> str:
    """Bytes as `1.2 MB`."""
    return EM_DASH if is_missing(value) else human_bytes(value)


def count(value: float | None, unit: str = "") -> str:
    """A whole number with thousands separators and its unit: `1,234 files`."""
    if is_missing(value):
        return EM_DASH
    return f"{int(value):,}" + (f" {unit}" if unit else "")  # type: ignore[arg-type]


def decimal(value: float | None, digits: int = 0, unit: str = "") -> str:
    """A measure such as a rate: `1,675` or `12.5 rows/s`."""
    if is_missing(value):
        return EM_DASH
    return f"{float(value):,.{digits}f}" + (f" {unit}" if unit else "")  # type: ignore[arg-type]


def preview(value: object, chars: int = 160) -> str | None:
    """The start of a long text (a raw record) for a table cell; the page shows it whole elsewhere."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= chars else value[:chars] + "…"


def utc_time(value: object) -> str:
    """A moment (Unix seconds, a datetime or a pandas Timestamp) as `2026-11-27 20:57:03 UTC`;
    a naive datetime is taken as UTC, which is what the lake stores."""
    if is_missing(value):
        return EM_DASH
    if isinstance(value, (int, float)):
        moment = pd.Timestamp(datetime.fromtimestamp(float(value), tz=timezone.utc))
    else:
        moment = pd.Timestamp(value)  # type: ignore[arg-type]
    moment = moment.tz_localize("UTC") if moment.tzinfo is None else moment.tz_convert("UTC")
    return moment.strftime(TIME_FORMAT)


ISO_UTC = re.compile(r"\b(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?Z\b")


def readable_times(sentence: str) -> str:
    """A sentence from the lake (a status reason) with its ISO UTC times written as the console
    writes times: `2026-11-27T20:57:03Z` reads `2026-11-27 20:57:03 UTC`."""
    return ISO_UTC.sub(r"\1 \2 UTC", sentence)


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as a table should hold it: empty text becomes a missing value (the table draws
    it as an em dash), and every time column is UTC."""
    shown = frame.copy()
    for column in shown.columns:
        values = shown[column]
        if isinstance(values.dtype, pd.DatetimeTZDtype):
            shown[column] = values.dt.tz_convert("UTC")
        elif pd.api.types.is_datetime64_any_dtype(values.dtype):
            shown[column] = values.dt.tz_localize("UTC")
        elif values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            shown[column] = values.map(lambda v: None if isinstance(v, str) and is_missing(v) else v).astype(object)
    return shown


def column_title(column: str) -> str:
    """`records_behind` reads `records behind`; `lag_seconds` reads `lag (s)`."""
    for suffix, unit in UNIT_SUFFIXES:
        if column.endswith(suffix) and column != suffix[1:]:
            return f"{column[: -len(suffix)].replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


def table_config(frame: pd.DataFrame, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A title for every column, unit and time zone included, unless the page configured it."""
    config: dict[str, Any] = dict(given or {})
    for column in frame.columns:
        name = str(column)
        if name in config:
            continue
        values = frame[column]
        if pd.api.types.is_datetime64_any_dtype(values.dtype):
            config[name] = st.column_config.DatetimeColumn(
                f"{column_title(name)} (UTC)", format=GRID_TIME_FORMAT, timezone="UTC"
            )
        elif name in BYTE_COLUMNS or name.endswith("_bytes"):
            config[name] = st.column_config.NumberColumn(column_title(name), format="bytes")
        else:
            config[name] = st.column_config.Column(column_title(name))
    return config


def show_table(
    data: pd.DataFrame | Styler,
    *,
    column_config: Mapping[str, Any] | None = None,
    where: Any = None,
    **options: Any,
) -> Any:
    """`st.dataframe` under the console's rules: missing values are em dashes, times are UTC
    and say so, and every column has a readable title. A Styler's frame must already have been
    through `display_frame` (its styles are computed on it)."""
    frame = data.data if isinstance(data, Styler) else display_frame(data)
    target = st if where is None else where
    return target.dataframe(
        data if isinstance(data, Styler) else frame,
        column_config=table_config(frame, column_config),
        placeholder=EM_DASH,
        **options,
    )
