"""A batch's `txn` in a table: what makes every commit of the pipeline exactly once.

Each commit a batch makes carries a Delta `txn` action, appId = the stream and version = the
batch id (delta-spark's txnAppId/txnVersion, kafka-delta-ingest's mechanism). A stream's batch
ids only grow, so a table whose txn for the stream is at or past a batch id already holds that
batch: its replay after a crash, and any older batch, commits nothing.
"""

from __future__ import annotations

from deltalake import DeltaTable
from deltalake.transaction import Transaction

from streamops.core.delta_format.commit_metadata import BatchCommitInfo, txn_holds_batch
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.read import is_table, open_table
from streamops.core.storage.location import LocationLike

BATCH_VERSION_LOOKBACK = 100
"""Commits `batch_version` reads back from the newest: the batch's own is the newest but for the
commits other writers made since (another stream's append, a promote)."""


def batch_transaction(commit: BatchCommitInfo) -> Transaction:
    """The `txn` action every commit of the batch carries (delta-rs)."""
    return Transaction(app_id=commit.stream, version=commit.batch_id)


def holds_batch(table: DeltaTable, commit: BatchCommitInfo) -> bool:
    """Whether `table` already holds the batch: its txn for the stream is at or past the batch id."""
    return txn_holds_batch(table.transaction_version(commit.stream), commit.batch_id)


def table_holds_batch(table: LocationLike, commit: BatchCommitInfo) -> bool:
    """`holds_batch` for the table at `table`; one not created yet holds nothing."""
    return is_table(table) and holds_batch(open_table(table), commit)


def batch_version(table: LocationLike, commit: BatchCommitInfo) -> int | None:
    """The version of `table` whose commit carries the batch's txn, read back from the newest
    commit; None when the table holds no such commit within reach (the batch wrote nothing to it,
    or log cleanup removed the commit)."""
    if not is_table(table):
        return None
    log = DeltaLog(table)
    retention = log.retention()
    for version in range(retention.latest_commit, max(retention.earliest_commit, 0) - 1, -1):
        if retention.latest_commit - version >= BATCH_VERSION_LOOKBACK:
            return None
        txn = log.commit(version).txns.get(commit.stream)
        if txn == commit.batch_id:
            return version
        if txn is not None and txn < commit.batch_id:
            return None
    return None
