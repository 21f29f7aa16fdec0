"""One table's batch of changes applied with delta-rs MERGEs, on the driver (the embedded connector).

The batch's typed changes come to the driver as Arrow (Spark's `toArrow`), are decided there with
the reference functions (pipeline/cdc/change_apply.py) and merged with delta-rs: rows of the
batch pass through the driver, unlike the embedded connector's appends. The MERGEs run in a fixed
order, each one txn-idempotent for (stream, batch id): the history first (its decisions read the
current state and the deleted keys as they were before the batch), then the deleted keys, then the
current state. A replay after a crash between two of them skips what is done; the others decide
as the first attempt did (a newer change's marker and row are what the first attempt left).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake.table import TableMerger
from deltalake.transaction import CommitProperties

from streamops.core.delta_format.commit_metadata import PREFIX, BatchCommitInfo
from streamops.core.delta_format.file_stats import may_hold_older
from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.core.lake_layout import TABLE_CONFIGURATION
from streamops.core.storage.location import Location
from streamops.pipeline.cdc import cdc_tables as tables
from streamops.pipeline.cdc.change_apply import (
    EVENT_TIME,
    KEY,
    SEQUENCE,
    Row,
    decide,
    marker_cutoff,
)
from streamops.pipeline.cdc.debezium_envelope import TRUNCATE_KEY
from streamops.pipeline.delta_connector.batch_txn import batch_transaction, holds_batch
from streamops.pipeline.delta_connector.batch_writer import create_table
from streamops.pipeline.lake_tables import table_access

DIALECT: tables.Dialect = "datafusion"


@dataclass(frozen=True)
class MergeCounts:
    """What the MERGEs of one table's batch did."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    history_versions: int = 0
    truncated: bool = False
    silver_version: int | None = None


@dataclass(frozen=True)
class DeletedKeys:
    """A table's deleted keys: key -> the sequence of its delete, and its last truncate."""

    keys: dict[str, str]
    truncated: str | None
    rows: list[Row]


def read_deleted_keys(table: Location) -> DeletedKeys:
    if not is_table(table):
        return DeletedKeys({}, None, [])
    found = read_delta(table).to_pylist()
    rows = [{KEY: r["key"], SEQUENCE: r["sequence"], EVENT_TIME: r["deleted_at"]} for r in found]
    keys: dict[str, str] = {}
    for r in found:
        if r["key"] != TRUNCATE_KEY:
            keys[r["key"]] = max(keys.get(r["key"], r["sequence"]), r["sequence"])
    truncated = max((r["sequence"] for r in found if r["key"] == TRUNCATE_KEY), default=None)
    return DeletedKeys(keys, truncated, rows)


def apply_embedded(
    changes: pa.Table, target: tables.CdcTarget, commit: BatchCommitInfo, retention_seconds: float
) -> MergeCounts:
    """Apply one table's typed changes (flat row columns + tables.CHANGE_COLUMNS + lineage)."""
    rows = changes.to_pylist()
    with table_access(target.deleted_keys, "read"):
        deleted = read_deleted_keys(target.deleted_keys)
    held = _held_sequences(target, changes) if target.history is not None else None
    batch = decide(rows, deleted.keys, deleted.truncated, held)
    row_schema = _row_schema(changes)
    versions = 0
    if target.history is not None and (batch.history or batch.closes_all):
        versions = _merge_history(target, row_schema, batch.history, batch.closes_all, commit)
    cutoff = marker_cutoff(rows, retention_seconds)
    if batch.markers:
        _merge_deleted_keys(target.deleted_keys, batch.markers, cutoff, commit)
    if not batch.current and batch.truncate is None:
        return MergeCounts(history_versions=versions)
    metrics, version = _merge_current(target, row_schema, batch.current, batch.truncate, commit)
    return MergeCounts(
        inserted=metrics.get("num_target_rows_inserted", 0),
        updated=metrics.get("num_target_rows_updated", 0),
        deleted=metrics.get("num_target_rows_deleted", 0),
        history_versions=versions,
        truncated=batch.truncate is not None,
        silver_version=version,
    )


def _row_schema(changes: pa.Table) -> pa.Schema:
    """The typed changes' columns in the types a table keeps (Spark's Arrow may send large strings)."""
    fields = []
    for field in changes.schema:
        kind = pa.string() if pa.types.is_large_string(field.type) else field.type
        fields.append(field.with_type(kind).with_nullable(True))
    return pa.schema(fields)


def _columns(row_schema: pa.Schema, extra: tuple[str, ...], helpers: tuple[str, ...] = ()) -> pa.Schema:
    """A table's schema: the row's own columns, then `extra` (and the MERGE's `helpers`)."""
    own = [f for f in row_schema if f.name not in tables.CHANGE_COLUMNS and f.name not in tables.CURRENT_EXTRA]
    kinds = {**{f.name: f.type for f in row_schema}, **_EXTRA_TYPES}
    return pa.schema([*own, *(pa.field(name, kinds[name]) for name in (*extra, *helpers))])


_EXTRA_TYPES = {
    tables.VALID_FROM: pa.string(),
    tables.VALID_TO: pa.string(),
    tables.VALID_FROM_TIME: tables.UTC_TIMESTAMP,
    tables.VALID_TO_TIME: tables.UTC_TIMESTAMP,
    tables.ACTION: pa.string(),
    tables.MATCH_FROM: pa.string(),
}


