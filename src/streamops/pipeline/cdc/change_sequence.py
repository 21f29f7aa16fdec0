"""The order of a source table's changes: one text per change that sorts as the database
committed them, comparable across batches, runs and replays.

A change is applied only when its sequence is greater than what its table already holds for its
key, so the sequence decides everything late, replayed and duplicated changes do. It comes from
the change's position in the database's log (Debezium's `source` block), never from arrival
order: a change Debezium sends again after a crash has the same position and changes nothing.
Each connector's position becomes fixed-width fields behind a prefix naming it, so comparing the
texts compares the positions (`pg:` never meets `my:`: one table comes from one connector).

- PostgreSQL (`source.sequence` = [last commit LSN, LSN], `source.lsn`): changes stream in commit
  order and the last commit LSN only grows from one transaction to the next, so (last commit
  LSN, LSN) is commit order, then order within the transaction. A change of a row always has a
  greater LSN than the commits of earlier changes of that row (the row is locked until they
  commit). The initial snapshot's rows (`op` r, `source.snapshot` not false/incremental) carry
  no last commit LSN and come first; the first streamed transaction after them carries none
  either, and sorts after them whatever its LSN (it may have begun before the snapshot point).
- MySQL and MariaDB (`file`, `pos`, `row`): binlog file number, position, snapshot rows first,
  then the row within the event.
- SQL Server (`commit_lsn`, `change_lsn`, `event_serial_no`) and Oracle (`commit_scn`, `scn`):
  commit position, snapshot rows first, then the change's own position.
- Anything else: the source timestamp (`ts_ns`, `ts_us` or `ts_ms`), the finest given. Two
  changes of one key within one tick are then in arrival order inside a batch, and across
  batches the first applied stays.

A table declared with `--cdc-sequence TABLE=COL` is ordered by its own column instead (DLT's
`sequence_by`): the column's value in the change's row image, then the source position for
changes with equal values. Numbers (to 1e-9) and ISO-8601 timestamps (as UTC instants) compare
as values, other text as text; `by:` never meets a position prefix, and a table's ordering is
fixed when its silver table is created.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any

SNAPSHOT_FLAGS = frozenset({"true", "first", "first_in_data_collection", "last_in_data_collection", "last"})
"""`source.snapshot` of rows an initial (or blocking) snapshot read; `incremental` rows are read
at their place in the stream and ordered by their position like any change."""
_DIGITS = re.compile(r"\d+")
COLUMN_PREFIX = "by:"
NUMBER_DIGITS = 40
NUMBER_SCALE = 10**9
"""Numbers are ordered as integers of nanounits, written in NUMBER_DIGITS digits."""
ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


class NoPosition(ValueError):
    """The change carries no position this module can order (its message says what is missing)."""


def change_sequence(source: dict[str, Any], op: str) -> str:
    """The sequence text of a change from its `source` block and `op` (see the module docstring)."""
    connector = str(source.get("connector") or "").lower()
    phase = 0 if op == "r" and str(source.get("snapshot", "false")).lower() in SNAPSHOT_FLAGS else 1
    if connector == "postgresql":
        return _postgres(source, phase)
    if connector in ("mysql", "mariadb"):
        return _mysql(source, phase)
    if connector == "sqlserver" and source.get("commit_lsn"):
        change = str(source.get("change_lsn") or "")
        return f"ms:{source['commit_lsn']}:{phase}:{change:>22}:{_number(source, 'event_serial_no', 0):020d}"
    if connector == "oracle" and (source.get("commit_scn") or source.get("scn")):
        commit = _number(source, "commit_scn", _number(source, "scn", 0))
        return f"or:{commit:025d}:{phase}:{_number(source, 'scn', 0):025d}"
    return _timestamp(source)


def column_sequence(value: Any, position: str) -> str:
    """The sequence of a change of a table ordered by one of its columns: the column's `value`
    as sortable text, then the change's source `position` for equal values."""
    return f"{COLUMN_PREFIX}{_sortable(value)}:{position}"


def _sortable(value: Any) -> str:
    """`value` as text whose order is the value's: numbers (`n`/`p` by sign, fixed width), then
    text (`t`); ISO-8601 timestamps become numbers (UTC microseconds since the epoch)."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        raise NoPosition("is not a number, a timestamp or text")
    if isinstance(value, str):
        instant = _instant(value)
        if instant is None:
            return "t" + value
        value = instant
    try:
        scaled = int(Decimal(str(value)) * NUMBER_SCALE)
    except (InvalidOperation, ValueError, OverflowError) as error:
        raise NoPosition("is not a finite number") from error
    if abs(scaled) >= 10**NUMBER_DIGITS:
        raise NoPosition("is too large to order")
    return f"p{scaled:0{NUMBER_DIGITS}d}" if scaled >= 0 else f"n{10**NUMBER_DIGITS + scaled:0{NUMBER_DIGITS}d}"


def _instant(text: str) -> int | None:
    """Microseconds since the epoch of an ISO-8601 timestamp (UTC when it names no zone)."""
    if not ISO_TIMESTAMP.match(text):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _postgres(source: dict[str, Any], phase: int) -> str:
    lsn = _number(source, "lsn", None)
    if lsn is None:
        raise NoPosition("a PostgreSQL change without `source.lsn`")
    last_commit = None
    sequence = source.get("sequence")
    if isinstance(sequence, str) and sequence.startswith("["):
        first = sequence[1:].split(",", 1)[0].strip().strip('"')
        last_commit = int(first) if first.isdigit() else None
    commit = 0 if last_commit is None else last_commit + 1
    return f"pg:{commit:020d}:{phase}:{lsn:020d}"


def _mysql(source: dict[str, Any], phase: int) -> str:
    file_name, pos = source.get("file"), _number(source, "pos", None)
    numbers = _DIGITS.findall(str(file_name or ""))
    if not numbers or pos is None:
        raise NoPosition("a MySQL change without `source.file` and `source.pos`")
    return f"my:{int(numbers[-1]):010d}:{pos:020d}:{phase}:{_number(source, 'row', 0):010d}"


def _timestamp(source: dict[str, Any]) -> str:
    for field, scale in (("ts_ns", 1), ("ts_us", 1_000), ("ts_ms", 1_000_000)):
        value = _number(source, field, None)
        if value is not None:
            return f"ts:{value * scale:025d}"
    raise NoPosition("no position fields and no `source.ts_ms`")


def _number(source: dict[str, Any], field: str, default: int | None) -> int | None:
    """An integer position field; JSON integers or their decimal text (Debezium sends both)."""
    value = source.get(field)
    if isinstance(value, bool):
        return default
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return default
