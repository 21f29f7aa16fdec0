"""How far a Delta-sourced stream is behind its source, in the four dimensions users watch:
versions, files, bytes and seconds (age of the oldest commit it has not processed), and what
waits there that can break it: retention that will delete unread files or commits (headroom),
and unread commits that are not appends (`streamops.core.delta_format.change_commits`).

Spark-free: the monitor computes it for live metrics and checkpoint_tools for diagnosis, both
from a recorded end offset and the source table's log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from streamops.core.delta_format.change_commits import ChangeCommit
from streamops.core.delta_format.retention import RetentionHeadroom
from streamops.core.delta_format.source_offsets import DeltaFileIndex, DeltaSourceOffset


@dataclass(frozen=True)
class Backlog:
    """`retention`: time left before VACUUM or log cleanup may remove the oldest unread data
    (None when nothing is unread, or not a Delta source); `change_commits`: unread commits that
    are not appends."""

    versions: int
    files: int
    bytes: int
    seconds: float
    oldest_pending_version: int | None = None
    retention: RetentionHeadroom | None = None
    change_commits: tuple[ChangeCommit, ...] = ()

    @property
    def is_empty(self) -> bool:
        return self.files == 0


NO_BACKLOG = Backlog(0, 0, 0, 0.0, None)


def delta_backlog(index: DeltaFileIndex, processed: DeltaSourceOffset, now: float | None = None) -> Backlog:
    """Backlog after `processed` (a batch's end offset) up to the table's latest version.

    A stream that has not run a batch yet reports the initial offset, which names no version:
    a stream starting from the snapshot has the whole latest snapshot waiting; one starting
    at `latest` has nothing waiting until the next commit."""
    latest = index.refresh()
    if processed.is_initial:
        if not processed.is_starting_version or latest < 0:
            return NO_BACKLOG
        processed = replace(processed, reservoir_version=latest)
    pending = list(index.files_after(processed, latest))
    changes = tuple(index.changes_between(processed.reservoir_version, latest))
    if not pending:
        return replace(NO_BACKLOG, change_commits=changes)
    oldest = pending[0].version
    committed_ms = index.log.commit_time_ms(oldest)
    current = time.time() if now is None else now
    age = max(0.0, current - committed_ms / 1000.0) if committed_ms else 0.0
    return Backlog(
        versions=latest - oldest + 1,
        files=len(pending),
        bytes=sum(item.file.size for item in pending),
        seconds=age,
        oldest_pending_version=oldest,
        retention=index.log.table_retention().headroom(committed_ms, current) if committed_ms else None,
        change_commits=changes,
    )
