"""Arrow schemas of the tables the pipeline owns (paths come from streamops.lake_layout)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")

BRONZE_SCHEMA = pa.schema(
    [
        ("event_type", pa.string()),
        ("event_id", pa.string()),
        ("event_time", UTC_TIMESTAMP),
        ("schema_hash", pa.string()),
        ("payload", pa.string()),
        ("ingest_time", UTC_TIMESTAMP),
        ("source_file", pa.string()),
        ("batch_id", pa.int64()),
    ]
)

QUARANTINE_SCHEMA = pa.schema(
    [
        ("stream", pa.string()),
        ("batch_id", pa.int64()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("event_type", pa.string()),
        ("schema_hash", pa.string()),
        ("raw_text", pa.string()),
        ("raw_bytes", pa.binary()),
        ("source_file", pa.string()),
        ("ingest_time", UTC_TIMESTAMP),
    ]
)


def newest_epoch(column: pa.ChunkedArray) -> float | None:
    """Unix seconds of the newest timestamp in a column (None when it holds none)."""
    newest = pc.max(column).as_py() if len(column) else None
    return newest.timestamp() if newest is not None else None
