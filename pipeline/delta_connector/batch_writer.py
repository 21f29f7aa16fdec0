"""The idempotent micro-batch writer of the embedded default (delta-rs).

Every commit carries a Delta `txn` action (appId = stream name, version = batch id), the
mechanism of delta-spark's txnAppId/txnVersion and of kafka-delta-ingest: a replayed batch
finds its txn already in the table and writes nothing. Schema changes merge; the table id
never changes on a merge (delta-rs keeps the metaData id; a test guards it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from pipeline.exceptions import PipelineConfigError
from streamops.commit_metadata import PREFIX, BatchCommitInfo
from streamops.delta_read import read_delta

WriteStatus = Literal["written", "skipped", "empty"]


@dataclass(frozen=True)
class WriteOutcome:
    status: WriteStatus
    version: int | None = None
    rows: int = 0


def committed_batch(table: str | Path, app_id: str) -> int | None:
    """The highest batch id this stream has committed to the table, or None."""
    if not DeltaTable.is_deltatable(str(table)):
        return None
    return DeltaTable(str(table)).transaction_version(app_id)


def write_batch(table: str | Path, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome:
    """Append `data` exactly once for (commit.stream, commit.batch_id)."""
    if data.num_rows == 0:
        return WriteOutcome("empty")
    existing = DeltaTable(str(table)) if DeltaTable.is_deltatable(str(table)) else None
    if existing is not None:
        done = existing.transaction_version(commit.stream)
        if done is not None and done >= commit.batch_id:
            return WriteOutcome("skipped", rows=data.num_rows)
        data = align_to_table(existing, data, commit.stream)
    write_deltalake(
        existing or str(table),
        data,
        mode="append",
        schema_mode="merge",
        commit_properties=CommitProperties(
            custom_metadata=commit.to_custom_metadata(),
            app_transactions=[Transaction(app_id=commit.stream, version=commit.batch_id)],
        ),
    )
    return WriteOutcome("written", version=DeltaTable(str(table)).version(), rows=data.num_rows)


_WIDER: dict[pa.DataType, frozenset[pa.DataType]] = {
    pa.int8(): frozenset({pa.int16(), pa.int32(), pa.int64(), pa.float64()}),
    pa.int16(): frozenset({pa.int32(), pa.int64(), pa.float64()}),
    pa.int32(): frozenset({pa.int64(), pa.float64()}),
    pa.int64(): frozenset({pa.float64()}),
    pa.float32(): frozenset({pa.float64()}),
}


class SchemaMismatchError(PipelineConfigError):
    """Data has a column whose type the table cannot take without losing values."""


def align_to_table(table: DeltaTable, data: pa.Table, stream: str) -> pa.Table:
    """Data shaped so an append loses nothing: see the module docstring."""
    current = pa.schema(table.schema().to_arrow())
    widen: dict[str, pa.DataType] = {}
    columns = []
    for name in data.column_names:
        column = data.column(name)
        target = current.field(name).type if current.get_field_index(name) >= 0 else column.type
        if target == column.type or pa.types.is_nested(target) or pa.types.is_nested(column.type):
            columns.append(column)
            continue
        if target in _WIDER.get(column.type, frozenset()) or _same_text(target, column.type):
            columns.append(column.cast(target))
        elif column.type in _WIDER.get(target, frozenset()):
            widen[name] = column.type
            columns.append(column)
        else:
            raise SchemaMismatchError(
                f"column `{name}` of `{table.table_uri}` is {target} but the batch has {column.type}; "
                "only widening (int -> long -> double) is applied automatically"
            )
    if widen:
        widen_columns(table, widen, stream)
    return pa.Table.from_arrays(columns, names=data.column_names)


def _same_text(a: pa.DataType, b: pa.DataType) -> bool:
    return {a, b} <= {pa.string(), pa.large_string(), pa.string_view()}


def widen_columns(table: DeltaTable, widen: dict[str, pa.DataType], stream: str) -> None:
    """Rewrite the table with wider column types in one commit; the table id is kept."""
    snapshot = read_delta(table)
    for name, wider in widen.items():
        position = snapshot.schema.get_field_index(name)
        snapshot = snapshot.set_column(position, name, snapshot.column(name).cast(wider))
    write_deltalake(
        table,
        snapshot,
        mode="overwrite",
        schema_mode="overwrite",
        commit_properties=CommitProperties(
            custom_metadata={
                PREFIX + "operation": "WIDEN COLUMN TYPES",
                PREFIX + "stream": stream,
                PREFIX + "widened": {name: str(t) for name, t in sorted(widen.items())},
            }
        ),
    )


def create_table(table: str | Path, schema: pa.Schema) -> None:
    """Create an empty table so streams that read it can start before any data arrives."""
    if not DeltaTable.is_deltatable(str(table)):
        DeltaTable.create(str(table), schema=schema, mode="ignore")