def _held_sequences(target: tables.CdcTarget, changes: pa.Table) -> dict[str, str]:
    """The current row's sequence of each key the batch touches (key text -> sequence)."""
    if not is_table(target.current):
        return {}
    keyed = changes.select([*target.keys, KEY]).filter(pc.not_equal(changes.column(tables.OP), "t"))
    text_of = {tuple(r[k] for k in target.keys): r[KEY] for r in keyed.to_pylist()}
    with table_access(target.current, "read"):  # the key columns of the whole table: history costs a scan
        held = read_delta(target.current, columns=[*target.keys, SEQUENCE]).to_pylist()
    found = {}
    for row in held:
        text = text_of.get(tuple(row[k] for k in target.keys))
        if text is not None:
            found[text] = row[SEQUENCE]
    return found


def _commit_properties(commit: BatchCommitInfo) -> CommitProperties:
    """The batch's identity without the append's STREAMING UPDATE parameters: a MERGE names its own."""
    metadata = {
        k: v for k, v in commit.to_custom_metadata().items() if k not in ("operationParameters", PREFIX + "operation")
    }
    return CommitProperties(custom_metadata=metadata, app_transactions=[batch_transaction(commit)])


def _opened(
    table: Location, schema: pa.Schema, configuration: Mapping[str, str], commit: BatchCommitInfo
) -> DeltaTable | None:
    """The table, created with `schema` if missing; None when it already holds this batch."""
    with table_access(table, "create"):
        create_table(table, schema, configuration)
        handle = open_table(table)
    return None if holds_batch(handle, commit) else handle


def _merger(
    table: DeltaTable, source: pa.Table, predicate: str, commit: BatchCommitInfo, merge_schema: bool = False
) -> TableMerger:
    """A MERGE of `source` (alias `s`) into `table` (alias `t`) that commits the batch's identity."""
    return table.merge(
        source,
        predicate,
        source_alias="s",
        target_alias="t",
        merge_schema=merge_schema,
        commit_properties=_commit_properties(commit),
    )


def _source(rows: list[Row], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows], schema=schema)


def _merge_current(
    target: tables.CdcTarget,
    row_schema: pa.Schema,
    current: list[Row],
    truncate: tuple[str, Any] | None,
    commit: BatchCommitInfo,
) -> tuple[dict[str, Any], int | None]:
    schema = _columns(row_schema, tables.CURRENT_EXTRA)
    table = _opened(target.current, target.marked(schema), tables.CDC_TABLE_CONFIGURATION, commit)
    if table is None:
        return {}, None
    predicates = tables.current_predicates(DIALECT)
    with table_access(target.current, f"merge batch {commit.batch_id} of `{commit.stream}` into"):
        merger = (
            _merger(table, _source(current, schema), tables.keys_match(target.keys, DIALECT), commit, merge_schema=True)
            .when_matched_delete(predicates["delete"])
            .when_matched_update_all(predicates["update"])
            .when_not_matched_insert_all(predicates["insert"])
        )
        if truncate is not None:
            merger = merger.when_not_matched_by_source_delete(tables.truncated_rows(truncate[0], DIALECT))
        metrics = merger.execute()
        return metrics, table.version()


def _merge_deleted_keys(table_path: Location, markers: list[Row], cutoff: Any, commit: BatchCommitInfo) -> None:
    """Record the batch's markers; drop those of deletes older than `cutoff`, a clause that
    rewrites every file of the table, so only when the files' statistics say one may be."""
    table = _opened(table_path, tables.DELETED_KEYS_SCHEMA, TABLE_CONFIGURATION, commit)
    if table is None:
        return
    source = pa.Table.from_pylist(
        [{column: row[change] for column, change in tables.DELETED_KEYS_COLUMNS.items()} for row in markers],
        schema=tables.DELETED_KEYS_SCHEMA,
    )
    predicates = tables.deleted_keys_predicates(DIALECT)
    values = tables.source_values(tables.DELETED_KEYS_SCHEMA.names, DIALECT)
    with table_access(table_path, f"merge batch {commit.batch_id} of `{commit.stream}` into"):
        merger = (
            _merger(table, source, "t.key = s.key", commit)
            .when_matched_update(values, predicates["record"])
            .when_matched_delete(predicates["remove"])
            .when_not_matched_insert(values, predicates["insert"])
        )
        if cutoff is not None and may_hold_older(table, "deleted_at", cutoff):
            merger = merger.when_not_matched_by_source_delete(tables.expired_deleted_keys(cutoff.isoformat(), DIALECT))
        merger.execute()


def _merge_history(
    target: tables.CdcTarget,
    row_schema: pa.Schema,
    rows: list[Row],
    closes_all: tuple[str, Any] | None,
    commit: BatchCommitInfo,
) -> int:
    assert target.history is not None
    schema = _columns(row_schema, tables.HISTORY_EXTRA)
    table = _opened(target.history, target.marked(schema), tables.CDC_TABLE_CONFIGURATION, commit)
    if table is None:
        return 0
    source_schema = _columns(row_schema, tables.HISTORY_EXTRA, tables.HISTORY_HELPERS)
    predicates = tables.history_predicates(DIALECT)
    with table_access(target.history, f"merge batch {commit.batch_id} of `{commit.stream}` into"):
        merger = (
            _merger(
                table,
                _source(rows, source_schema),
                tables.history_match(target.keys, DIALECT),
                commit,
                merge_schema=True,
            )
            .when_matched_update(tables.close_values(DIALECT), predicates["close"])
            .when_not_matched_insert_all(predicates["insert"], except_cols=list(tables.HISTORY_HELPERS))
        )
        if closes_all is not None:
            end = tables.truncate_close_values(closes_all[0], closes_all[1].isoformat(), DIALECT)
            merger = merger.when_not_matched_by_source_update(end, tables.open_versions_before(closes_all[0], DIALECT))
        return merger.execute().get("num_target_rows_inserted", 0)
