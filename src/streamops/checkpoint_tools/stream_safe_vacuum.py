"""VACUUM that deletes nothing a stream still has to read.

Plain VACUUM deletes every file removed from the table longer ago than the retention period
(`delta.deletedFileRetentionDuration`, 7 days unless set). A stream that lags further behind than
that, behind a compaction or a rewrite that removed files it has not read yet, fails on restart
(delta-io/delta#1515, #1365). Here every checkpoint that reads the table (every checkpoint of the
lake, plus any named) says from which version a restart reads on (`stream_readers`), and nothing
that version or a later one added is deleted, on top of the normal retention:

1. delta-rs lists what plain VACUUM would delete at the retention (a dry run: removed files older
   than it, and files the log never mentions) and what it would delete at zero retention;
2. the protected set is read from the log: every file added by the version a stream needs or a
   later one, plus the whole snapshot at that version for a stream still reading its starting
   snapshot;
3. what is deleted is exactly step 1 minus step 2. delta-rs VACUUM cannot be told to keep single
   files (its `keep_versions` keeps whole snapshots and loads one per version), so when a stream
   reads the table streamops deletes that list itself; when no stream does, delta-rs runs VACUUM.

A checkpoint that cannot be read stops the vacuum of every table it may read: "nothing to
protect" is never assumed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Literal
from urllib.parse import unquote

from deltalake.exceptions import DeltaError

from streamops.checkpoint_tools.stream_readers import StreamRead, StreamReaders, find_readers
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import DeltaFileIndex
from streamops.core.exceptions import StreamopsError, VersionNotInLogError
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.core.storage.location import Location, LocationLike

VacuumMethod = Literal["delta-rs vacuum", "delta-rs dry run, streamops delete"]
DELETE_THREADS = 16


@dataclass(frozen=True)
class StreamProtection:
    """What one stream kept: the files plain VACUUM would have deleted that it still needs."""

    read: StreamRead
    files_kept: int

    def to_json(self) -> dict[str, Any]:
        return {**self.read.to_json(), "files_kept": self.files_kept}


@dataclass(frozen=True)
class TableVacuum:
    """The vacuum of one table: done, planned (`dry_run`) or refused (`refused` says why)."""

    table: Location
    dry_run: bool
    retention_hours: int | None = None
    readers: tuple[StreamRead, ...] = ()
    protections: tuple[StreamProtection, ...] = ()
    deleted: tuple[str, ...] = ()
    kept_by_retention: int = 0
    kept_by_streams: int = 0
    method: VacuumMethod | None = None
    refused: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "table": str(self.table),
            "dry_run": self.dry_run,
            "refused": self.refused,
            "retention_hours": self.retention_hours,
            "method": self.method,
            "files_deleted": len(self.deleted),
            "deleted": list(self.deleted),
            "files_kept_by_retention": self.kept_by_retention,
            "files_kept_by_streams": self.kept_by_streams,
            "protected_by": [p.to_json() for p in self.protections],
            "streams_reading": len(self.readers),
        }


class RetentionTooShortError(StreamopsError):
    """A retention below the table's own setting, without the flag that allows it."""


def vacuum_tables(
    tables: Iterable[LocationLike],
    lake: LakeLike | None = None,
    checkpoints: Iterable[LocationLike] = (),
    retention_hours: int | None = None,
    dry_run: bool = True,
    allow_short_retention: bool = False,
) -> list[TableVacuum]:
    """Vacuum each table, protecting what the lake's checkpoints and the named ones still need."""
    readers = find_readers(lake, [Location.of(c) for c in checkpoints])
    return [vacuum_table(Location.of(t), readers, retention_hours, dry_run, allow_short_retention) for t in tables]


