"""`_system/expectations`: one row per stream, batch, table and rule, written with the batch's
identity like every other table the pipeline writes, so a replayed batch is never counted twice.
The exporter's `streamops_expectation_records_total`, the console and `streamops status` read
the same counts."""

from __future__ import annotations

import pyarrow as pa

EXPECTATIONS_SCHEMA = pa.schema(
    [
        pa.field("stream", pa.string(), nullable=False),
        pa.field("batch_id", pa.int64(), nullable=False),
        pa.field("table", pa.string(), nullable=False),
        pa.field("version", pa.int64()),
        pa.field("expectation", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("passed", pa.int64(), nullable=False),
        pa.field("failed", pa.int64(), nullable=False),
        pa.field("applicable", pa.bool_(), nullable=False),
        pa.field("committed_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)
"""`version`: the Delta version of `table` the batch wrote (null when it wrote none);
`applicable`: false for a rule naming a column the table does not have yet (both counts 0)."""
