"""Delta streaming source offsets and the files that lie between two of them.

An offset has exactly the fields of Delta's own source offset, so checkpoints written by our
delta-rs source and by native Delta read the same:

    {"sourceVersion": 1, "reservoirId": <table id>, "reservoirVersion": V, "index": I,
     "isStartingVersion": B}

(V, I) means "processed through file I of version V"; I = -1 means "nothing of V yet". When
`isStartingVersion` is true, version V stands for the table snapshot at V (every live file,
ordered by modification time then path) rather than the commit V. Files of a commit are its
`add` actions with dataChange=true, in log order. This module is Spark-free: the streaming
source plans batches with it and checkpoint_tools maps recorded offsets back to files with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping
from urllib.parse import unquote

from deltalake import DeltaTable
from pyroaring import BitMap64

from streamops.core.delta_format.change_commits import ChangeCommit, ReadMode, change_of, schema_of
from streamops.core.delta_format.column_mapping import ColumnMapping
from streamops.core.delta_format.deletion_vectors import DeletionVector
from streamops.core.delta_format.log import AddFile, Commit, DeltaLog
from streamops.core.exceptions import StreamopsError

SOURCE_VERSION = 1
BASE_INDEX = -1
UNRESOLVED_VERSION = -1


class SourceTableChangedError(StreamopsError):
    """The source table is not the one the checkpoint was reading, or it is not append-only."""


@dataclass(frozen=True, order=True)
class DeltaSourceOffset:
    reservoir_version: int
    index: int
    is_starting_version: bool
    reservoir_id: str = ""

    def to_json_dict(self) -> dict[str, Any]:
        """Field names and order as Delta writes them into offsets/<batch>."""
        return {
            "sourceVersion": SOURCE_VERSION,
            "reservoirId": self.reservoir_id,
            "reservoirVersion": self.reservoir_version,
            "index": self.index,
            "isStartingVersion": self.is_starting_version,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | str) -> DeltaSourceOffset:
        data = json.loads(value) if isinstance(value, str) else value
        return cls(
            reservoir_version=int(data["reservoirVersion"]),
            index=int(data["index"]),
            is_starting_version=bool(data.get("isStartingVersion", False)),
            reservoir_id=str(data.get("reservoirId", "")),
        )

    @staticmethod
    def is_delta_offset(value: Any) -> bool:
        return isinstance(value, Mapping) and "reservoirVersion" in value and "index" in value

    @classmethod
    def initial(cls, reservoir_id: str, from_snapshot: bool) -> DeltaSourceOffset:
        """Where a new stream starts, before its first batch decides the version.

        Spark asks the source for its initial offset again when it replays an uncommitted
        batch 0, so the initial offset must not depend on when it is asked: it names no version.
        The first batch then stays inside one snapshot (or one commit, for startingVersion
        latest), which lets its start be derived from its end (`first_batch_start`).
        """
        return cls(UNRESOLVED_VERSION, BASE_INDEX, from_snapshot, reservoir_id)

    @property
    def is_initial(self) -> bool:
        return self.reservoir_version == UNRESOLVED_VERSION

    @property
    def position(self) -> tuple[int, int, int]:
        """A sort key where a starting snapshot sorts before the commits that follow it."""
        return (self.reservoir_version, 0 if self.is_starting_version else 1, self.index)


@dataclass(frozen=True)
class IndexedFile:
    """One data file as a streaming source sees it: which version, which index within it."""

    version: int
    index: int
    is_starting_version: bool
    file: AddFile

    def offset(self, reservoir_id: str) -> DeltaSourceOffset:
        return DeltaSourceOffset(self.version, self.index, self.is_starting_version, reservoir_id)


class DeltaFileIndex:
    """Enumerates a table's data files in streaming order, from any offset onwards.

    Commits are cached per version (a commit never changes); the log is refreshed only by
    `refresh()`, so one planning pass sees one consistent latest version.

    A commit that is not an append (`streamops.core.delta_format.change_commits`) is read as `read_mode` says:
    skipped, re-read, or refused with `SourceTableChangedError`. With `strict=False` (what
    measuring tools want) nothing is refused: a commit that deletes or rewrites data counts as no
    files unless the mode re-reads it, and a schema change's files count (a restart reads them). Every change commit seen is kept in `changes`. A schema change is judged against
    the schema at `schema_version` for later commits (a stream reads the schema of the version it
    started at), or against the schema just before the commit when no version is given.
    """

    def __init__(
        self,
        log: DeltaLog,
        read_mode: ReadMode = "failOnChanges",
        strict: bool = True,
        schema_version: int | None = None,
        cache_size: int = 512,
    ) -> None:
        self.log = log
        self.read_mode = read_mode
        self.strict = strict
        self.schema_version = schema_version
        self.changes: dict[int, ChangeCommit] = {}
        self._commit_files: dict[int, tuple[AddFile, ...]] = {}
        self._snapshot_files: dict[int, tuple[AddFile, ...]] = {}
        self._schemas: dict[int, str] = {}
        self._cache_size = cache_size

    def refresh(self) -> int:
        return self.log.refresh().latest_version()

    def table_id(self) -> str:
        return self.log.table_id()

    def check_same_table(self, offset: DeltaSourceOffset) -> None:
        table_id = self.table_id()
        if offset.reservoir_id and offset.reservoir_id != table_id:
            raise SourceTableChangedError(
                f"source table `{self.log.table}` was replaced: the checkpoint read table id "
                f"{offset.reservoir_id}, the path now holds {table_id}; start a new checkpoint"
            )

    def commit_files(self, version: int) -> tuple[AddFile, ...]:
        files = self._commit_files.get(version)
        if files is None:
            commit = self.log.commit(version)
            files = commit.data_adds
            change = change_of(commit, self._schema_before(commit))
            if change is not None:
                self.changes[version] = change
                outcome = change.outcome(self.read_mode)
                if outcome == "fail" and self.strict:
                    raise SourceTableChangedError(_refusal(str(self.log.table), change))
                if outcome == "skip" or (outcome == "fail" and change.kind != "schema_change"):
                    files = ()
            if len(self._commit_files) >= self._cache_size:
                self._commit_files.pop(min(self._commit_files))
            self._commit_files[version] = files
        return files

    def changes_between(self, first: int, last: int) -> list[ChangeCommit]:
        """Change commits among versions first..last that this index has read."""
        return [self.changes[v] for v in sorted(self.changes) if first <= v <= last]

    def _schema_before(self, commit: Commit) -> str | None:
        """The schema a reader of `commit` holds, when the commit sets one (else not needed)."""
        if schema_of(commit) is None or commit.version == 0:
            return None
        if self.schema_version is not None:
            if commit.version <= self.schema_version:
                return None
            reference = self.schema_version
        else:
            reference = commit.version - 1
        if reference not in self._schemas:
            self._schemas[reference] = self.log.open_version(reference).schema().to_json()
        return self._schemas[reference]

    def snapshot_files(self, version: int) -> tuple[AddFile, ...]:
        """Live files of the snapshot at `version`, ordered as Delta's starting snapshot is.

        delta-rs builds the snapshot (any checkpoint kind it reads); its add actions are keyed
        back to the log's spelling (partition values by physical column name), and the rows
        each file's deletion vector deletes, which delta-rs hands over decoded, travel with the
        file as an inline deletion vector.
        """
        files = self._snapshot_files.get(version)
        if files is None:
            import pyarrow as pa

            snapshot = self.log.open_version(version)
            columns = ColumnMapping.of_table(snapshot)
            deleted = _snapshot_deletions(snapshot)
            rows = pa.table(snapshot.get_add_actions(flatten=True)).to_pylist()
            files = tuple(
                sorted(
                    (_snapshot_add(row, columns, deleted.get(unquote(row["path"]))) for row in rows),
                    key=lambda add: (add.modification_time, add.path),
                )
            )
            self._snapshot_files = {version: files}
        return files

    def files_after(self, start: DeltaSourceOffset, until_version: int) -> Iterator[IndexedFile]:
        """Every data file after `start`, through version `until_version`, in streaming order.

        An initial `start` (a stream whose batches so far found no data, so it has not resolved a
        version yet) is counted from the snapshot of `until_version`: what a new stream reads, a
        superset of what one started at the latest version reads."""
        if start.is_initial:
            start = DeltaSourceOffset(until_version, BASE_INDEX, True, start.reservoir_id)
        version = start.reservoir_version
        if start.is_starting_version:
            for index, add in enumerate(self.snapshot_files(version)):
                if index > start.index:
                    yield IndexedFile(version, index, True, add)
            version += 1
            after_index = BASE_INDEX
        else:
            after_index = start.index
        while version <= until_version:
            for index, add in enumerate(self.commit_files(version)):
                if index > after_index:
                    yield IndexedFile(version, index, False, add)
            version += 1
            after_index = BASE_INDEX

    def files_between(self, start: DeltaSourceOffset | None, end: DeltaSourceOffset) -> list[IndexedFile]:
        """The files a batch from `start` (exclusive) to `end` (inclusive) read.

        A first batch (no start, or the initial offset) began at the start of its end's version.
        A batch that ends at the initial offset (planned while the table had nothing to read)
        read nothing.
        """
        if end.is_initial:
            return []
        if start is None or start.is_initial:
            start = first_batch_start(end)
        until = end.reservoir_version
        if end.index == BASE_INDEX and not end.is_starting_version:
            until -= 1
        files = []
        for indexed in self.files_after(start, until):
            if (indexed.version, 0 if indexed.is_starting_version else 1, indexed.index) > end.position:
                break
            files.append(indexed)
        return files

    def admit(
        self,
        start: DeltaSourceOffset,
        until_version: int,
        max_files: int | None = None,
        max_bytes: int | None = None,
        next_version_when_done: bool = True,
    ) -> DeltaSourceOffset:
        """The end offset of the next batch: as many files as the limits admit (at least one).

        Returns `start` unchanged when there is nothing new. When the batch reaches the end of
        the latest commit, the end is (latest + 1, -1) as Delta's source does, so the next batch
        starts cleanly at the next commit (unless `next_version_when_done` is False: a first
        batch must end inside the version it read); a starting snapshot with nothing after it
        stays put.
        """
        reservoir_id = start.reservoir_id or self.table_id()
        last: IndexedFile | None = None
        files = 0
        size = 0
        exhausted = True
        for indexed in self.files_after(start, until_version):
            if last is not None and (
                (max_files is not None and files >= max_files) or (max_bytes is not None and size >= max_bytes)
            ):
                exhausted = False
                break
            last = indexed
            files += 1
            size += indexed.file.size
        if last is None:
            return start
        if exhausted and next_version_when_done and not (last.is_starting_version and last.version == until_version):
            return DeltaSourceOffset(until_version + 1, BASE_INDEX, False, reservoir_id)
        return last.offset(reservoir_id)


def _refusal(table: str, change: ChangeCommit) -> str:
    """One line: which commit, why a stream stops there, and the option or restart that goes on."""
    if change.kind == "schema_change":
        return (
            f"the schema of source table `{table}` changed at {change.describe()}: restart the "
            "stream to read the new schema (from its checkpoint, or a new one if the change is incompatible)"
        )
    option = "skipChangeCommits=true (or ignoreDeletes=true)" if change.kind == "delete" else "skipChangeCommits=true"
    return (
        f"source table `{table}` deleted or rewrote data at {change.describe()}; a Delta stream reads "
        f"appends only: set the option {option} to skip such commits, or restart from a new "
        f"checkpoint with startingVersion={change.version + 1}"
    )


def first_batch_start(end: DeltaSourceOffset) -> DeltaSourceOffset:
    """The start of a stream's first batch, which never spans more than one version."""
    return DeltaSourceOffset(end.reservoir_version, BASE_INDEX, end.is_starting_version, end.reservoir_id)