def vacuum_table(
    table: Location,
    readers: StreamReaders,
    retention_hours: int | None = None,
    dry_run: bool = True,
    allow_short_retention: bool = False,
) -> TableVacuum:
    log = DeltaLog(table)
    log.delta_table  # noqa: B018 - a missing table is a one-line TableNotFoundError here
    blocking = readers.blocking(table)
    if blocking:
        first = blocking[0]
        return TableVacuum(
            table,
            dry_run,
            refused=(
                f"checkpoint `{first.checkpoint}` cannot be read ({first.reason}) and may read this table: "
                "repair it (`streamops checkpoint doctor`) or remove it, then vacuum again"
            ),
        )
    hours = _retention_hours(log, retention_hours, allow_short_retention)
    reads = tuple(readers.of_table(log.table_id()))
    try:
        candidates = _vacuum_listing(log, hours)
        everything = _vacuum_listing(log, 0)
        needed = _needed_files(log, reads)
    except VersionNotInLogError as error:
        return TableVacuum(table, dry_run, hours, reads, refused=f"{error}; the stream cannot restart from it either")
    kept = {path for path in candidates if path in needed}
    protections = tuple(StreamProtection(read, sum(1 for path in kept if read in needed[path])) for read in reads)
    deletable = tuple(sorted(set(candidates) - kept))
    kept_by_retention = len(set(everything) - set(candidates))
    method: VacuumMethod = "delta-rs dry run, streamops delete" if reads else "delta-rs vacuum"
    if not dry_run:
        deletable = _delete(log, deletable) if reads else tuple(sorted(_run_vacuum(log, hours)))
    return TableVacuum(table, dry_run, hours, reads, protections, deletable, kept_by_retention, len(kept), method)


def lake_tables(lake: LakeLayout) -> list[Location]:
    return lake.require().table_dirs()


def _retention_hours(log: DeltaLog, requested: int | None, allow_short: bool) -> int:
    own_hours = log.table_retention().deleted_files_seconds / 3600.0
    if requested is None:
        return int(own_hours) if own_hours == int(own_hours) else int(own_hours) + 1
    if requested < 0:
        raise StreamopsError(f"--retention-hours {requested} must be 0 or more")
    if requested < own_hours and not allow_short:
        raise RetentionTooShortError(
            f"--retention-hours {requested} is shorter than the {own_hours:g} h that `{log.table}` keeps "
            "(delta.deletedFileRetentionDuration): readers of older versions could fail; add "
            "--allow-short-retention to do it anyway (streams are still protected)"
        )
    return requested


def _vacuum_listing(log: DeltaLog, hours: int) -> list[str]:
    """What delta-rs VACUUM would delete at `hours` (paths relative to the table, as on disk)."""
    try:
        return log.open_version().vacuum(retention_hours=hours, dry_run=True, enforce_retention_duration=False)
    except DeltaError as error:
        raise StreamopsError(
            f"delta-rs cannot list what VACUUM would delete in `{log.table}`: {_first(error)}"
        ) from error


def _run_vacuum(log: DeltaLog, hours: int) -> list[str]:
    try:
        return log.open_version().vacuum(retention_hours=hours, dry_run=False, enforce_retention_duration=False)
    except DeltaError as error:
        raise StreamopsError(f"delta-rs VACUUM of `{log.table}` failed: {_first(error)}") from error


def _needed_files(log: DeltaLog, reads: tuple[StreamRead, ...]) -> dict[str, set[StreamRead]]:
    """Path (relative, as on disk) -> the stream reads that still need it."""
    needed: dict[str, set[StreamRead]] = {}
    if not reads:
        return needed
    latest = log.latest_version()
    index = DeltaFileIndex(log, strict=False)
    first = min(read.needed_version for read in reads)
    added_at: dict[str, int] = {}
    for commit in log.commits(first, latest):
        for add in commit.adds:
            added_at.setdefault(_relative(add.path), commit.version)
    for read in reads:
        if read.needs_snapshot and read.needed_version <= latest:
            for add in index.snapshot_files(read.needed_version):
                needed.setdefault(_relative(add.path), set()).add(read)
        for path, version in added_at.items():
            if version >= read.needed_version:
                needed.setdefault(path, set()).add(read)
    return needed


def _relative(log_path: str) -> str:
    """A log path as delta-rs lists it: the log URL-encodes relative paths once more."""
    return unquote(log_path)


def _delete(log: DeltaLog, paths: tuple[str, ...]) -> tuple[str, ...]:
    """Delete exactly `paths` (on an object store, many requests in flight)."""
    with ThreadPoolExecutor(max_workers=DELETE_THREADS) as pool:
        list(pool.map(lambda path: (log.table / path).delete(), paths))
    return paths


def _first(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__
