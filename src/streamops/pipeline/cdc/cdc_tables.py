"""The tables a CDC apply writes, their columns, and the MERGE predicates both connectors run.

Per source table: `silver/<table>` (its current state: the source's columns, flattened like
every silver table, plus `_cdc_sequence` and `_cdc_op` of the change that wrote the row, the
lineage columns and `_rescued_data`); `silver/<table>__history` with `--cdc-history` (one row per
version: `__valid_from`/`__valid_to` sequences and their source times); and
`_system/cdc_deleted_keys/<table>` (key, sequence of its delete; key "" holds the truncates; a
key's marker is the newest of its rows: the native connector appends markers, never updates them).
Per batch: rows of `_system/cdc_applies`. The predicates are SQL that delta-spark (Spark SQL) and
delta-rs (DataFusion) both read; only identifier quoting differs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from streamops.core.lake_layout import TABLE_CONFIGURATION, LakeLayout
from streamops.core.storage.location import Location
from streamops.pipeline.cdc.change_apply import (
    ACTION,
    EVENT_TIME,
    KEY,
    MATCH_FROM,
    OP,
    ORDER,
    SEQUENCE,
    VALID_FROM,
    VALID_FROM_TIME,
    VALID_TO,
    VALID_TO_TIME,
)
from streamops.pipeline.records.column_names import LINEAGE_COLUMNS, RESCUED_DATA_COLUMN

Dialect = Literal["spark", "datafusion"]
UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")
KEY_METADATA = "streamops.cdc.key"
"""Column metadata of a CDC table's key columns: the column's position in the key. Set when the
table is created, so the table says what its key is (delta-rs accepts no table property outside
`delta.*`; column metadata both connectors keep)."""
SEQUENCE_METADATA = "streamops.cdc.sequence_by"
"""Column metadata of a current-state table's `_cdc_sequence`: the source column its changes are
ordered by (`--cdc-sequence`), "" for the source position. A table created before streamops
recorded it has none, which reads as "": position order was then the only one."""
CDC_TABLE_CONFIGURATION = {**TABLE_CONFIGURATION, "delta.enableChangeDataFeed": "true"}
"""Readers of a table that MERGEs change can follow it with Delta's change data feed."""
CHANGE_COLUMNS = (OP, SEQUENCE, KEY, ORDER)
"""Columns of a typed change besides the row's own and the lineage columns."""
LINEAGE = tuple(LINEAGE_COLUMNS)
CURRENT_EXTRA = (SEQUENCE, OP, *LINEAGE, RESCUED_DATA_COLUMN)
HISTORY_EXTRA = (VALID_FROM, VALID_TO, VALID_FROM_TIME, VALID_TO_TIME, OP, *LINEAGE, RESCUED_DATA_COLUMN)
HISTORY_HELPERS = (ACTION, MATCH_FROM)

DELETED_KEYS_SCHEMA = pa.schema(
    [("key", pa.string()), ("sequence", pa.string()), ("op", pa.string()), ("deleted_at", UTC_TIMESTAMP)]
)
DELETED_KEYS_COLUMNS = {"key": KEY, "sequence": SEQUENCE, "op": OP, "deleted_at": EVENT_TIME}
"""Deleted keys column -> the change column it takes."""

APPLIES_SCHEMA = pa.schema(
    [
        ("stream", pa.string()),
        ("batch_id", pa.int64()),
        ("table", pa.string()),
        ("changes", pa.int64()),
        ("inserted", pa.int64()),
        ("updated", pa.int64()),
        ("deleted", pa.int64()),
        ("ignored", pa.int64()),
        ("truncated", pa.bool_()),
        ("history_versions", pa.int64()),
        ("oldest_source_time", UTC_TIMESTAMP),
        ("newest_source_time", UTC_TIMESTAMP),
        ("committed_at", UTC_TIMESTAMP),
        ("lag_seconds", pa.float64()),
        ("max_lag_seconds", pa.float64()),
        ("silver_version", pa.int64()),
    ]
)
"""`_system/cdc_applies`: one row per table and batch. `ignored`: changes that changed nothing
(superseded in the batch, older than the table's state, replayed); `lag_seconds`: the silver
commit time minus the newest source commit time the batch applied (`max_lag_seconds`: minus
the oldest)."""


@dataclass(frozen=True)
class CdcTarget:
    """Where one source table's apply writes, its key columns (silver column names) and the
    source column its changes are ordered by ("" for the source position)."""

    table: str
    current: Location
    deleted_keys: Location
    history: Location | None
    keys: tuple[str, ...]
    sequence_by: str = ""

    @classmethod
    def of(cls, lake: LakeLayout, table: str, keys: tuple[str, ...], history: bool, sequence_by: str = "") -> CdcTarget:
        return cls(
            table=table,
            current=lake.silver(table),
            deleted_keys=lake.cdc_deleted_keys(table),
            history=lake.silver_history(table) if history else None,
            keys=keys,
            sequence_by=sequence_by,
        )

    def column_metadata(self, name: str) -> dict[str, str]:
        """What a column of the table records of it: its place in the key, or the ordering."""
        if name in self.keys:
            return {KEY_METADATA: str(self.keys.index(name))}
        if name == SEQUENCE:
            return {SEQUENCE_METADATA: self.sequence_by}
        return {}

    def marked(self, schema: pa.Schema) -> pa.Schema:
        """`schema` with the key columns and the ordering marked (column_metadata)."""
        return pa.schema([f.with_metadata(marks) if (marks := self.column_metadata(f.name)) else f for f in schema])


