"""A lake's `_system/expectations` and quarantine rows written with delta-rs, in the schemas the
pipeline writes them with, for the readers that show them (status, console) without Spark.

`counts(table, stream, rule, action, per_batch)` lists one row per batch; `per_batch` holds
(passed, failed) per batch, the first batch committed at `START` (an hour before the test
session began, so the readers' look-back covers it), one a minute after."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
from deltalake import write_deltalake

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.expectations.counts_table import EXPECTATIONS_SCHEMA
from streamops.pipeline.lake_tables import QUARANTINE_SCHEMA

START = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(hours=1)
BATCH_EVERY = timedelta(minutes=1)


def batch_time(batch_id: int) -> datetime:
    return START + batch_id * BATCH_EVERY


def utc_text(moment: datetime) -> str:
    """How the console and `streamops status` write a time."""
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def counts(
    table: str,
    stream: str,
    rule: str,
    action: str,
    per_batch: list[tuple[int, int]],
    applicable: bool = True,
    first_at: datetime = START,
    every: timedelta = BATCH_EVERY,
) -> list[dict]:
    return [
        {
            "stream": stream,
            "batch_id": batch_id,
            "table": table,
            "version": batch_id,
            "expectation": rule,
            "action": action,
            "passed": passed,
            "failed": failed,
            "applicable": applicable,
            "committed_at": first_at + batch_id * every,
        }
        for batch_id, (passed, failed) in enumerate(per_batch)
    ]


def write_counts(lake: LakeLayout, rows: list[dict]) -> None:
    write_deltalake(str(lake.expectations), pa.Table.from_pylist(rows, EXPECTATIONS_SCHEMA), mode="append")


def dropped_row(table: str, stream: str, batch_id: int, rules: str, payload: str) -> dict:
    """A row a `drop` rule sent to the quarantine: reason `expectation`, the rules it failed."""
    return {
        "stream": stream,
        "batch_id": batch_id,
        "reason": "expectation",
        "detail": rules,
        "event_type": table,
        "schema_hash": "h1",
        "raw_text": payload,
        "source_file": "landing/part-0.ndjson",
        "ingest_time": batch_time(batch_id),
    }


def write_quarantine(lake: LakeLayout, rows: list[dict]) -> None:
    write_deltalake(str(lake.bronze_quarantine), pa.Table.from_pylist(rows, QUARANTINE_SCHEMA), mode="append")
