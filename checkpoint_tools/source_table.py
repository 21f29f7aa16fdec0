"""The Delta table a checkpoint's Delta source reads, seen from the checkpoint's side.

Wraps the shared `DeltaLog`/`DeltaFileIndex` with the few questions correlation and diagnosis
ask: is the table there, is it the same table, how far back does its log reach, which files lie
between two recorded offsets, and are those files still on disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from deltalake.exceptions import DeltaError

from streamops.checkpoint.reader import Checkpoint
from streamops.delta.log import DeltaLog, LogRetention, data_file_path
from streamops.delta.source_offsets import BASE_INDEX, DeltaFileIndex, DeltaSourceOffset, IndexedFile
from streamops.exceptions import TableNotFoundError, VersionNotInLogError
from streamops.storage.location import Location


def delta_source_slot(checkpoint: Checkpoint) -> int | None:
    """Position of the (first) Delta source in the offsets lines, from the newest batch read."""
    for batch_id in sorted(checkpoint.offsets, reverse=True):
        for slot, offset in enumerate(checkpoint.offsets[batch_id].sources):
            if offset.kind == "delta":
                return slot
    return None


def reservoir_id(checkpoint: Checkpoint) -> str | None:
    """The table id the (first) Delta source of the newest batch reads, if any."""
    slot = delta_source_slot(checkpoint)
    end = None if slot is None else delta_end(checkpoint, checkpoint.latest_planned, slot)
    return end.reservoir_id if end is not None and end.reservoir_id else None


def delta_end(checkpoint: Checkpoint, batch_id: int | None, slot: int) -> DeltaSourceOffset | None:
    """The Delta end offset batch `batch_id` recorded for the source at `slot`."""
    if batch_id is None or batch_id not in checkpoint.offsets:
        return None
    sources = checkpoint.offsets[batch_id].sources
    return sources[slot].delta if slot < len(sources) else None


def processed_position(checkpoint: Checkpoint, slot: int) -> DeltaSourceOffset | None:
    """Where the Delta source at `slot` has processed through: the latest committed batch's end
    offset, or, before any commit, the position just before batch 0's data. A restart (and a
    replay of an uncommitted batch) reads on from there. None when the checkpoint cannot tell."""
    committed = delta_end(checkpoint, checkpoint.latest_committed, slot)
    if committed is not None:
        return committed
    if checkpoint.latest_committed is None:
        first = delta_end(checkpoint, 0, slot)
        if first is not None:
            return DeltaSourceOffset(first.reservoir_version, BASE_INDEX, first.is_starting_version, first.reservoir_id)
    return None


@dataclass
class SourceTable:
    path: Location

    @cached_property
    def log(self) -> DeltaLog:
        return DeltaLog(self.path)

    @cached_property
    def index(self) -> DeltaFileIndex:
        return DeltaFileIndex(self.log, read_mode="skipChangeCommits", strict=False)

    def exists(self) -> bool:
        """Loads the table once (delta-rs); every later question reuses that load."""
        try:
            self.log.delta_table  # noqa: B018 - loading is the check
        except TableNotFoundError:
            return False
        return True

    @cached_property
    def table_id(self) -> str:
        return self.log.table_id()

    @cached_property
    def latest_version(self) -> int:
        return self.log.latest_version()

    @cached_property
    def retention(self) -> LogRetention:
        return self.log.retention()

    def files_between(self, start: DeltaSourceOffset | None, end: DeltaSourceOffset) -> list[IndexedFile]:
        """Exactly the files a batch from `start` to `end` read.

        Raises `VersionNotInLogError` when log cleanup removed what the range needs.
        """
        try:
            return self.index.files_between(start, end)
        except DeltaError as error:
            raise VersionNotInLogError(
                f"cannot rebuild the snapshot at version {end.reservoir_version} of `{self.path}` "
                f"(log cleanup removed it): {str(error).splitlines()[0]}"
            ) from error

    def files_after(self, position: DeltaSourceOffset) -> list[IndexedFile]:
        """Every file after `position` through the latest version: what is still to be read."""
        try:
            return list(self.index.files_after(position, self.latest_version))
        except DeltaError as error:
            raise VersionNotInLogError(
                f"cannot rebuild the snapshot at version {position.reservoir_version} of "
                f"`{self.path}` (log cleanup removed it): {str(error).splitlines()[0]}"
            ) from error

    def first_needed_version(self, position: DeltaSourceOffset) -> tuple[int, bool] | None:
        """(version, needs its snapshot) the next batch after `position` must read, or None when
        the stream is waiting for versions that do not exist yet."""
        if position.is_starting_version:
            return position.reservoir_version, True
        if position.reservoir_version > self.latest_version:
            return None
        return position.reservoir_version, False

    def missing_files(self, files: list[IndexedFile]) -> list[IndexedFile]:
        """Files the log still lists but the storage no longer holds (VACUUM ran)."""
        return [f for f in files if not Location.of(data_file_path(self.path, f.file.path)).is_file()]
