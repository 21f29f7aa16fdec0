"""One Delta commit per table for the files a micro-batch's tasks wrote: the driver's half of
the executor-side write.

Each commit appends the batch's files with a `txn` action (appId = stream, version = batch id),
the mechanism of delta-spark's txnAppId/txnVersion and of kafka-delta-ingest: a table that
already holds that version (a replay after a crash) gets nothing, and the attempt's files are
deleted. Columns the table lacks are added first by a metadata-only commit (delta-rs
`create_write_transaction` does not change the schema), so every commit of a table is an append
or a schema change, never a rewrite, and any stream can read it. A column whose type differs
from the table's is an error: files are only ever written in the table's types.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Literal

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction, CommitProperties, PostCommitHookProperties

from streamops.core.delta_format.commit_metadata import PREFIX, BatchCommitInfo
from streamops.core.delta_format.log import commit_file_name
from streamops.core.delta_format.read import open_table
from streamops.core.lake_layout import CHECKPOINT_INTERVAL_PROPERTY, DELTA_LOG_DIR
from streamops.core.storage.location import Location
from streamops.pipeline.delta_connector.batch_report import BatchReport, FirstRowsFound, TableReport, WrittenBatch
from streamops.pipeline.delta_connector.batch_txn import batch_version, holds_batch
from streamops.pipeline.delta_connector.batch_writer import batch_commit_properties, create_table
from streamops.pipeline.delta_connector.data_files import DataFile, delete_quietly
from streamops.pipeline.delta_connector.write_plan import WritePlan
from streamops.pipeline.exceptions import PipelineConfigError

CommitStatus = Literal["written", "skipped", "empty"]
SCHEMA_OPERATION = "ADD COLUMNS"
MAX_OPEN_TABLES = 512
DELTA_RS_CHECKPOINT_INTERVAL = 100
"""delta-rs's checkpoint interval for a table that does not set one."""
COMMIT_THREADS = 4
"""Commits of one stage made at once: each is a few small writes and reads that delta-rs makes
without holding the GIL, so a silver batch's tens of tables commit in a fraction of the time."""

_open_tables: OrderedDict[str, DeltaTable] = OrderedDict()
_open_tables_lock = threading.Lock()
"""Tables this process has opened, kept between batches. The driver commits batch after batch,
and opening a table reads every commit since its last checkpoint, which for a silver batch of
tens of tables would cost more than the commits themselves. A kept table only reads the commits
made since it last looked."""


class SchemaMismatchError(PipelineConfigError):
    """Data has a column whose type differs from the table's: appending it would lose values."""


@dataclass(frozen=True)
class TableCommit:
    status: CommitStatus
    rows: int = 0
    version: int | None = None


TableCommitter = Callable[[str, list[DataFile], BatchCommitInfo], "TableCommit"]
"""Appends a table's files exactly once for the batch: delta-rs's `commit_files` on embedded,
delta-spark's transactions on native (native_commit.py)."""
SideBySide = Callable[[Callable[[str], tuple[str, TableReport]], list[str]], Iterable[tuple[str, TableReport]]]


def _in_threads(work: Callable[[str], tuple[str, TableReport]], routes: list[str]) -> list[tuple[str, TableReport]]:
    with ThreadPoolExecutor(max_workers=COMMIT_THREADS) as pool:
        return list(pool.map(work, routes))


def commit_written(
    plan: WritePlan,
    written: WrittenBatch,
    before_commit: Callable[[FirstRowsFound], None] | None = None,
    committer: TableCommitter | None = None,
    side_by_side: SideBySide = _in_threads,
) -> BatchReport:
    """Commit what the sink's tasks wrote: nothing if the plan halts on held-back rows and some
    were; else `before_commit` with the first rows found (the files are deleted if it raises),
    then every table of the plan with `committer` (delta-rs's `commit_files` by default), stage
    after stage, the tables of a stage at once (`side_by_side`)."""
    if plan.halt_on_held_rows and any(route not in plan.tables for route in written.tallies):
        delete_files(written.all_files())
        return BatchReport(tallies=written.tallies, halted=True, item_tallies=written.item_tallies)
    if before_commit is not None:
        try:
            before_commit(written.first_rows)
        except BaseException:
            delete_files(written.all_files())
            raise
    reports: dict[str, TableReport] = {}

    def commit(route: str) -> tuple[str, TableReport]:
        routed = written.files.get(route, [])
        target = plan.tables[route]
        done = (committer or commit_files)(target.path, routed, plan.commit)
        newest = [f.newest for f in routed if f.newest is not None]
        version = done.version
        if target.report_version and done.status == "skipped":
            version = batch_version(target.path, plan.commit)
        return route, TableReport(done.status, done.rows, len(routed), max(newest) if newest else None, version)

    for stage in plan.commit_stages:
        reports.update(side_by_side(commit, list(stage)))
    return BatchReport(tables=reports, tallies=written.tallies, item_tallies=written.item_tallies)


