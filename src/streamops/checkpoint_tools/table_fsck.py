"""`streamops lake fsck`: the files a Delta table's log references that its store lacks or holds
truncated, and, when asked, their removal from the log, as Delta's FSCK REPAIR TABLE does.

A table whose log lists a file nobody can read fails every reader that reaches it, batch or
stream, until the file is back or the log stops listing it. Repairing makes one commit through
delta-rs (`DeltaTable.repair`, operation FSCK): a `remove` for each listed file the store lacks.
delta-rs only sees missing files, so a truncated file is first moved aside to
`<table>/_damaged/<its path>` (kept for whoever wants its bytes; VACUUM ignores `_` folders),
which also makes it one delta-rs will remove. The commit's `streamops.fsck` metadata records
what was dropped, why, and the rows and bytes the log said each held: the rows are lost, and
the table's history says so. If delta-rs refuses (a table feature it cannot write), the moved
files are put back, so a refusal changes nothing.

Streams that read the table are named when they still have to read a damaged version: dropping
a file from the log does not take its add out of the commit that added it, which is what a
stream reads. `streamops checkpoint doctor --lake` runs the same check (without the repair) on
every table of the lake (`table_checks`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalake.exceptions import DeltaError
from deltalake.transaction import CommitProperties

from streamops.checkpoint_tools.stream_readers import StreamRead, StreamReaders
from streamops.core.checkpoint_format.delta_positions import unread_files
from streamops.core.delta_format.damaged_files import DamagedFile, file_key, table_damaged_files
from streamops.core.delta_format.log import DeltaLog, data_file_path
from streamops.core.delta_format.source_offsets import DeltaFileIndex
from streamops.core.exceptions import StreamopsError, VersionNotInLogError, error_line
from streamops.core.storage.location import Location, LocationLike

FSCK_METADATA_KEY = "streamops.fsck"
"""The commitInfo key (delta-rs custom metadata) holding what a repair dropped."""
DAMAGED_DIR = "_damaged"


@dataclass(frozen=True)
class FsckResult:
    """One table: what is damaged and, after a repair, what its FSCK commit dropped."""

    table: Location
    damaged: tuple[DamagedFile, ...]
    repair: bool
    fsck_version: int | None = None
    dropped: tuple[DamagedFile, ...] = ()
    moved: dict[str, str] = field(default_factory=dict)
    """Add path -> where its truncated file was moved."""
    refused: str | None = None
    needed_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Damaged file's path -> the streams whose next batches read it."""

    @property
    def streams_to_restart(self) -> tuple[str, ...]:
        """Streams that still have to read a damaged file: dropping it does not help them."""
        return tuple(sorted({stream for streams in self.needed_by.values() for stream in streams}))

    @property
    def repaired(self) -> bool:
        return self.fsck_version is not None

    @property
    def unrepaired(self) -> bool:
        """Damaged files are still in the log (a dry run, or a refusal)."""
        return bool(self.damaged) and not self.repaired

    def to_json(self) -> dict[str, Any]:
        return {
            "table": str(self.table),
            "damaged": [{**d.to_json(), "moved_to": self.moved.get(d.path)} for d in self.damaged],
            "repair": self.repair,
            "fsck_version": self.fsck_version,
            "dropped": [d.path for d in self.dropped],
            "dropped_rows": _rows(self.dropped),
            "dropped_bytes": sum(d.expected_size for d in self.dropped),
            "refused": self.refused,
            "streams_to_restart": list(self.streams_to_restart),
        }


def fsck_tables(
    tables: Iterable[LocationLike], repair: bool = False, readers: StreamReaders | None = None
) -> list[FsckResult]:
    """Check every table; with `repair`, drop its damaged files from its log.

    `readers` (`find_readers`) lets each result name the streams that still have to read a
    damaged version. A table that cannot be read raises its `StreamopsError`; a repair delta-rs
    refuses is reported in `refused`, with nothing changed."""
    return [fsck_table(t, repair, readers) for t in tables]


def fsck_table(table: LocationLike, repair: bool = False, readers: StreamReaders | None = None) -> FsckResult:
    log = DeltaLog(table)
    damaged = tuple(table_damaged_files(log.table))
    needed_by = _needed_by(log, damaged, readers)
    if not damaged or not repair:
        return FsckResult(log.table, damaged, repair, needed_by=needed_by)
    moved = _move_aside(log.table, [d for d in damaged if not d.missing])
    delta_table = log.open_version()
    try:
        outcome = delta_table.repair(
            dry_run=False,
            commit_properties=CommitProperties(custom_metadata={FSCK_METADATA_KEY: _record(damaged, moved)}),
        )
    except DeltaError as error:
        _move_back(log.table, moved)
        refusal = f"delta-rs cannot repair `{log.table}`: {error_line(error)}; nothing was changed: restore the file(s)"
        return FsckResult(log.table, damaged, repair, refused=refusal, needed_by=needed_by)
    removed = set(outcome["files_removed"])  # decoded once, as `file_key` spells them
    return FsckResult(
        log.table,
        damaged,
        repair,
        fsck_version=delta_table.version(),
        dropped=tuple(d for d in damaged if file_key(d.path) in removed),
        moved=moved,
        needed_by=needed_by,
    )


