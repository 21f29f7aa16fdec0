"""Which commits of a sink table a stream's batches produced, found by identity.

A batch commit is recognised, in order of trust, by
- its `txn` action: appId = the stream name (streamops writers, kafka-delta-ingest style) or the
  query id (Delta's own streaming sink), version = batch id;
- streamops commitInfo keys (`streamops.stream`, `streamops.batchId`; also inside the
  `userMetadata` JSON that the native connector writes);
- Delta's streaming sink commitInfo: operation STREAMING UPDATE with operationParameters
  queryId and epochId.
Never by "the latest version": a table several streams write, or a replayed batch, would lie.
The log is read newest first and only as far back as the caller needs.

A commit that rewrites rows (a CDC stream's MERGE, an UPDATE or DELETE) is not an append: the
rows of the files it added are mostly rows it copied unchanged, so such a commit reports the
rows it inserted, updated and deleted (its `operationMetrics`, as delta-spark and delta-rs each
name them) instead of a row count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass
from typing import Any, Literal

from streamops.core.delta_format.commit_metadata import STREAMING_OPERATION, BatchCommitInfo
from streamops.core.delta_format.log import Commit, DeltaLog
from streamops.core.exceptions import StreamopsError
from streamops.core.storage.location import Location

MatchKind = Literal["txn", "commit_info", "streaming_update"]
ROW_CHANGE_METRICS = {
    "inserted": ("numTargetRowsInserted", "num_target_rows_inserted"),
    "updated": ("numTargetRowsUpdated", "num_target_rows_updated", "numUpdatedRows", "num_updated_rows"),
    "deleted": ("numTargetRowsDeleted", "num_target_rows_deleted", "numDeletedRows", "num_deleted_rows"),
}
"""operationMetrics keys of the rows a rewriting commit changed: delta-spark's, then delta-rs's."""
REWRITE_OPERATIONS = frozenset({"MERGE", "UPDATE", "DELETE"})
"""Rewrites even when they removed no file (a MERGE into an empty table only inserts)."""


@dataclass(frozen=True)
class RowChanges:
    """Rows a rewriting commit inserted, updated and deleted (None: its writer did not say)."""

    inserted: int | None
    updated: int | None
    deleted: int | None

    def to_json(self) -> dict[str, int | None]:
        return {"inserted": self.inserted, "updated": self.updated, "deleted": self.deleted}

    def describe(self) -> str:
        """`+3 ~1 -2`: inserted, updated, deleted."""
        return " ".join(f"{sign}{'?' if n is None else n}" for sign, n in zip("+~-", astuple(self)))


@dataclass(frozen=True)
class StreamIdentity:
    """How a stream names itself in the tables it writes."""

    stream: str
    query_id: str | None = None

    @property
    def app_ids(self) -> tuple[str, ...]:
        return (self.stream,) if not self.query_id else (self.stream, self.query_id)


@dataclass(frozen=True)
class SinkCommit:
    table: Location
    version: int
    batch_id: int
    matched_by: MatchKind
    timestamp_ms: int | None
    rows: int | None
    bytes: int
    files: int
    query_id: str | None
    operation: str | None = None
    """As the writer named it in commitInfo: WRITE, STREAMING UPDATE, MERGE ..."""
    changes: RowChanges | None = None
    """Set for a commit that rewrites rows; `rows` is then None."""

    def to_json(self) -> dict[str, Any]:
        return {
            "table": str(self.table),
            "version": self.version,
            "batch_id": self.batch_id,
            "matched_by": self.matched_by,
            "timestamp_ms": self.timestamp_ms,
            "rows": self.rows,
            "bytes": self.bytes,
            "files": self.files,
            "query_id": self.query_id,
            "operation": self.operation,
            "changes": None if self.changes is None else self.changes.to_json(),
            "row_summary": self.describe_rows(),
        }

    def describe_rows(self) -> str:
        """`(12 rows)` for an append, `(MERGE +3 ~1 -2)` for a rewrite, "" when unknown."""
        if self.changes is not None:
            return f"({self.operation or 'rewrite'} {self.changes.describe()})"
        return "" if self.rows is None else f"({self.rows} rows)"


def batch_of(commit: Commit, identity: StreamIdentity) -> tuple[int, MatchKind, str | None] | None:
    """(batch id, how it was recognised, query id recorded) when `commit` is one of the stream's."""
    info = commit.commit_info
    recorded = BatchCommitInfo.from_commit_info(info)
    query_id = recorded.query_id if recorded else _streaming_query_id(info)
    for app_id in identity.app_ids:
        if app_id in commit.txns:
            return commit.txns[app_id], "txn", query_id
    if recorded is not None and recorded.stream == identity.stream:
        return recorded.batch_id, "commit_info", recorded.query_id
    params = info.get("operationParameters") or {}
    if (
        identity.query_id
        and info.get("operation") == STREAMING_OPERATION
        and params.get("queryId") == identity.query_id
        and str(params.get("epochId", "")).isdigit()
    ):
        return int(params["epochId"]), "streaming_update", identity.query_id
    return None


