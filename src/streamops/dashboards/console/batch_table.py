"""The stream view's batch tables, from `correlate(...).to_json()` and the progress log.

One row per micro-batch ties what the checkpoint planned (offsets), what that range holds in the
source table (Delta versions, files, rows, bytes) and the sink commits the batch made, matched
by identity by checkpoint_tools; the progress log adds what Spark measured for the batch.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from streamops.core.storage.location import Location
from streamops.monitor.progress_record import COLUMN

BATCH_COLUMNS = [
    "batch_id",
    "status",
    "planned_at",
    "committed_at",
    "source_versions",
    "source_files",
    "source_rows",
    "source_bytes",
    "sink_commits",
    "rows_read",
    "duration_ms",
    "problem",
]


def _time(ms: int | None) -> pd.Timestamp | None:
    return None if ms is None else pd.Timestamp(ms, unit="ms", tz="UTC")


def table_name(table: str, lake_root: Location) -> str:
    """`silver/match_end` rather than the absolute path or URI: what the user knows the table by."""
    relative = Location.of(table).relative_to(lake_root)
    return relative if relative else table


def version_range(versions: list[int]) -> str:
    if not versions:
        return ""
    low, high = min(versions), max(versions)
    return f"{low}" if low == high else f"{low}-{high}"


def batch_rows(correlation: dict[str, Any], history: pd.DataFrame, lake_root: Location) -> pd.DataFrame:
    """Newest batch first. `rows_read`/`duration_ms` come from the newest progress row of each
    batch id (a replayed batch has one per attempt)."""
    measured = (
        history.drop_duplicates(COLUMN.batch_id, keep="last").set_index(COLUMN.batch_id) if len(history) else None
    )
    records = []
    for batch in correlation["batches"]:
        source = batch["source"] or {}
        sinks = [
            " ".join(filter(None, [f"{table_name(c['table'], lake_root)} v{c['version']}", c["row_summary"]]))
            for c in batch["sink_commits"]
        ]
        progress = (
            measured.loc[batch["batch_id"]] if measured is not None and batch["batch_id"] in measured.index else None
        )
        records.append(
            {
                "batch_id": batch["batch_id"],
                "status": batch["status"],
                "planned_at": _time(batch["batch_timestamp_ms"]),
                "committed_at": _time(batch["committed_ms"]),
                "source_versions": version_range(source.get("versions") or []),
                "source_files": len(source.get("files") or []) if source else None,
                "source_rows": source.get("rows"),
                "source_bytes": source.get("bytes"),
                "sink_commits": "; ".join(sinks),
                "rows_read": None if progress is None else progress[COLUMN.num_input_rows],
                "duration_ms": None if progress is None else progress[COLUMN.batch_duration_ms],
                "problem": source.get("problem"),
            }
        )
    frame = pd.DataFrame.from_records(records, columns=BATCH_COLUMNS)
    for column in ("source_files", "source_rows", "source_bytes", "rows_read", "duration_ms"):
        frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    return frame.sort_values("batch_id", ascending=False, kind="stable").reset_index(drop=True)


def sink_commit_rows(correlation: dict[str, Any], lake_root: Location) -> pd.DataFrame:
    """Every sink commit of the correlated batches: a stream writing several tables has several."""
    records = [
        {
            "batch_id": batch["batch_id"],
            "table": table_name(commit["table"], lake_root),
            "version": commit["version"],
            "matched_by": commit["matched_by"],
            "operation": commit["operation"],
            "rows": commit["rows"],
            "changes": commit["row_summary"] if commit["changes"] else None,
            "bytes": commit["bytes"],
            "files": commit["files"],
            "committed_at": _time(commit["timestamp_ms"]),
        }
        for batch in correlation["batches"]
        for commit in batch["sink_commits"]
    ]
    columns = [
        "batch_id", "table", "version", "matched_by", "operation", "rows", "changes", "bytes", "files", "committed_at"
    ]  # fmt: skip
    return pd.DataFrame.from_records(records, columns=columns).sort_values(
        ["batch_id", "table"], ascending=[False, True], kind="stable"
    )


def files_read(correlation: dict[str, Any], batch_id: int) -> pd.DataFrame:
    """The exact source files one batch read (Delta source), in log order."""
    columns = ["version", "index", "path", "size", "rows", "is_starting_version"]
    for batch in correlation["batches"]:
        if batch["batch_id"] == batch_id and batch["source"]:
            return pd.DataFrame.from_records(batch["source"]["files"], columns=columns)
    return pd.DataFrame(columns=columns)


def landing_file_rows(correlation: dict[str, Any]) -> pd.DataFrame:
    """Files a file source took (bronze reads landing files), newest first."""
    records = [
        {
            "batch_id": f["batch_id"],
            "file": f["path"].rsplit("/", 1)[-1],
            "committed": f["committed"],
            "modified_at": _time(f["modified_ms"]),
            "planned_at": _time(f["discovered_ms"]),
            "committed_at": _time(f["committed_ms"]),
            "path": f["path"],
        }
        for f in correlation["landing_files"]
    ]
    columns = ["batch_id", "file", "committed", "modified_at", "planned_at", "committed_at", "path"]
    return pd.DataFrame.from_records(records, columns=columns).sort_values(
        ["batch_id", "file"], ascending=[False, True], na_position="first", kind="stable"
    )
