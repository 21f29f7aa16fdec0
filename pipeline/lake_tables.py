"""Arrow schemas of the tables the pipeline owns (paths come from streamops.lake_layout)."""

from __future__ import annotations

import pyarrow as pa

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
