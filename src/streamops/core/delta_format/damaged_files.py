"""Data files a Delta table's log references that the store lacks, or holds cut short.

A file deleted outside Delta (by hand, a lifecycle rule, a sync gone wrong) or truncated (a copy
that died, a full disk) leaves the log pointing at nothing readable: every reader that reaches
its add fails, and says only "file not found" or "Parquet magic bytes not found", naming neither
the table version nor whether other files are hit. Each file's size in the store against the size
its add records (a stat per file, or one listing for a whole snapshot) names them all before
anyone has to read them. The doctor asks it about the
files a stream has not read yet, the pipeline about the files a failed stream was reading, and
`streamops lake fsck` about every file of a table's current snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import unquote

from deltalake.exceptions import DeltaError

from streamops.core.checkpoint_format.delta_positions import delta_source_slot, processed_position, unread_files
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.delta_format.log import AddFile, DeltaLog, data_file_path
from streamops.core.delta_format.source_offsets import DeltaFileIndex, IndexedFile
from streamops.core.exceptions import CheckpointError, TableUnreadableError, error_line
from streamops.core.storage.entries import Entry
from streamops.core.storage.errors import StorageError
from streamops.core.storage.location import Location, LocationLike

Damage = Literal["missing", "truncated", "wrong_size"]
STAT_THREADS = 16
"""Object stores answer one HEAD per file; a backlog of thousands is statted in parallel."""
RECENT_BATCHES = 2
"""A stream's position is in its latest committed batch and the one planned after it."""


@dataclass(frozen=True)
class DamagedFile:
    """One add whose file is missing (`actual_size` None) or not the size the add records."""

    path: str
    """The add's path relative to the table, spelled as in the log (URL-encoded)."""
    version: int
    """The table version that added it; with `in_snapshot`, a snapshot that lists it (the log no
    longer holds, or was not asked for, the commit that added it)."""
    expected_size: int
    actual_size: int | None
    rows: int | None = None
    """Rows a reader saw in it (the add's numRecords less its deletion vector), when recorded."""
    in_snapshot: bool = False

    @property
    def missing(self) -> bool:
        return self.actual_size is None

    @property
    def damage(self) -> Damage:
        if self.actual_size is None:
            return "missing"
        return "truncated" if self.actual_size < self.expected_size else "wrong_size"

    def describe(self, table: LocationLike) -> str:
        """One line naming the file where it is stored, the version, and what is wrong with it."""
        where = f"in the snapshot at version {self.version}" if self.in_snapshot else f"added in version {self.version}"
        head = f"`{data_file_path(table, self.path)}` ({where})"
        if self.actual_size is None:
            return f"{head} is missing"
        if self.damage == "truncated":
            return f"{head} is truncated: {self.actual_size:,} of {self.expected_size:,} bytes"
        return f"{head} has {self.actual_size:,} bytes, not the {self.expected_size:,} its add records"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "version": self.version,
            "in_snapshot": self.in_snapshot,
            "damage": self.damage,
            "expected_size": self.expected_size,
            "actual_size": self.actual_size,
            "rows": self.rows,
        }


def damaged_files(table: LocationLike, files: Iterable[IndexedFile], *, listed: bool = False) -> list[DamagedFile]:
    """The `files` of `table` its store lacks or holds at another size than their add records.

    One stat per file, or with `listed` one listing of the table (what a whole snapshot costs
    least on an object store: a paginated LIST instead of a HEAD per file) and a stat for each
    file stored outside it. Raises `StorageError` when the store refuses them (credentials,
    network)."""
    root = Location.of(table)
    wanted = list(files)
    entries = (
        _listed(root, wanted) if listed else _stat_all([Location.of(data_file_path(root, f.file.path)) for f in wanted])
    )
    return [
        DamagedFile(
            path=f.file.path,
            version=f.version,
            expected_size=f.file.size,
            actual_size=None if entry is None else entry.size,
            rows=f.file.num_records,
            in_snapshot=f.is_starting_version,
        )
        for f, entry in zip(wanted, entries)
        if entry is None or entry.size != f.file.size
    ]