def commit_files(table: str, files: list[DataFile], commit: BatchCommitInfo) -> TableCommit:
    """Append `files` to `table` exactly once for (commit.stream, commit.batch_id)."""
    if not files:
        return TableCommit("empty")
    schema = pa.ipc.read_schema(pa.py_buffer(files[0].schema))
    rows = sum(f.rows for f in files)
    existing = _open(table, schema)
    if holds_batch(existing, commit):
        delete_files(files)
        return TableCommit("skipped", rows=rows)
    merged = _merge_schema(existing, [pa.ipc.read_schema(pa.py_buffer(s)) for s in {f.schema for f in files}], commit)
    existing.create_write_transaction(
        [AddAction(f.path, f.size, {}, f.modification_time, True, f.stats) for f in files],
        "append",
        merged,
        commit_properties=batch_commit_properties(commit),
        post_commithook_properties=_post_commit_hooks(existing),
    )
    return TableCommit("written", rows=rows, version=existing.version())


def _post_commit_hooks(table: DeltaTable) -> PostCommitHookProperties:
    """Expired commits are looked for only by the commit that writes a checkpoint, as Delta
    Spark does: delta-rs otherwise lists the whole log after every commit to find them, a cost
    that grows with the log (BENCHMARKS.md). The
    table's own `delta.enableExpiredLogCleanup` still decides at a checkpoint."""
    interval = int(table.metadata().configuration.get(CHECKPOINT_INTERVAL_PROPERTY, DELTA_RS_CHECKPOINT_INTERVAL))
    writes_checkpoint = (table.version() + 1) % interval == 0
    return PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=None if writes_checkpoint else False)


def _open(table: str, schema: pa.Schema) -> DeltaTable:
    """The table, up to date (created with `schema` if it does not exist yet). Tables of one
    stage commit from several threads; each table is used by one of them."""
    with _open_tables_lock:
        handle = _open_tables.pop(table, None)
    if handle is not None and not _still_there(table, handle):
        handle = None  # removed or replaced since it was opened: open it again
    if handle is None:
        create_table(table, schema)
        handle = open_table(table)
    with _open_tables_lock:
        _open_tables[table] = handle
        if len(_open_tables) > MAX_OPEN_TABLES:
            _open_tables.popitem(last=False)
    return handle


def _still_there(table: str, handle: DeltaTable) -> bool:
    """Whether the kept handle still describes the table at `table`: the commit it last saw is
    still in the log (a table deleted and created again at the same path starts over at 0), and
    it reads the commits made since."""
    seen = Location.of(table) / DELTA_LOG_DIR / commit_file_name(handle.version())
    if not seen.exists():
        return False
    try:
        handle.update_incremental()
    except DeltaError:
        return False
    return True


def delete_files(files: Iterable[DataFile]) -> None:
    for data_file in files:
        delete_quietly(data_file.table, data_file.path)


def _merge_schema(table: DeltaTable, schemas: list[pa.Schema], commit: BatchCommitInfo) -> pa.Schema:
    """The table's schema with the files' new columns added by a metadata-only commit."""
    current = pa.schema(table.schema().to_arrow())
    merged = current
    for schema in schemas:
        merged = with_columns(merged, schema, table.table_uri)
    if merged.equals(current):
        return current
    write_deltalake(
        table,
        merged.empty_table(),
        mode="append",
        schema_mode="merge",
        commit_properties=CommitProperties(
            custom_metadata={PREFIX + "operation": SCHEMA_OPERATION, PREFIX + "stream": commit.stream}
        ),
    )
    return pa.schema(table.schema().to_arrow())


def with_columns(current: pa.Schema, incoming: pa.Schema, table: str) -> pa.Schema:
    fields = list(current)
    for field in incoming:
        index = current.get_field_index(field.name)
        if index < 0:
            fields.append(field.with_nullable(True))
            continue
        merged_type = _merged_type(current.field(field.name).type, field.type)
        if merged_type is None:
            raise SchemaMismatchError(
                f"column `{field.name}` of `{table}` is {current.field(field.name).type} but the batch has "
                f"{field.type}; streamops never rewrites a table to change a type: promote the column with "
                "`streamops lake promote`"
            )
        fields[index] = fields[index].with_type(merged_type)
    return pa.schema(fields)


def _merged_type(old: pa.DataType, new: pa.DataType) -> pa.DataType | None:
    """`old` with `new`'s nested fields added; None when the two are different types."""
    if old.equals(new) or _same_text(old, new):
        return old
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        merged = with_columns(pa.schema(list(old)), pa.schema(list(new)), "")
        return pa.struct(list(merged))
    if (pa.types.is_list(old) or pa.types.is_large_list(old)) and (
        pa.types.is_list(new) or pa.types.is_large_list(new)
    ):
        element = _merged_type(old.value_type, new.value_type)
        return None if element is None else pa.list_(old.value_field.with_type(element))
    return None


def _same_text(a: pa.DataType, b: pa.DataType) -> bool:
    return {a, b} <= {pa.string(), pa.large_string(), pa.string_view()}