def fsck_text(results: list[FsckResult]) -> str:
    """One line per damaged file, then one per table saying what was (or would be) done."""
    lines: list[str] = []
    for result in results:
        lines.extend(d.describe(result.table) for d in result.damaged)
        lines.append(_summary(result))
        if result.streams_to_restart:
            lines.append(
                f"{result.table}: {', '.join(result.streams_to_restart)} have not read the damaged version(s) yet "
                "and will still fail on them: restore the file(s), or start each from a version after them"
            )
    return "\n".join(lines)


def exit_code(results: list[FsckResult]) -> int:
    """0 clean or repaired, 1 damaged files left in a log (dry run), 2 a repair was refused."""
    if any(r.refused for r in results):
        return 2
    return 1 if any(r.unrepaired for r in results) else 0


def _summary(result: FsckResult) -> str:
    table, count = result.table, len(result.damaged)
    if not count:
        return f"{table}: clean"
    if result.refused:
        return f"{table}: not repaired: {result.refused}"
    rows = rows_text(result.dropped if result.repaired else result.damaged)
    if not result.repaired:
        return f"{table}: {count} damaged file(s){rows}; run again with --yes to drop them from its log"
    moved = f"; truncated file(s) moved to {table / DAMAGED_DIR}" if result.moved else ""
    return (
        f"{table}: dropped {len(result.dropped)} file(s){rows} from its log in version {result.fsck_version} "
        f"(FSCK, recorded under `{FSCK_METADATA_KEY}`){moved}"
    )


def _rows(files: Iterable[DamagedFile]) -> int:
    return sum(d.rows or 0 for d in files)


def rows_text(files: Sequence[DamagedFile]) -> str:
    """` (N rows)` for a message, saying how many files the log gives no row count for."""
    unknown = sum(1 for d in files if d.rows is None)
    known = f"{_rows(files):,} rows"
    return f" ({known}" + (f", and {unknown} file(s) whose rows the log does not count)" if unknown else ")")


def _record(damaged: tuple[DamagedFile, ...], moved: dict[str, str]) -> dict[str, Any]:
    """What the FSCK commit records: each file, why, and what the log said it held."""
    return {
        "dropped": [
            {
                "path": d.path,
                "version": d.version,
                "damage": d.damage,
                "rows": d.rows,
                "bytes": d.expected_size,
                "actual_bytes": d.actual_size,
                "moved_to": moved.get(d.path),
            }
            for d in damaged
        ],
        "rows": _rows(damaged),
        "bytes": sum(d.expected_size for d in damaged),
    }


def _needed_by(
    log: DeltaLog, damaged: tuple[DamagedFile, ...], readers: StreamReaders | None
) -> dict[str, tuple[str, ...]]:
    """Per damaged file, the streams whose next batches read it (a replayed uncommitted batch
    included), as the doctor's `source_files_damaged` counts them: the appends after each
    stream's committed position, the rest of its starting snapshot included. A file a stream
    already read is not needed, even when the stream's position is still in that version or
    snapshot."""
    if not damaged or readers is None:
        return {}
    reads = readers.of_table(log.table_id())
    if not reads:
        return {}
    index = DeltaFileIndex(log, read_mode="skipChangeCommits", strict=False)
    needed: dict[str, set[str]] = {}
    for read in reads:
        unread = _unread_keys(index, read)
        for file in damaged:
            reaches = _at_or_after(read, file) if unread is None else file_key(file.path) in unread
            if reaches:
                needed.setdefault(file.path, set()).add(read.stream)
    return {path: tuple(sorted(streams)) for path, streams in needed.items()}


def _unread_keys(index: DeltaFileIndex, read: StreamRead) -> set[str] | None:
    """The files `read`'s stream has still to read, or None when log cleanup removed what its
    position needs (it cannot restart at all: the doctor's `source_version_cleaned_up`)."""
    try:
        return {file_key(f.file.path) for f in unread_files(index, read.position)}
    except VersionNotInLogError:
        return None


def _at_or_after(read: StreamRead, file: DamagedFile) -> bool:
    """Whether a stream whose files cannot be listed would reach `file`: it reads a starting
    snapshot, or commits from the file's version or an earlier one."""
    return read.needs_snapshot or (not file.in_snapshot and read.needed_version <= file.version)


def _move_aside(table: Location, damaged: list[DamagedFile]) -> dict[str, str]:
    """Move each file to `<table>/_damaged/<its path>`: all of them, or (on an error) none."""
    moved: dict[str, str] = {}
    try:
        for file in damaged:
            source = Location.of(data_file_path(table, file.path))
            target = table / DAMAGED_DIR / (source.relative_to(table) or source.name)
            _move(source, target)
            moved[file.path] = str(target)
    except (StreamopsError, OSError):
        _move_back(table, moved)
        raise
    return moved


def _move_back(table: Location, moved: dict[str, str]) -> None:
    for path, target in moved.items():
        _move(Location.of(target), Location.of(data_file_path(table, path)))


def _move(source: Location, target: Location) -> None:
    """Copy, then delete the original (object stores have no rename)."""
    target.write_bytes(source.read_bytes())
    source.delete()
