"""The driver-side writer of the pipeline's own small tables (registry, event groups, schema
alerts): rows the driver itself makes, committed with delta-rs.

Every commit carries a Delta `txn` action (appId = stream name, version = batch id), as the
executor-side sink's commits do: a replayed batch finds its txn already in the table and writes
nothing. New columns merge (an append plus metadata; the table id never changes, a test guards
it); a column is never rewritten to another type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import is_table, open_table
from streamops.core.lake_layout import TABLE_CONFIGURATION
from streamops.core.storage.location import Location, LocationLike
from streamops.pipeline.delta_connector.batch_txn import batch_transaction, holds_batch

WriteStatus = Literal["written", "skipped", "empty"]


@dataclass(frozen=True)
class WriteOutcome:
    status: WriteStatus
    version: int | None = None
    rows: int = 0


def write_batch(table: LocationLike, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome:
    """Append `data` exactly once for (commit.stream, commit.batch_id)."""
    if data.num_rows == 0:
        return WriteOutcome("empty")
    location = Location.of(table)
    existing = open_table(location) if is_table(location) else None
    if existing is not None and holds_batch(existing, commit):
        return WriteOutcome("skipped", rows=data.num_rows)
    write_deltalake(
        existing or str(location),
        data,
        mode="append",
        schema_mode="merge",
        configuration=TABLE_CONFIGURATION,
        storage_options=None if existing is not None else location.storage_options(),
        commit_properties=batch_commit_properties(commit),
    )
    return WriteOutcome("written", version=open_table(location).version(), rows=data.num_rows)


def mark_batch(table: LocationLike, commit: BatchCommitInfo) -> WriteOutcome:
    """Commit the batch's `txn` and nothing else, once: a batch that read data and rightly wrote
    none is then provably done (the doctor's `sink_txn_behind` tells it from a lost one), and its
    replay is skipped like any other."""
    existing = open_table(table)
    if holds_batch(existing, commit):
        return WriteOutcome("skipped")
    existing.create_write_transaction(
        [], "append", existing.schema().to_arrow(), commit_properties=batch_commit_properties(commit)
    )
    return WriteOutcome("written", version=existing.version())


def batch_commit_properties(commit: BatchCommitInfo) -> CommitProperties:
    """The batch's identity in its commit: the `txn` that makes replays skip, and commitInfo."""
    return CommitProperties(
        custom_metadata=commit.to_custom_metadata(),
        app_transactions=[batch_transaction(commit)],
    )


def create_table(
    table: LocationLike, schema: pa.Schema, configuration: Mapping[str, str] = TABLE_CONFIGURATION
) -> None:
    """Create an empty table unless one exists, so streams that read it can start before any
    data arrives and a commit can add to it (delta-rs)."""
    location = Location.of(table)
    if not is_table(location):
        DeltaTable.create(
            str(location),
            schema=schema,
            mode="ignore",
            configuration=dict(configuration),
            storage_options=location.storage_options(),
        )
