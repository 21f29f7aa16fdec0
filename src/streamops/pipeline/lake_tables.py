"""Arrow schemas of the tables the pipeline owns (paths come from streamops.core.lake_layout)."""

from __future__ import annotations

import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pyarrow as pa
from deltalake import write_deltalake
from deltalake.exceptions import DeltaError

from streamops.core.exceptions import error_line
from streamops.core.storage.location import Location
from streamops.pipeline.exceptions import LakeTableError

UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")

KAFKA_RECORD_FIELDS = [
    ("kafka_topic", pa.string()),
    ("kafka_partition", pa.int32()),
    ("kafka_offset", pa.int64()),
    ("kafka_timestamp", UTC_TIMESTAMP),
    ("kafka_key", pa.binary()),
]
"""The Kafka record a bronze or quarantine row came from; null for a landing file's line."""

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
        *KAFKA_RECORD_FIELDS,
    ]
)

BRONZE_COMMIT_COLUMNS = ("ingest_time", "batch_id")
"""Bronze columns the commit fills, one value per batch: bronze's rules cannot name them."""
BRONZE_RULE_COLUMNS = tuple(name for name in BRONZE_SCHEMA.names if name not in BRONZE_COMMIT_COLUMNS)
"""The bronze columns a bronze rule may name, as a line has them before it is written."""

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
        *KAFKA_RECORD_FIELDS,
    ]
)


@contextmanager
def table_access(table: Path | str, action: str) -> Iterator[None]:
    """Turn a storage or table failure into one line that names the table and the way out."""
    try:
        yield
    except (DeltaError, OSError) as error:
        text = str(error).strip()
        reason = text.splitlines()[0][:300] if text else type(error).__name__
        raise LakeTableError(
            f"cannot {action} `{table}`: {reason}; fix the table or its storage (space, permissions, "
            "a damaged _delta_log) and the stream resumes where it stopped"
        ) from error


def require_writable_lake(root: Location) -> None:
    """Write a throwaway table under the lake before any stream starts, instead of failing in the
    middle of a batch: on an object store this proves the credentials, the endpoint and the
    bucket; on a disk, delta-rs 1.6 panics on `[` or `]` in a path (it parses them as a URL
    host), and only when it writes."""
    probe = root / f".streamops-write-check-{uuid.uuid4().hex}"
    try:
        write_deltalake(str(probe), pa.table({"check": [1]}), storage_options=probe.storage_options())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - delta-rs panics are BaseExceptions (pyo3)
        hint = (
            "(delta-rs fails on `[` and `]` in local paths)"
            if root.is_local
            else "(check its credentials and endpoint)"
        )
        raise LakeTableError(
            f"delta-rs cannot write tables under `{root}` ({error_line(error)}): choose another --lake {hint}"
        ) from None
    finally:
        _remove_tree(probe)


def _remove_tree(location: Location) -> None:
    if location.is_local:
        shutil.rmtree(location.local_path, ignore_errors=True)
        return
    for entry in list(location.walk()):
        (location / entry.name).delete()
