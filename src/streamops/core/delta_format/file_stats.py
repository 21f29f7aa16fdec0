"""What a table's files' statistics say without reading them: for passes that delete old rows
(retention of `_system/expectations`, expiry of a CDC table's deleted keys) and that only need
to run, or to rewrite files, when a row is old enough to go."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable


def least_time(table: DeltaTable, column: str) -> datetime | None:
    """The least value of time `column` over the table's files, by their statistics: None when
    a file has none to say (the caller must look), the newest possible moment for a table
    without files (nothing is older than anything)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return datetime.max.replace(tzinfo=timezone.utc)
    stat = f"min.{column}"
    if stat not in actions.column_names or actions.column(stat).null_count:
        return None
    return pc.min(actions.column(stat)).as_py()


def may_hold_older(table: DeltaTable, column: str, cutoff: datetime) -> bool:
    """Whether a row of the table may have `column` before `cutoff` (true when unknown)."""
    least = least_time(table, column)
    return least is None or least < cutoff
