"""The fleet table: `fleet_status` rows as a frame, filtered, sorted and cut into pages.

Pure pandas, so the rules (what sorts first, what a search matches, which page holds what) are
tested without Streamlit, and a 1,000-stream fleet is only ever rendered one page at a time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import pandas as pd

from streamops.core.lake_layout import group_of
from streamops.monitor.fleet_status import StreamStatusRow
from streamops.monitor.status_severity import SEVERITY

SortKey = Literal[
    "severity",
    "backlog_seconds",
    "backlog_files",
    "backlog_bytes",
    "freshness_seconds",
    "input_rows_per_second",
    "processed_rows_per_second",
    "last_batch_age_seconds",
    "stream",
]
SORT_KEYS: tuple[str, ...] = get_args(SortKey)
COLUMNS = [
    "status",
    "stream",
    "group",
    "last_batch_id",
    "last_batch_age_seconds",
    "backlog_versions",
    "backlog_files",
    "backlog_bytes",
    "backlog_seconds",
    "freshness_seconds",
    "input_rows_per_second",
    "processed_rows_per_second",
    "reason",
]


def fleet_frame(rows: Sequence[StreamStatusRow], now: float | None = None) -> pd.DataFrame:
    """One row per stream, in `fleet_status` order (worst first, then by name)."""
    current = time.time() if now is None else now
    records = [
        {
            "status": row.status,
            "stream": row.stream,
            "group": group_of(row.stream),
            "last_batch_id": row.last_batch_id,
            "last_batch_age_seconds": None if row.last_batch_at is None else max(0.0, current - row.last_batch_at),
            "backlog_versions": None if row.backlog is None else row.backlog.versions,
            "backlog_files": None if row.backlog is None else row.backlog.files,
            "backlog_bytes": None if row.backlog is None else row.backlog.bytes,
            "backlog_seconds": None if row.backlog is None else row.backlog.seconds,
            "freshness_seconds": row.freshness_seconds,
            "input_rows_per_second": row.input_rows_per_second,
            "processed_rows_per_second": row.processed_rows_per_second,
            "reason": row.reason,
        }
        for row in rows
    ]
    frame = pd.DataFrame.from_records(records, columns=COLUMNS)
    for column in ("last_batch_id", "backlog_versions", "backlog_files", "backlog_bytes"):
        frame[column] = frame[column].astype("Int64")
    for column in (
        "last_batch_age_seconds",
        "backlog_seconds",
        "freshness_seconds",
        "input_rows_per_second",
        "processed_rows_per_second",
    ):
        frame[column] = frame[column].astype("float64")
    return frame


def status_counts(rows: Iterable[StreamStatusRow]) -> dict[str, int]:
    """Streams per status, every status present (zero included), worst first."""
    counts = dict.fromkeys(SEVERITY, 0)
    for row in rows:
        counts[row.status] += 1
    return counts


@dataclass(frozen=True)
class FleetFilter:
    statuses: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    search: str = ""

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Rows matching every given criterion; an empty criterion matches everything. The search
        is a case-insensitive substring of the stream name, its group or its status reason."""
        keep = pd.Series(True, index=frame.index)
        if self.statuses:
            keep &= frame["status"].isin(self.statuses)
        if self.groups:
            keep &= frame["group"].isin(self.groups)
        needle = self.search.strip().lower()
        if needle:
            text = frame["stream"] + " " + frame["group"] + " " + frame["reason"].fillna("")
            keep &= text.str.lower().str.contains(needle, regex=False)
        return frame[keep]


def sort_fleet(frame: pd.DataFrame, key: SortKey, descending: bool = True) -> pd.DataFrame:
    """`severity` keeps worst-first (then name); any other column sorts with unknown values last."""
    if key not in SORT_KEYS:
        raise ValueError(f"cannot sort the fleet by `{key}`: use one of {', '.join(SORT_KEYS)}")
    if key == "severity":
        rank = frame["status"].map({status: i for i, status in enumerate(SEVERITY)})
        order = frame.assign(_rank=rank).sort_values(["_rank", "stream"], kind="stable")
        return order.drop(columns="_rank")
    if key == "stream":
        return frame.sort_values("stream", ascending=not descending, kind="stable")
    return frame.sort_values([key, "stream"], ascending=[not descending, True], na_position="last", kind="stable")


def page_count(rows: int, page_size: int) -> int:
    return max(1, math.ceil(rows / page_size))


def page_of(frame: pd.DataFrame, page: int, page_size: int) -> pd.DataFrame:
    """Rows of 1-based `page`; a page beyond the end gives the last page."""
    last = page_count(len(frame), page_size)
    start = (min(max(page, 1), last) - 1) * page_size
    return frame.iloc[start : start + page_size]
