"""The Delta table a checkpoint's Delta source reads, seen from the checkpoint's side.

Wraps the shared `DeltaLog`/`DeltaFileIndex` with the few questions correlation and diagnosis
ask: is the table there, is it the same table, how far back does its log reach, and which files
lie between two recorded offsets (whether they are still on disk: `streamops.core.delta_format.damaged_files`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from deltalake.exceptions import DeltaError

from streamops.core.checkpoint_format.delta_positions import unread_files
from streamops.core.delta_format.log import DeltaLog, LogRetention
from streamops.core.delta_format.source_offsets import DeltaFileIndex, DeltaSourceOffset, IndexedFile
from streamops.core.exceptions import TableNotFoundError, VersionNotInLogError
from streamops.core.storage.location import Location


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
        """Every file after `position` through the latest version: what is still to be read.

        Raises `VersionNotInLogError` when log cleanup removed what they need."""
        return unread_files(self.index, position)

    def first_needed_version(self, position: DeltaSourceOffset) -> tuple[int, bool] | None:
        """(version, needs its snapshot) the next batch after `position` must read, or None when
        the stream is waiting for versions that do not exist yet."""
        if position.is_starting_version:
            return position.reservoir_version, True
        if position.reservoir_version > self.latest_version:
            return None
        return position.reservoir_version, False
