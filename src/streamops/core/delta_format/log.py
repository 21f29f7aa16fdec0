"""A Spark-free reader of Delta transaction logs.

delta-rs answers table-level questions (table id, latest version, txn versions, history); the
actions of one specific commit are read from its `_delta_log/<version>.json` file, which is the
only place Delta keeps "which files did version N add". The streaming source, checkpoint_tools
and the monitor all read commits through this module. A table is a `Location` (local or object
store); delta-rs opens it with the storage options of our storage layer, so both see the same
endpoint and credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import unquote

import orjson
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from deltalake.exceptions import TableNotFoundError as _DeltaRsTableNotFound

from streamops.core.delta_format.deletion_vectors import DeletionVector
from streamops.core.delta_format.retention import TableRetention
from streamops.core.exceptions import TableNotFoundError, TableUnreadableError, VersionNotInLogError
from streamops.core.lake_layout import DELTA_LOG_DIR
from streamops.core.storage.location import Location, LocationLike


@dataclass(frozen=True)
class AddFile:
    path: str
    size: int
    modification_time: int
    data_change: bool
    num_records: int | None
    deletion_vector: DeletionVector | None = None
    partition_values: tuple[tuple[str, str | None], ...] = ()
    """As the log keys them: by physical column name under column mapping."""

    @property
    def has_deletion_vector(self) -> bool:
        return self.deletion_vector is not None


@dataclass(frozen=True)
class RemoveFile:
    path: str
    data_change: bool


@dataclass(frozen=True)
class Commit:
    """The actions of one Delta commit, in log order."""

    version: int
    adds: tuple[AddFile, ...]
    removes: tuple[RemoveFile, ...]
    commit_info: dict[str, Any]
    txns: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, Any] | None = None
    protocol: dict[str, Any] | None = None

    @property
    def timestamp_ms(self) -> int | None:
        value = self.commit_info.get("timestamp")
        return int(value) if value is not None else None

    @property
    def data_adds(self) -> tuple[AddFile, ...]:
        """Files this commit added as new data (what a streaming source must read)."""
        return tuple(a for a in self.adds if a.data_change)

    @property
    def data_removes(self) -> tuple[RemoveFile, ...]:
        return tuple(r for r in self.removes if r.data_change)


@dataclass(frozen=True)
class LogRetention:
    earliest_commit: int
    earliest_snapshot: int
    latest_commit: int


def commit_file_name(version: int) -> str:
    return f"{version:020d}.json"


def data_file_path(table: LocationLike, path: str) -> str:
    """Where the file of an `add` action lives.

    Delta writes a relative path URL-encoded (a partition value `a b` is the directory `p=a%20b`
    on disk and `p=a%2520b` in the log), so it is decoded once and joined to the table root;
    absolute paths and URIs (shallow clones, object stores) are used as written.
    """
    if "://" in path or path.startswith("/"):
        return path
    return f"{str(Location.of(table)).rstrip('/')}/{unquote(path)}"


def parse_commit(version: int, text: bytes) -> Commit:
    """Turn the JSON lines of one commit file into a `Commit`."""
    adds: list[AddFile] = []
    removes: list[RemoveFile] = []
    commit_info: dict[str, Any] = {}
    txns: dict[str, int] = {}
    metadata: dict[str, Any] | None = None
    protocol: dict[str, Any] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        action = orjson.loads(line)
        if "add" in action:
            add = action["add"]
            adds.append(
                AddFile(
                    path=add["path"],
                    size=int(add.get("size") or 0),
                    modification_time=int(add.get("modificationTime") or 0),
                    data_change=bool(add.get("dataChange", True)),
                    num_records=_live_records(add),
                    deletion_vector=DeletionVector.from_json(add["deletionVector"])
                    if add.get("deletionVector")
                    else None,
                    partition_values=tuple(sorted((add.get("partitionValues") or {}).items())),
                )
            )
        elif "remove" in action:
            remove = action["remove"]
            removes.append(RemoveFile(remove["path"], bool(remove.get("dataChange", True))))
        elif "commitInfo" in action:
            commit_info = action["commitInfo"]
        elif "txn" in action:
            txns[action["txn"]["appId"]] = int(action["txn"]["version"])
        elif "metaData" in action:
            metadata = action["metaData"]
        elif "protocol" in action:
            protocol = action["protocol"]
    return Commit(version, tuple(adds), tuple(removes), commit_info, txns, metadata, protocol)


def _live_records(add: dict[str, Any]) -> int | None:
    """Rows of an added file a reader sees: `numRecords` minus the rows its deletion vector
    marks deleted (`deletionVector.cardinality`), as delta-rs and Spark count them."""
    stats = add.get("stats")
    if not stats:
        return None
    value = orjson.loads(stats).get("numRecords")
    if value is None:
        return None
    deleted = (add.get("deletionVector") or {}).get("cardinality") or 0
    return int(value) - int(deleted)


class DeltaLog:
    """The log of one table. Cheap to create; call `refresh()` to see new commits."""

    def __init__(self, table: LocationLike) -> None:
        self.table = Location.of(table)
        self._log_dir = self.table / DELTA_LOG_DIR
        self._dt: DeltaTable | None = None

    def exists(self) -> bool:
        return DeltaTable.is_deltatable(str(self.table), storage_options=self.table.storage_options())

    def open_version(self, version: int | None = None) -> DeltaTable:
        """A new delta-rs handle on the table (at `version`), with our storage options."""
        return DeltaTable(str(self.table), version=version, storage_options=self.table.storage_options())

    @property
    def delta_table(self) -> DeltaTable:
        if self._dt is None:
            try:
                self._dt = self.open_version()
            except _DeltaRsTableNotFound as error:
                raise TableNotFoundError(
                    f"no Delta table at `{self.table}`: check the path, or create the table first"
                ) from error
            except DeltaError as error:
                raise self._unreadable(error) from error
        return self._dt

    def refresh(self) -> DeltaLog:
        """Load commits made since this object last looked (incrementally, via delta-rs)."""
        if self._dt is None:
            _ = self.delta_table
        else:
            try:
                self._dt.update_incremental()
            except DeltaError as error:
                raise self._unreadable(error) from error
        return self

    def _unreadable(self, error: DeltaError) -> TableUnreadableError:
        text = str(error).strip()
        return TableUnreadableError(
            f"cannot read the Delta table `{self.table}`: {text.splitlines()[0][:300] if text else 'DeltaError'}; "
            "its _delta_log may be damaged: restore the table (or its log) from a backup"
        )

    def table_id(self) -> str:
        return self.delta_table.metadata().id

    def latest_version(self) -> int:
        return self.delta_table.version()

    def txn_version(self, app_id: str) -> int | None:
        return self.delta_table.transaction_version(app_id)

    def earliest_version(self) -> int:
        """The oldest commit whose JSON is still in the log (log cleanup moves this forward)."""
        versions = [int(name[:-5]) for name in self.log_file_names() if name.endswith(".json") and name[:-5].isdigit()]
        if not versions:
            raise TableNotFoundError(f"no Delta commits under `{self._log_dir}`")
        return min(versions)

    def table_retention(self) -> TableRetention:
        """The table's retention properties (VACUUM's and log cleanup's), Delta's defaults if unset."""
        return TableRetention.from_configuration(self.delta_table.metadata().configuration)

    def retention(self) -> LogRetention:
        """What log cleanup has left: the oldest commit JSON and the oldest snapshot Delta can
        still rebuild (a checkpoint with the commits after it, or commit 0). One listing."""
        commits: list[int] = []
        checkpoints: list[int] = []
        for name in self.log_file_names():
            stem = name.split(".", 1)[0]
            if not stem.isdigit():
                continue
            if ".checkpoint." in name:
                checkpoints.append(int(stem))
            elif name.endswith(".json") and name[:-5].isdigit():
                commits.append(int(stem))
        if not commits:
            raise TableNotFoundError(f"no Delta commits under `{self._log_dir}`")
        earliest = min(commits)
        rebuildable = [c for c in checkpoints if c + 1 >= earliest]
        earliest_snapshot = earliest if earliest == 0 else min(rebuildable, default=max(commits))
        return LogRetention(earliest, earliest_snapshot, max(commits))

    def log_file_names(self) -> list[str]:
        """Names in `_delta_log` (one paginated LIST on an object store); missing: FileNotFoundError."""
        listing = self._log_dir.list_dir()
        if listing.is_empty and not (self._log_dir.is_local and self._log_dir.is_dir()):
            raise FileNotFoundError(f"no Delta log at `{self._log_dir}`")
        return [entry.name for entry in listing.files]

    def commit(self, version: int) -> Commit:
        path = self._log_dir / commit_file_name(version)
        try:
            text = path.read_bytes()
        except FileNotFoundError as error:
            if version > self.latest_version():
                raise VersionNotInLogError(
                    f"version {version} of `{self.table}` does not exist yet (latest is {self.latest_version()})"
                ) from error
            raise VersionNotInLogError(
                f"version {version} of `{self.table}` is no longer in its Delta log "
                f"(log cleanup keeps versions >= {self._earliest_or_unknown()}); "
                "restart the stream from a new checkpoint with a later startingVersion"
            ) from error
        return parse_commit(version, text)

    def commit_time_ms(self, version: int) -> int | None:
        """When `version` was committed: its commitInfo timestamp, else (old writers and other
        engines write no commitInfo) its log file's modification time, as Delta itself dates it."""
        stamped = self.commit(version).timestamp_ms
        if stamped is not None:
            return stamped
        entry = (self._log_dir / commit_file_name(version)).stat()
        return entry.mtime_ms if entry is not None else None

    def commits(self, start: int, end: int) -> Iterator[Commit]:
        """Commits `start..end` inclusive, in order."""
        for version in range(start, end + 1):
            yield self.commit(version)

    def _earliest_or_unknown(self) -> str:
        try:
            return str(self.earliest_version())
        except (TableNotFoundError, FileNotFoundError):
            return "?"
