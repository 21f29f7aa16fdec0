"""Spark's file-source log (`<checkpoint>/sources/<id>/`): which landing file each batch took.

Every batch that found new files writes `sources/<id>/<batch>`:

    v1
    {"path":"file:///landing/f0.json","timestamp":1795324027605,"batchId":0}

`timestamp` is the file's modification time as listed. Every
`spark.sql.streaming.fileSource.log.compactInterval` batches (default 10) Spark writes
`<batch>.compact` holding every entry so far, and later deletes the files it replaces, so a
long-running log holds one compact file plus the batches after it. This is the data behind
Databricks' `cloud_files_state`; the monitor and `checkpoint correlate` read it from here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from streamops.core.checkpoint_format.metadata_log import (
    LogFile,
    LogListing,
    LogProblem,
    as_problem,
    create_log_file,
    list_log,
    read_versioned,
    remove_log_file,
)
from streamops.core.exceptions import (
    CheckpointNotFoundError,
    MalformedLogFileError,
    NotAFileSourceLogError,
)
from streamops.core.storage.location import Location, LocationLike

SOURCES_DIR = "sources"
KNOWN_VERSIONS = (1,)


@dataclass(frozen=True)
class FileSourceEntry:
    """One landing file and the batch that read it."""

    path: str
    timestamp_ms: int
    batch_id: int

    def to_json_line(self) -> str:
        """The line exactly as Spark (json4s) writes it."""
        return json.dumps(
            {"path": self.path, "timestamp": self.timestamp_ms, "batchId": self.batch_id},
            separators=(",", ":"),
        )


@dataclass(frozen=True)
class FileSourceLog:
    """Everything one file-source log holds, with what could not be read."""

    source_id: str
    directory: Location
    entries: tuple[FileSourceEntry, ...]
    listing: LogListing
    problems: tuple[LogProblem, ...] = ()

    @property
    def compact_batch_ids(self) -> tuple[int, ...]:
        return tuple(f.batch_id for f in self.listing.files if f.compact)

    @property
    def compact_interval(self) -> int | None:
        """The compaction interval the files on disk show (None: never compacted).

        Compaction batches are those with (batch + 1) % interval == 0. Spark deletes older
        files, so several intervals can fit what is left; the smallest one that fits every
        compact and plain file is taken. A log cut back on that interval reads correctly for
        Spark with any compactInterval setting at least that large (Spark derives the interval
        it uses from the newest compact file).
        """
        compacts = [f.batch_id for f in self.listing.files if f.compact]
        if not compacts:
            return None
        plains = [f.batch_id for f in self.listing.files if not f.compact]
        for interval in range(1, min(compacts) + 2):
            if all((c + 1) % interval == 0 for c in compacts) and all((p + 1) % interval for p in plains):
                return interval
        return None


def source_dir(checkpoint_dir: LocationLike, source_id: int | str) -> Location:
    return Location.of(checkpoint_dir) / SOURCES_DIR / str(source_id)


def read_file_source_log(checkpoint_dir: LocationLike, source_id: int | str = 0) -> list[FileSourceEntry]:
    """Every file the file source with this id has taken, in batch order.

    Returns [] when the source has not taken a file yet. Raises `NotAFileSourceLogError` when
    `sources/<id>` belongs to another kind of source, and `MalformedLogFileError` when a file
    the entries depend on cannot be read (so no entry is silently missing).
    """
    log = scan_file_source_log(checkpoint_dir, source_id)
    if log.problems:
        problem = log.problems[0]
        raise MalformedLogFileError(
            f"file-source log `{log.directory}` is damaged: {problem.detail}; "
            "run `streamops checkpoint doctor` on the checkpoint",
            problem.kind,
        )
    return list(log.entries)


def scan_file_source_log(
    checkpoint_dir: LocationLike, source_id: int | str = 0, listing: LogListing | None = None
) -> FileSourceLog:
    """Read a file-source log tolerantly: unreadable files become `problems`. A caller that has
    already listed the log passes `listing` (one LIST less on an object store)."""
    checkpoint_dir = Location.of(checkpoint_dir)
    directory = source_dir(checkpoint_dir, source_id)
    if listing is None:
        listing = list_log(directory)
        if not listing.files and not checkpoint_dir.is_dir():
            raise CheckpointNotFoundError(f"no checkpoint directory at `{checkpoint_dir}`")
    entries: list[FileSourceEntry] = []
    problems: list[LogProblem] = []
    base = _newest_readable_compact(listing, entries, problems)
    expected = base + 1
    for log_file in listing.files:
        if log_file.compact or log_file.batch_id <= base:
            continue
        if log_file.batch_id > expected:
            problems.append(
                LogProblem(
                    directory / str(expected),
                    "missing",
                    f"batches {expected}..{log_file.batch_id - 1} are missing from the file-source log",
                )
            )
        expected = log_file.batch_id + 1
        try:
            entries.extend(_read_entries(log_file))
        except MalformedLogFileError as error:
            problems.append(as_problem(log_file.path, error))
    return FileSourceLog(str(source_id), directory, tuple(entries), listing, tuple(problems))


def is_file_source_log(listing: LogListing) -> bool:
    """True when the newest readable file of the listed directory holds file-source entries."""
    for log_file in reversed(listing.files):
        try:
            _read_entries(log_file)
            return True
        except NotAFileSourceLogError:
            return False
        except MalformedLogFileError:
            continue
    return False


def truncate_file_source_log(log: FileSourceLog, keep_before: int) -> list[str]:
    """Make the log look as if batch `keep_before` never ran, the way Spark itself would read it.

    Spark reads a compacted log from the compaction batch at or before its latest batch, so after
    dropping batches >= `keep_before` the compact file and the plain files after it that Spark
    expects must exist; files Spark had already deleted are rewritten from the entries kept.
    Returns a description of every change, in order.

    Safe to interrupt at any point, on disks and object stores alike: files are written first
    (only if absent: they hold entries of batches that stay, so an extra one changes nothing
    Spark reads), then the dropped batches are removed newest first, so the log is always a
    prefix Spark can read (longer than asked for, at worst, as after a crash between Spark's
    source-log write and its offsets write). Run again to finish an interrupted cut.
    """
    kept = [e for e in log.entries if e.batch_id < keep_before]
    interval = log.compact_interval
    if log.compact_batch_ids and interval is None:
        raise MalformedLogFileError(
            f"the compacted files of `{log.directory}` fit no single compaction interval; "
            "cannot cut the log back safely"
        )
    actions: list[str] = []
    latest = keep_before - 1
    if latest >= 0:
        actions.extend(_write_missing(log, kept, keep_before, interval))
    for log_file in sorted(log.listing.files, key=lambda f: (f.batch_id, f.compact), reverse=True):
        if log_file.batch_id >= keep_before:
            remove_log_file(log_file.path)
            actions.append(f"removed {log_file.path}")
    return actions


def _write_missing(
    log: FileSourceLog, kept: list[FileSourceEntry], keep_before: int, interval: int | None
) -> list[str]:
    """The compact file and plain files Spark expects below `keep_before` that are gone."""
    latest = keep_before - 1
    actions = []
    remaining = [f.batch_id for f in log.listing.files if f.compact and f.batch_id < keep_before]
    if remaining:
        anchor = max(remaining)
    elif interval is not None:
        anchor = (latest + 1) // interval * interval - 1
        if anchor >= 0:
            path = log.directory / f"{anchor}.compact"
            _write_entries(path, [e for e in kept if e.batch_id <= anchor])
            actions.append(f"wrote {path}")
    else:
        anchor = -1
    by_batch: dict[int, list[FileSourceEntry]] = {}
    for entry in kept:
        by_batch.setdefault(entry.batch_id, []).append(entry)
    present = {f.batch_id for f in log.listing.files if not f.compact}
    for batch_id in range(anchor + 1, latest + 1):
        if batch_id not in present:
            path = log.directory / str(batch_id)
            _write_entries(path, by_batch.get(batch_id, []))
            actions.append(f"wrote {path}")
    return actions


def _newest_readable_compact(listing: LogListing, entries: list[FileSourceEntry], problems: list[LogProblem]) -> int:
    """Load the newest compact file that reads cleanly; returns its batch id (-1 when none)."""
    for log_file in reversed([f for f in listing.files if f.compact]):
        try:
            entries.extend(_read_entries(log_file))
            return log_file.batch_id
        except MalformedLogFileError as error:
            problems.append(as_problem(log_file.path, error))
    return -1


def _read_entries(log_file: LogFile) -> list[FileSourceEntry]:
    text, problem = read_versioned(log_file.path, KNOWN_VERSIONS)
    if problem is not None:
        raise MalformedLogFileError(problem.detail, problem.kind)
    entries = []
    lines = [line for line in text.lines if line.strip()]
    for number, line in enumerate(lines, start=2):
        try:
            value: Any = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            last = number == len(lines) + 1
            raise MalformedLogFileError(
                f"`{log_file.path}` line {number} is not JSON" + (" (the file is truncated)" if last else f": {error}"),
                "truncated" if last else "corrupt",
            ) from error
        if not isinstance(value, dict) or "path" not in value:
            raise NotAFileSourceLogError(
                f"`{log_file.path.parent}` is not a file-source log (it holds {line[:40]!r}); "
                "this source is not Spark's file source"
            )
        batch_id = value.get("batchId", log_file.batch_id)
        entries.append(FileSourceEntry(str(value["path"]), int(value.get("timestamp", 0)), int(batch_id)))
    return entries


def _write_entries(path: Location, entries: Iterable[FileSourceEntry]) -> None:
    body = "\n".join(["v1", *(e.to_json_line() for e in entries)])
    create_log_file(path, body.encode("utf-8"))