def unread_damaged_files(checkpoint: LocationLike, table: LocationLike) -> list[DamagedFile]:
    """The damaged files among those the stream of `checkpoint` has not processed from `table`
    yet: what its next batches (a replayed uncommitted batch included) will fail on, whatever
    removed them (a deletion outside Delta, or VACUUM after a compaction).

    Files are read as the doctor reads them: appends, not the files of commits that rewrite
    data (`skipChangeCommits`). Costs one checkpoint read, the log from the stream's position on
    and one stat per unread file.

    Raises a `StreamopsError` when it cannot tell: `CheckpointError` (no checkpoint, no batch
    planned, no Delta source reading `table` (or the path holds another table now), unreadable
    offsets), `TableNotFoundError`, `TableUnreadableError`, `VersionNotInLogError` (log cleanup
    removed what the position needs), `StorageError`.
    """
    ckpt = read_checkpoint(checkpoint, last_batches=RECENT_BATCHES)
    if ckpt.latest_planned is None:
        raise CheckpointError(f"`{ckpt.path}` has planned no batch yet: nothing says what its first batch reads")
    log = DeltaLog(table)
    table_id = log.table_id()
    slot = delta_source_slot(ckpt, table_id)
    if slot is None:
        raise CheckpointError(
            f"the offsets of `{ckpt.path}` name no Delta source reading `{log.table}` (table id {table_id}): "
            "the stream reads another table, or this one was dropped and created again"
        )
    position = processed_position(ckpt, slot)
    if position is None:
        raise CheckpointError(
            f"cannot tell how far `{ckpt.path}` has read `{log.table}`: the offsets of its latest "
            f"committed batch ({ckpt.latest_committed}) cannot be read"
        )
    index = DeltaFileIndex(log, read_mode="skipChangeCommits", strict=False)
    return damaged_files(log.table, unread_files(index, position))


def table_damaged_files(table: LocationLike) -> list[DamagedFile]:
    """The damaged files of `table`'s current snapshot (every live add), each named with the
    version that added it when the log still holds that commit.

    One listing of the table; the commits are read back from the latest only while a damaged
    file's add is still unaccounted for. Raises `TableNotFoundError`, `TableUnreadableError` or
    `StorageError`."""
    log = DeltaLog(table)
    latest = log.latest_version()
    adds = (IndexedFile(latest, i, True, add) for i, add in enumerate(_live_adds(log)))
    damaged = damaged_files(log.table, adds, listed=True)
    return sorted(_with_adding_versions(log, damaged), key=lambda d: (d.version, d.path))


def outside_delta(log: DeltaLog, damaged: Iterable[DamagedFile]) -> list[DamagedFile]:
    """Those of `damaged` no Delta operation explains: truncated, or missing while the table's
    current snapshot still lists them. VACUUM deletes only files a later commit removed, so a
    missing file that is no longer live is VACUUM's work (or looks exactly like it).

    Loads the snapshot's file list only when a file is missing."""
    damaged = list(damaged)
    if not any(d.missing for d in damaged):
        return damaged
    live = {file_key(add.path) for add in _live_adds(log)}
    return [d for d in damaged if not d.missing or file_key(d.path) in live]


def file_key(path: str) -> str:
    """One spelling for an add's path however a writer encoded it (the log, delta-rs, on disk)."""
    return unquote(path)


def _live_adds(log: DeltaLog) -> list[AddFile]:
    """The snapshot's adds, without decoding deletion vectors (whose files may be damaged too)."""
    import pyarrow as pa

    try:
        rows = pa.table(log.delta_table.get_add_actions(flatten=True)).select(["path", "size_bytes", "num_records"])
    except DeltaError as error:
        raise TableUnreadableError(
            f"cannot list the live files of `{log.table}`: {error_line(error)}; restore its _delta_log from a backup"
        ) from error
    return [AddFile(row["path"], int(row["size_bytes"] or 0), 0, True, row["num_records"]) for row in rows.to_pylist()]


def _with_adding_versions(log: DeltaLog, damaged: list[DamagedFile]) -> list[DamagedFile]:
    """`damaged` (snapshot files) with the version, spelling and live rows of the commit that
    added each, newest add first, down to the oldest commit the log holds."""
    pending = {file_key(d.path): d for d in damaged}
    found: list[DamagedFile] = []
    if not pending:
        return found
    for version in range(log.latest_version(), log.retention().earliest_commit - 1, -1):
        for add in log.commit(version).adds:
            snapshot = pending.pop(file_key(add.path), None)
            if snapshot is not None:
                rows = add.num_records if add.num_records is not None else snapshot.rows
                found.append(replace(snapshot, path=add.path, version=version, rows=rows, in_snapshot=False))
        if not pending:
            break
    return found + list(pending.values())


def _listed(root: Location, wanted: list[IndexedFile]) -> list[Entry | None]:
    """The entries of `wanted` from one listing of `root`; files stored elsewhere are statted."""
    try:
        entries = {entry.name: entry for entry in root.walk()}
    except OSError as error:
        raise StorageError(f"cannot list `{root}`: {error_line(error)}; check its permissions") from error
    found: list[Entry | None] = []
    for f in wanted:
        path = f.file.path
        found.append(_stat(Location.of(path)) if "://" in path or path.startswith("/") else entries.get(unquote(path)))
    return found


def _stat_all(locations: list[Location]) -> list[Entry | None]:
    if len(locations) < 2 or all(location.is_local for location in locations):
        return [_stat(location) for location in locations]
    with ThreadPoolExecutor(STAT_THREADS) as pool:
        return list(pool.map(_stat, locations))


def _stat(location: Location) -> Entry | None:
    try:
        return location.stat()
    except OSError as error:
        raise StorageError(f"cannot stat `{location}`: {error_line(error)}; check its permissions") from error
