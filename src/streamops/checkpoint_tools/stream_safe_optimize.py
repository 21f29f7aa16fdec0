"""OPTIMIZE (compaction) for tables that streams write and read.

Streaming writers leave many small files; delta-rs `optimize.compact` rewrites them into fewer
large ones in one commit whose `remove` and `add` actions all carry dataChange=false, so a
streaming reader (Delta's own source, and streamops' embedded one) skips it: no row is read twice.
Around it:

- a concurrent commit that conflicts (delta-rs raises `CommitFailedError`, e.g. a DELETE of a file
  being compacted) makes the compaction start again from the new snapshot, up to `max_attempts`;
  concurrent appends, what streams write, do not conflict;
- delta-rs does not detect a concurrent compaction of the same files (it ignores removes with
  dataChange=false when it checks conflicts): both commits land and the rows are duplicated. So
  the commit is checked afterwards against every commit it raced with, and such a race is
  reported as an error naming the versions, never passed over.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import CommitProperties

from streamops.checkpoint_tools.stream_readers import StreamRead, StreamReaders
from streamops.core.delta_format.commit_metadata import PREFIX
from streamops.core.delta_format.log import Commit, DeltaLog
from streamops.core.exceptions import StreamopsError, TableNotFoundError
from streamops.core.storage.location import Location

MAX_ATTEMPTS = 5
DEFAULT_TARGET_SIZE = 100 * 1024 * 1024
"""delta-rs' default when the table sets no `delta.targetFileSize`."""
TARGET_SIZE_KEY = "delta.targetFileSize"
RUN_KEY = PREFIX + "optimizeRun"


@dataclass(frozen=True)
class TableOptimize:
    """The compaction of one table: planned (`dry_run`) or done."""

    table: Location
    dry_run: bool
    target_size: int
    live_files: int
    small_files: int
    readers: tuple[StreamRead, ...] = ()
    version: int | None = None
    files_removed: int = 0
    files_added: int = 0
    attempts: int = 0
    raced_with: tuple[int, ...] = ()

    @property
    def duplicated(self) -> bool:
        """True when a concurrent compaction of the same files landed too (rows duplicated)."""
        return bool(self.raced_with)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": str(self.table),
            "dry_run": self.dry_run,
            "target_size": self.target_size,
            "live_files": self.live_files,
            "small_files": self.small_files,
            "version": self.version,
            "files_removed": self.files_removed,
            "files_added": self.files_added,
            "attempts": self.attempts,
            "data_change": False,
            "duplicated_by_concurrent_compaction": list(self.raced_with),
            "streams_reading": [r.to_json() for r in self.readers],
        }


class CompactionConflictError(StreamopsError):
    """The compaction kept conflicting with concurrent commits."""


def optimize_table(
    table: Location,
    readers: StreamReaders,
    target_size: int | None = None,
    dry_run: bool = True,
    max_attempts: int = MAX_ATTEMPTS,
    log: DeltaLog | None = None,
) -> TableOptimize:
    """Compact `table`'s small files in a data-change-free commit (or only count them)."""
    log = log or DeltaLog(table)
    handle = _open(log)
    size = target_size or int(handle.metadata().configuration.get(TARGET_SIZE_KEY) or DEFAULT_TARGET_SIZE)
    sizes = handle.get_add_actions(flatten=True).column("size_bytes").to_pylist()
    reads = tuple(readers.of_table(handle.metadata().id))
    planned = TableOptimize(table, dry_run, size, len(sizes), sum(1 for s in sizes if s < size), reads)
    if dry_run:
        return planned
    run = str(uuid.uuid4())
    for attempt in range(1, max_attempts + 1):
        if attempt > 1:
            handle = _open(log)
        read_version = handle.version()
        try:
            metrics = _compact(handle, size, run)
        except CommitFailedError:
            continue
        if not metrics.get("numFilesRemoved"):
            return _done(planned, None, 0, 0, attempt, ())
        version = handle.version()
        ours = log.commit(version)
        if ours.commit_info.get(RUN_KEY) != run:
            raise StreamopsError(f"cannot find the compaction commit of `{table}` at version {version}")
        raced = _raced_compactions(log, ours, read_version)
        return _done(planned, version, len(ours.removes), len(ours.adds), attempt, raced)
    raise CompactionConflictError(
        f"the compaction of `{table}` conflicted with concurrent commits {max_attempts} times: run it "
        "again when the table is quieter, or compact one partition at a time"
    )


def _open(log: DeltaLog) -> DeltaTable:
    """A new handle on the table's latest version (a missing table: one-line TableNotFoundError)."""
    if not log.exists():
        raise TableNotFoundError(f"no Delta table at `{log.table}`: check the path")
    return log.open_version()


def _compact(handle: DeltaTable, size: int, run: str) -> dict[str, Any]:
    try:
        return handle.optimize.compact(
            target_size=size,
            commit_properties=CommitProperties(custom_metadata={PREFIX + "operation": "OPTIMIZE", RUN_KEY: run}),
        )
    except CommitFailedError:
        raise
    except DeltaError as error:
        text = str(error).strip()
        raise StreamopsError(
            f"delta-rs cannot compact `{handle.table_uri}`: {text.splitlines()[0][:300] if text else 'DeltaError'}"
        ) from error


def _raced_compactions(log: DeltaLog, ours: Commit, read_version: int) -> tuple[int, ...]:
    """Commits between the snapshot the compaction read and its own that removed a file it also
    removed: the same rows now live in both compactions' output."""
    removed = {r.path for r in ours.removes}
    return tuple(
        commit.version
        for commit in log.commits(read_version + 1, ours.version - 1)
        if removed & {r.path for r in commit.removes}
    )


def _done(
    planned: TableOptimize, version: int | None, removed: int, added: int, attempts: int, raced: tuple[int, ...]
) -> TableOptimize:
    return TableOptimize(
        planned.table,
        False,
        planned.target_size,
        planned.live_files,
        planned.small_files,
        planned.readers,
        version,
        removed,
        added,
        attempts,
        raced,
    )
