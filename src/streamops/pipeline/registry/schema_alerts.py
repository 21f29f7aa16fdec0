"""`_system/schema_alerts`: every incompatible change a silver stream met, and what it did.

One row per (batch, event type, field change): the rows it affected in that batch and the
action taken (`rescued` into `_rescued_data`, the default; `quarantined`; or `group_failed` under
on_incompatible=fail_group). Rows are appended with the silver stream's txn, so a replayed batch does not alert twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Literal

import pyarrow as pa

AlertAction = Literal["rescued", "quarantined", "group_failed"]

SCHEMA_ALERTS_SCHEMA = pa.schema(
    [
        ("event_type", pa.string()),
        ("field", pa.string()),
        ("old_type", pa.string()),
        ("new_type", pa.string()),
        ("variation_hash", pa.string()),
        ("first_bronze_version", pa.int64()),
        ("rows_affected", pa.int64()),
        ("action", pa.string()),
        ("stream", pa.string()),
        ("batch_id", pa.int64()),
        ("detected_at", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True)
class SchemaAlert:
    event_type: str
    field: str
    old_type: str
    new_type: str
    variation_hash: str
    first_bronze_version: int
    rows_affected: int
    action: AlertAction

    def describe(self) -> str:
        return f"{self.event_type}.{self.field}: {self.old_type} -> {self.new_type}"


def alert_rows(alerts: Iterable[SchemaAlert], stream: str, batch_id: int) -> pa.Table:
    now = datetime.now(timezone.utc)
    return pa.Table.from_pylist(
        [dict(a.__dict__, stream=stream, batch_id=batch_id, detected_at=now) for a in alerts],
        schema=SCHEMA_ALERTS_SCHEMA,
    )
