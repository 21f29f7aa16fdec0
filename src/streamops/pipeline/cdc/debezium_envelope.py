"""One Debezium change event read into what applying it needs, or the reason it cannot be.

Debezium's JSON envelope comes with Kafka Connect's `schema`/`payload` wrapper
(`value.converter.schemas.enable=true`, the default) or without it; the record key likewise.
A change has `op` (`c` insert, `u` update, `d` delete, `r` a snapshot read, `t` truncate),
`before` and `after` row images, `source` (the database's commit time `ts_ms` and position:
pipeline/cdc/change_sequence.py) and `ts_ms` (when Debezium read it).

- The **table** is the source table's name within its database: `schema.table` where the
  source has schemas (PostgreSQL, SQL Server, Oracle), `db.table` where it has none (MySQL,
  MariaDB), else the table (or MongoDB's collection). It names `<lake>/silver/<table>`.
- The **image** is the row the change carries: `after` for c/r/u, `before` for d (the key
  columns at least; every column with REPLICA IDENTITY FULL), else the record key's fields; none
  for t. Its shape is the change's schema variation, so the registry learns the table's schema
  from rows, never from envelopes.
- The **key** columns come from `--cdc-keys` when the table is declared there, else from the
  record key's fields (Debezium keys a table's topic by its primary key); their values are the
  image's. A table with neither has no key, and its changes cannot be applied.
- The **sequence** is the change's source position (pipeline/cdc/change_sequence.py), or, for a
  table declared with `--cdc-sequence`, its column's value in the image, then the position. A
  truncate carries no row, so it cannot be ordered among such a table's changes.

Pure functions over parsed JSON: the bronze classifier and the silver apply call the same ones,
so both judge a record alike.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, Mapping, TypeVar

from streamops.pipeline.cdc.change_sequence import NoPosition, change_sequence, column_sequence

Op = Literal["c", "u", "d", "r", "t"]
OPS: tuple[str, ...] = ("c", "u", "d", "r", "t")
UPSERT_OPS = frozenset({"c", "u", "r"})
TRUNCATE_KEY = ""
Declared = TypeVar("Declared")
"""The key text of a truncate, which concerns the whole table (a real key text is a JSON array)."""


@dataclass(frozen=True)
class Change:
    """A change ready to apply. `key` is the key values as canonical JSON (`[100,2]`), the same
    text for the same row in every change of it; `image` is the row image (None for t)."""

    table: str
    op: str
    sequence: str
    key_columns: tuple[str, ...]
    key: str
    image: dict[str, Any] | None
    source_ms: int | None

    @property
    def event_id(self) -> str:
        """A stable id of the change: its position and a digest of its key. Debezium sending a
        change again after a crash makes the same id; two rows changed by one statement differ."""
        digest = hashlib.sha256(f"{self.table}\x00{self.key}".encode()).hexdigest()[:16]
        return f"{self.sequence}/{'truncate' if self.op == 't' else digest}"

    @property
    def event_time(self) -> str | None:
        """The database's commit time (`source.ts_ms`) as ISO-8601 UTC text."""
        if self.source_ms is None:
            return None
        moment = datetime.fromtimestamp(self.source_ms / 1000, tz=timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Rejected:
    """Why a record cannot be applied: a CdcQuarantineReason (pipeline/records/record_rules.py)
    or a line reason, with a one-line detail; `table` when the record names one."""

    reason: str
    detail: str
    table: str | None = None


def unwrap(document: Any) -> Any:
    """The payload of Kafka Connect's JSON wrapper (`{"schema": ..., "payload": ...}`), or the
    document itself when it is not wrapped."""
    if isinstance(document, dict) and set(document) == {"schema", "payload"}:
        return document["payload"]
    return document


def read_change(
    value: dict[str, Any],
    record_key: Any = None,
    declared_keys: Mapping[str, tuple[str, ...]] | None = None,
    declared_sequences: Mapping[str, str] | None = None,
) -> Change | Rejected:
    """The change `value` (a parsed Debezium value) describes, or why it cannot be applied.
    `record_key`: the Kafka record key, parsed (None for a landing file's line or no key);
    `declared_sequences`: table -> the column it is ordered by (`--cdc-sequence`)."""
    envelope = unwrap(value)
    if not isinstance(envelope, dict):
        return Rejected("cdc_not_a_change", "the Connect `payload` is not a JSON object")
    op = envelope.get("op")
    if op not in OPS:
        shown = "no `op`" if op is None else f"`op` {json.dumps(op)[:40]}"
        return Rejected("cdc_not_a_change", f"{shown}: not a Debezium row change (c, u, d, r or t)")
    source = envelope.get("source")
    table = table_name(source) if isinstance(source, dict) else None
    if table is None:
        return Rejected("cdc_not_a_change", "no `source.table`: cannot tell which table changed")
    try:
        sequence = change_sequence(source, op)
    except NoPosition as missing:
        return Rejected("cdc_missing_position", f"{missing}: cannot order the change", table)
    source_ms = source.get("ts_ms") if type(source.get("ts_ms")) is int else None
    key_fields = _key_fields(unwrap(record_key))
    ordered_by = declared_for(declared_sequences or {}, table)
    if op == "t":
        if ordered_by is not None:
            return Rejected(
                "cdc_missing_sequence",
                f"a truncate carries no `{ordered_by}` (--cdc-sequence of `{table}`) to order it by: empty the "
                "silver table by hand if it must be",
                table,
            )
        return Change(table, op, sequence, (), TRUNCATE_KEY, None, source_ms)
    image = _image(envelope, op, key_fields)
    if image is None:
        wanted = "`before`" if op == "d" else "`after`"
        return Rejected("cdc_not_a_change", f"op `{op}` without its {wanted} row image", table)
    if ordered_by is not None:
        try:
            sequence = column_sequence(image.get(ordered_by), sequence)
        except NoPosition as unusable:
            hint = " (PostgreSQL sends every column of a deleted row with REPLICA IDENTITY FULL)" if op == "d" else ""
            return Rejected(
                "cdc_missing_sequence",
                f"`{ordered_by}` (--cdc-sequence of `{table}`) {'is missing or null' if image.get(ordered_by) is None else unusable}"
                f" in the change's row image{hint}",
                table,
            )
    columns = declared_for(declared_keys or {}, table) or tuple(key_fields or ())
    if not columns:
        return Rejected(
            "cdc_missing_key",
            f"table `{table}` has no key: declare it with --cdc-keys {table}=COL[,COL] (Debezium sends no "
            "record key for a table without a primary key)",
            table,
        )
    missing = [c for c in columns if image.get(c) is None]
    if missing:
        return Rejected("cdc_missing_key", f"key column(s) {', '.join(missing)} of `{table}` missing or null", table)
    key = json.dumps([image[c] for c in columns], separators=(",", ":"), ensure_ascii=False)
    return Change(table, op, sequence, columns, key, image, source_ms)


def table_name(source: dict[str, Any]) -> str | None:
    """`schema.table`, `db.table` or `table` (see the module docstring); None without a table."""
    table = source.get("table") or source.get("collection")
    if not isinstance(table, str) or not table:
        return None
    namespace = source.get("schema") or source.get("db")
    return f"{namespace}.{table}" if isinstance(namespace, str) and namespace else table


def declared_for(declared: Mapping[str, Declared], table: str) -> Declared | None:
    """What `--cdc-keys` or `--cdc-sequence` declares for `table`: by its full name, else by its
    bare name (the part after the last dot), which names the table in any schema."""
    if table in declared:
        return declared[table]
    return declared.get(table.rsplit(".", 1)[-1])


def _key_fields(key: Any) -> dict[str, Any] | None:
    return key if isinstance(key, dict) and key else None


def _image(envelope: dict[str, Any], op: str, key_fields: dict[str, Any] | None) -> dict[str, Any] | None:
    if op in UPSERT_OPS:
        after = envelope.get("after")
        return after if isinstance(after, dict) else None
    before = envelope.get("before")
    if isinstance(before, dict):
        return {**(key_fields or {}), **before}
    return key_fields
