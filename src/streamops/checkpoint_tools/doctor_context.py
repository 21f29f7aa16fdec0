"""What the doctor's checks share: the checkpoint, its tables, and facts computed at most once.

Every fact is lazy, so a check that is not relevant (no Delta source, no sink) costs nothing,
and the expensive ones (loading a table through delta-rs, scanning a sink log tail, listing the
files still to read) are computed once per checkpoint however many checks use them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from streamops.checkpoint_tools.findings import Finding, FindingCode, Severity
from streamops.checkpoint_tools.sink_commits import SinkCommit, StreamIdentity, scan_sink_commits
from streamops.checkpoint_tools.source_table import SourceTable
from streamops.core.checkpoint_format.delta_positions import delta_end, delta_source_slot, processed_position
from streamops.core.checkpoint_format.reader import Checkpoint
from streamops.core.delta_format.backlog import Backlog, delta_backlog
from streamops.core.delta_format.damaged_files import DamagedFile, damaged_files, outside_delta
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import DeltaSourceOffset, IndexedFile
from streamops.core.exceptions import VersionNotInLogError
from streamops.core.storage.location import Location


@dataclass(frozen=True)
class DoctorSettings:
    """Thresholds; the defaults suit streams that trigger every few seconds to minutes."""

    recent_batches: int = 20
    backlog_warning_seconds: float = 3600.0
    stall_seconds: float = 900.0
    retention_warning_seconds: float = 86400.0
    sink_scan_commits: int = 20
    now: float | None = None
    kafka_bootstrap: str | None = None
    """Kafka brokers to compare a Kafka source's checkpoint with (None: Kafka is not checked)."""


class DoctorContext:
    def __init__(
        self,
        checkpoint: Checkpoint,
        stream: str,
        source_table: Location | None,
        sinks: dict[Location, DeltaLog],
        settings: DoctorSettings,
    ) -> None:
        self.checkpoint = checkpoint
        self.stream = stream
        self.source_path = source_table
        self.sinks = sinks
        self.settings = settings
        self.now = settings.now if settings.now is not None else time.time()

    def finding(self, code: FindingCode, severity: Severity, message: str, fix: str, **evidence: Any) -> Finding:
        return Finding(code, severity, self.stream, message, fix, evidence)

    @cached_property
    def identity(self) -> StreamIdentity:
        return StreamIdentity(self.stream, self.checkpoint.query_id)

    @cached_property
    def delta_slot(self) -> int | None:
        return delta_source_slot(self.checkpoint)

    @cached_property
    def source(self) -> SourceTable | None:
        """The Delta source table, when there is a Delta source and its table is known."""
        if self.source_path is None or self.delta_slot is None:
            return None
        return SourceTable(self.source_path)

    @cached_property
    def source_usable(self) -> bool:
        """True when the source exists and is the table the checkpoint was reading."""
        source = self.source
        if source is None or not source.exists():
            return False
        latest = delta_end(self.checkpoint, self.checkpoint.latest_planned, self.delta_slot or 0)
        return latest is None or not latest.reservoir_id or latest.reservoir_id == source.table_id

    @cached_property
    def processed_position(self) -> DeltaSourceOffset | None:
        """Where the Delta source's processed data ends: the latest committed batch's end offset,
        or, before any commit, the position just before batch 0's data."""
        if self.delta_slot is None:
            return None
        return processed_position(self.checkpoint, self.delta_slot)

    @cached_property
    def pending_files(self) -> list[IndexedFile]:
        """Source files after the processed position: the uncommitted batch and the backlog.
        Raises VersionNotInLogError when log cleanup removed what they need."""
        assert self.source is not None and self.processed_position is not None
        return self.source.files_after(self.processed_position)

    @cached_property
    def damaged_pending(self) -> list[DamagedFile]:
        """Pending files the store lacks or holds at another size than their add records (one
        stat each). Raises VersionNotInLogError as `pending_files` does."""
        assert self.source is not None
        return damaged_files(self.source.path, self.pending_files)

    @cached_property
    def damaged_outside_delta(self) -> list[DamagedFile]:
        """Those of `damaged_pending` VACUUM cannot have caused: truncated, or still live."""
        assert self.source is not None
        return outside_delta(self.source.log, self.damaged_pending)

    @cached_property
    def backlog(self) -> Backlog | None:
        """What waits in the Delta source after the processed position (sizes, age, retention
        headroom, unread change commits); None when there is no usable source or position, or
        when log cleanup removed what it needs (`check_source_retention` reports that)."""
        if not self.source_usable or self.processed_position is None:
            return None
        try:
            return delta_backlog(self.source.index, self.processed_position, now=self.now)  # type: ignore[union-attr]
        except VersionNotInLogError:
            return None

    @cached_property
    def sink_txns(self) -> dict[Location, int | None]:
        """Per sink: the stream's txn version (the last batch it committed there).

        The newest txn of the stream in the log tail already read is that version (a txn
        supersedes older ones); only a stream that has not written lately costs a full
        snapshot load through delta-rs.
        """
        txns = {}
        for table, log in self.sinks.items():
            in_tail = [c.batch_id for c in self.recent_sink_commits[table] if c.matched_by == "txn"]
            if in_tail:
                txns[table] = in_tail[0]
                continue
            versions = [v for v in (log.txn_version(a) for a in self.identity.app_ids) if v is not None]
            txns[table] = max(versions) if versions else None
        return txns

    @cached_property
    def stream_txn(self) -> int | None:
        known = [v for v in self.sink_txns.values() if v is not None]
        return max(known) if known else None

    @cached_property
    def recent_sink_commits(self) -> dict[Location, list[SinkCommit]]:
        """The stream's commits among each sink's newest `sink_scan_commits` commits, newest first."""
        return {
            table: scan_sink_commits(log, self.identity, max_commits=self.settings.sink_scan_commits)
            for table, log in self.sinks.items()
        }