def recorded_keys(fields: list[tuple[str, dict[str, str]]]) -> tuple[str, ...] | None:
    """A CDC table's key columns from its (name, metadata) fields, in key order; None when none
    is marked."""
    marked = sorted((int(meta[KEY_METADATA]), name) for name, meta in fields if KEY_METADATA in (meta or {}))
    return tuple(name for _, name in marked) or None


def recorded_sequence(fields: list[tuple[str, dict[str, str]]]) -> str:
    """The source column a CDC table's changes are ordered by, "" for the source position."""
    return next(((meta or {}).get(SEQUENCE_METADATA, "") for name, meta in fields if name == SEQUENCE), "")


def quoted(name: str, dialect: Dialect) -> str:
    """An identifier as the dialect quotes it (DataFusion folds unquoted names to lower case)."""
    if dialect == "spark":
        return "`" + name.replace("`", "``") + "`"
    return '"' + name.replace('"', '""') + '"'


def literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def keys_match(keys: tuple[str, ...], dialect: Dialect) -> str:
    return " AND ".join(f"t.{quoted(k, dialect)} = s.{quoted(k, dialect)}" for k in keys)


def current_predicates(dialect: Dialect) -> dict[str, str]:
    """The current state's MERGE clauses: a newer delete deletes, a newer upsert updates, an
    upsert of a key the table lacks inserts."""
    op, seq = quoted(OP, dialect), quoted(SEQUENCE, dialect)
    return {
        "delete": f"s.{op} = 'd' AND t.{seq} < s.{seq}",
        "update": f"s.{op} <> 'd' AND t.{seq} < s.{seq}",
        "insert": f"s.{op} <> 'd'",
    }


def truncated_rows(truncate: str, dialect: Dialect) -> str:
    """Rows the MERGE deletes by source when the batch truncates the table."""
    return f"t.{quoted(SEQUENCE, dialect)} < {literal(truncate)}"


def deleted_keys_predicates(dialect: Dialect) -> dict[str, str]:
    """Deleted keys' MERGE: a newer delete or truncate records its sequence, a newer upsert of
    the key removes the marker."""
    op, seq = quoted("op", dialect), quoted("sequence", dialect)
    return {
        "record": f"s.{op} IN ('d', 't') AND t.{seq} < s.{seq}",
        "remove": f"s.{op} NOT IN ('d', 't') AND t.{seq} < s.{seq}",
        "insert": f"s.{op} IN ('d', 't')",
    }


def expired_deleted_keys(cutoff_iso: str, dialect: Dialect, alias: str = "t.") -> str:
    """Markers of deletes older than the cutoff (a truncate's marker never expires)."""
    deleted_at = quoted("deleted_at", dialect)
    return f"{alias}{quoted('key', dialect)} <> '' AND {alias}{deleted_at} < CAST({literal(cutoff_iso)} AS TIMESTAMP)"


def history_match(keys: tuple[str, ...], dialect: Dialect) -> str:
    return f"{keys_match(keys, dialect)} AND t.{quoted(VALID_FROM, dialect)} = s.{quoted(MATCH_FROM, dialect)}"


def history_predicates(dialect: Dialect) -> dict[str, str]:
    """History's MERGE: a close row ends the open version it matches; an insert row the table
    lacks (by key and `__valid_from`) is a new version."""
    action = quoted(ACTION, dialect)
    return {
        "close": f"s.{action} = 'close' AND t.{quoted(VALID_TO, dialect)} IS NULL",
        "insert": f"s.{action} = 'insert'",
    }


def open_versions_before(truncate: str, dialect: Dialect) -> str:
    """Versions still open that a truncate closes (rows no source row matched)."""
    return f"t.{quoted(VALID_TO, dialect)} IS NULL AND t.{quoted(VALID_FROM, dialect)} < {literal(truncate)}"


def source_values(columns: Iterable[str], dialect: Dialect) -> dict[str, str]:
    """Each of `columns` set to the MERGE source's value of it."""
    return {quoted(c, dialect): f"s.{quoted(c, dialect)}" for c in columns}


def close_values(dialect: Dialect) -> dict[str, str]:
    return source_values((VALID_TO, VALID_TO_TIME), dialect)


def truncate_close_values(sequence: str, source_time_iso: str, dialect: Dialect) -> dict[str, str]:
    """The `__valid_to` a truncate gives every version it closes: its sequence and source time."""
    return {
        quoted(VALID_TO, dialect): literal(sequence),
        quoted(VALID_TO_TIME, dialect): f"CAST({literal(source_time_iso)} AS TIMESTAMP)",
    }