def _snapshot_add(row: dict[str, Any], columns: ColumnMapping, deleted: BitMap64 | None) -> AddFile:
    """One row of delta-rs's add actions as the log's `add` (physical partition keys)."""
    prefix = "partition."
    partition_values = tuple(
        sorted(
            (columns.partition_key(key[len(prefix) :]), None if value is None else str(value))
            for key, value in row.items()
            if key.startswith(prefix)
        )
    )
    records = _int_or_none(row.get("num_records"))
    vector = None if deleted is None else DeletionVector.inline(deleted)
    if records is not None and vector is not None:
        records -= vector.cardinality
    return AddFile(
        path=row["path"],
        size=int(row.get("size_bytes") or 0),
        modification_time=_epoch_ms(row.get("modification_time")),
        data_change=True,
        num_records=records,
        deletion_vector=vector,
        partition_values=partition_values,
    )


def _snapshot_deletions(snapshot: DeltaTable) -> dict[str, BitMap64]:
    """Deleted row indexes per add path, decoded (delta-rs URI-encodes the paths it returns
    however the log spelled them); only tables with deletion vectors pay for this."""
    if "deletionVectors" not in (snapshot.protocol().reader_features or ()):
        return {}
    import numpy as np
    import pyarrow as pa

    root = snapshot.table_uri.rstrip("/") + "/"
    vectors = pa.table(snapshot.deletion_vectors())
    deletions: dict[str, BitMap64] = {}
    keeps = (keep for chunk in vectors.column("selection_vector").chunks for keep in chunk)
    for uri, keep in zip(vectors.column("filepath").to_pylist(), keeps):
        deleted = np.flatnonzero(~keep.values.to_numpy(zero_copy_only=False))
        deletions[unquote(uri[len(root) :] if uri.startswith(root) else uri)] = BitMap64(deleted.tolist())
    return deletions


def _epoch_ms(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    return int(value.timestamp() * 1000)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