def sink_commit(table: Location, commit: Commit, identity: StreamIdentity) -> SinkCommit | None:
    found = batch_of(commit, identity)
    if found is None:
        return None
    batch_id, matched_by, query_id = found
    adds = commit.data_adds
    rewrites = commit.data_removes or commit.commit_info.get("operation") in REWRITE_OPERATIONS
    changes = _row_changes(commit) if rewrites else None
    counted = [a.num_records for a in adds]
    if changes is not None:
        rows = None
    elif adds and None not in counted:
        rows = sum(c for c in counted if c is not None)
    else:
        rows = _metric_rows(commit)
    return SinkCommit(
        table=table,
        version=commit.version,
        batch_id=batch_id,
        matched_by=matched_by,
        timestamp_ms=commit.timestamp_ms,
        rows=rows,
        bytes=sum(a.size for a in adds),
        files=len(adds),
        query_id=query_id,
        operation=commit.commit_info.get("operation"),
        changes=changes,
    )


def scan_sink_commits(
    log: DeltaLog,
    identity: StreamIdentity,
    down_to_batch: int | None = None,
    max_commits: int | None = None,
) -> list[SinkCommit]:
    """The stream's commits in `log`, newest first.

    Stops below the first commit of a batch older than `down_to_batch` (a stream's own commits
    are in batch order), after `max_commits` commits read, or where log cleanup left off.
    """
    found: list[SinkCommit] = []
    try:
        latest = log.retention().latest_commit  # one directory listing, no snapshot load
    except (StreamopsError, OSError):
        return found
    read = 0
    for version in range(latest, -1, -1):
        if max_commits is not None and read >= max_commits:
            break
        read += 1
        try:
            commit = log.commit(version)
        except StreamopsError:
            break  # log cleanup removed the older commits
        match = sink_commit(log.table, commit, identity)
        if match is None:
            continue
        found.append(match)
        if down_to_batch is not None and match.batch_id < down_to_batch:
            break
    return found


def _streaming_query_id(info: Mapping[str, Any]) -> str | None:
    params = info.get("operationParameters") or {}
    value = params.get("queryId")
    return str(value) if value else None


def _metric_rows(commit: Commit) -> int | None:
    metrics = commit.commit_info.get("operationMetrics") or {}
    for key in ("num_added_rows", "numOutputRows"):
        if key in metrics:
            return int(metrics[key])
    return None


def _row_changes(commit: Commit) -> RowChanges:
    metrics = commit.commit_info.get("operationMetrics") or {}

    def metric(keys: tuple[str, ...]) -> int | None:
        return next((int(metrics[k]) for k in keys if metrics.get(k) is not None), None)

    return RowChanges(**{name: metric(keys) for name, keys in ROW_CHANGE_METRICS.items()})
