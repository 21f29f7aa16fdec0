"""A whole checkpoint directory read into one immutable value, without Spark.

    <checkpoint>/metadata        {"id": "<query id>"}
    <checkpoint>/offsets/<N>     batch N planned (write-ahead), see offset_log
    <checkpoint>/commits/<N>     batch N done
    <checkpoint>/sources/<id>/   per-source logs (the file source's list of files taken)
    <checkpoint>/state/          state store of stateful operators

Reading never raises for a damaged file: it becomes a `LogProblem` on the result, because the
reason to read a checkpoint is often that something in it is broken. `last_batches` bounds the
work to the newest batches (what a restart reads), which keeps a doctor pass over hundreds of
checkpoints cheap; the listings still cover every file.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Callable, Literal, TypeVar

import orjson

from streamops.core.checkpoint_format.file_source_log import (
    SOURCES_DIR,
    FileSourceLog,
    is_file_source_log,
    scan_file_source_log,
)
from streamops.core.checkpoint_format.metadata_log import (
    LogFile,
    LogListing,
    LogProblem,
    as_problem,
    checksum_name,
    crc_problem,
    list_log,
)
from streamops.core.checkpoint_format.offset_log import (
    NONE_OFFSET,
    CommitBatch,
    OffsetBatch,
    SourceOffset,
    parse_commit,
    parse_offsets,
)
from streamops.core.checkpoint_format.state_store import StateStores, read_state_stores
from streamops.core.exceptions import (
    CheckpointNotFoundError,
    MalformedLogFileError,
    NotAFileSourceLogError,
)
from streamops.core.storage.entries import DirListing
from streamops.core.storage.location import Location, LocationLike

METADATA_FILE = "metadata"
OFFSETS_DIR = "offsets"
COMMITS_DIR = "commits"
STATE_DIR = "state"

CommitStatus = Literal["committed", "commit_missing", "planned"]
SourceLogKind = Literal["file_source", "other"]


@dataclass(frozen=True)
class SourceLogInfo:
    """One `sources/<id>` directory: Spark's file-source log, or another source's metadata."""

    source_id: str
    kind: SourceLogKind
    listing: LogListing


@dataclass(frozen=True)
class Batch:
    """One micro-batch as the checkpoint records it."""

    batch_id: int
    offsets: OffsetBatch | None
    commit: CommitBatch | None
    start: tuple[SourceOffset, ...] | None
    status: CommitStatus

    @property
    def end(self) -> tuple[SourceOffset, ...]:
        return self.offsets.sources if self.offsets else ()

    @property
    def batch_timestamp_ms(self) -> int | None:
        return self.offsets.metadata.batch_timestamp_ms if self.offsets and self.offsets.metadata else None

    @property
    def watermark_ms(self) -> int | None:
        return self.offsets.metadata.batch_watermark_ms if self.offsets and self.offsets.metadata else None

    @property
    def committed_ms(self) -> int | None:
        """When the commit file was written (its modification time)."""
        return self.commit.file.mtime_ms if self.commit else None


@dataclass(frozen=True)
class Checkpoint:
    path: Location
    query_id: str | None
    metadata_problem: LogProblem | None
    offsets_listing: LogListing
    commits_listing: LogListing
    offsets: dict[int, OffsetBatch]
    commits: dict[int, CommitBatch]
    problems: tuple[LogProblem, ...]
    source_logs: tuple[SourceLogInfo, ...]
    state: StateStores
    window_start: int | None = None

    @property
    def stream(self) -> str:
        """The stream name: checkpoints live at `<lake>/_checkpoints/<stream>`."""
        return self.path.name

    @property
    def latest_planned(self) -> int | None:
        latest = self.offsets_listing.latest
        return latest.batch_id if latest else None

    @property
    def latest_committed(self) -> int | None:
        latest = self.commits_listing.latest
        return latest.batch_id if latest else None

    @property
    def uncommitted_batch(self) -> int | None:
        """The planned batch a restart will run again with the same offsets, if any."""
        planned, committed = self.latest_planned, self.latest_committed
        if planned is None or (committed is not None and committed >= planned):
            return None
        return planned

    def status(self, batch_id: int) -> CommitStatus:
        if self.commits_listing.get(batch_id) is not None:
            return "committed"
        latest_committed = self.latest_committed
        if latest_committed is not None and batch_id < latest_committed:
            return "commit_missing"
        return "planned"

    def batch(self, batch_id: int) -> Batch | None:
        offsets = self.offsets.get(batch_id)
        if offsets is None and batch_id not in self.commits:
            return None
        return Batch(batch_id, offsets, self.commits.get(batch_id), self._start(batch_id), self.status(batch_id))

    def batches(self) -> list[Batch]:
        """Every batch whose offsets or commit was read (within the window), oldest first."""
        first = self.window_start or 0
        ids = sorted(i for i in set(self.offsets) | set(self.commits) if i >= first)
        return [b for b in (self.batch(i) for i in ids) if b is not None]

    def conf_changes(self) -> list[dict[str, object]]:
        """Conf values that differ from the batch before (keys a newer Spark adds are not changes)."""
        changes: list[dict[str, object]] = []
        ids = sorted(i for i in self.offsets if self.offsets[i].metadata is not None)
        for before, after in pairwise(ids):
            old = self.offsets[before].metadata.conf  # type: ignore[union-attr]
            new = self.offsets[after].metadata.conf  # type: ignore[union-attr]
            for key, value in old.items():
                if new.get(key) != value:
                    changes.append({"batch_id": after, "key": key, "before": value, "after": new.get(key)})
        return changes

    def file_source_log(self, source_id: str) -> FileSourceLog:
        listing = next((info.listing for info in self.source_logs if info.source_id == source_id), None)
        return scan_file_source_log(self.path, source_id, listing)

    def _start(self, batch_id: int) -> tuple[SourceOffset, ...] | None:
        if batch_id == 0:
            width = len(self.offsets[0].sources) if 0 in self.offsets else 0
            return (NONE_OFFSET,) * width
        previous = self.offsets.get(batch_id - 1)
        return previous.sources if previous else None


def read_checkpoint(path: LocationLike, last_batches: int | None = None, verify_crc: bool = True) -> Checkpoint:
    """Read a checkpoint; `last_batches` limits parsing to the newest N batches (plus the one
    before them, whose offsets are the first batch's start)."""
    root = Location.of(path)
    top = root.list_dir()
    if top.is_empty and not (root.is_local and root.is_dir()):
        raise CheckpointNotFoundError(f"no checkpoint at `{root}`: give the directory passed as checkpointLocation")
    offsets_listing = list_log(root / OFFSETS_DIR) if OFFSETS_DIR in top.dirs else LogListing(root / OFFSETS_DIR, ())
    commits_listing = list_log(root / COMMITS_DIR) if COMMITS_DIR in top.dirs else LogListing(root / COMMITS_DIR, ())
    query_id, metadata_problem = _read_metadata(root, top)
    if metadata_problem and not offsets_listing.files and not commits_listing.files and not _looks_like_checkpoint(top):
        raise CheckpointNotFoundError(f"`{root}` is not a Spark checkpoint (no metadata, offsets or commits)")
    window_start = None
    if last_batches is not None and offsets_listing.latest is not None:
        window_start = max(0, offsets_listing.latest.batch_id - last_batches + 1)
    problems: list[LogProblem] = []
    first_needed = None if window_start is None else window_start - 1
    offsets = _parse_log(offsets_listing, parse_offsets, first_needed, verify_crc, problems)
    commits = _parse_log(commits_listing, parse_commit, window_start, verify_crc, problems)
    return Checkpoint(
        path=root,
        query_id=query_id,
        metadata_problem=metadata_problem,
        offsets_listing=offsets_listing,
        commits_listing=commits_listing,
        offsets=offsets,
        commits=commits,
        problems=tuple(problems),
        source_logs=_source_logs(root) if SOURCES_DIR in top.dirs else (),
        state=read_state_stores(root / STATE_DIR) if STATE_DIR in top.dirs else StateStores(root / STATE_DIR),
        window_start=window_start,
    )


Parsed = TypeVar("Parsed", OffsetBatch, CommitBatch)


def _parse_log(
    listing: LogListing,
    parse: Callable[[LogFile], Parsed],
    first_batch: int | None,
    verify_crc: bool,
    problems: list[LogProblem],
) -> dict[int, Parsed]:
    """Parse the files of one log from `first_batch` on; what cannot be used goes to `problems`."""
    parsed: dict[int, Parsed] = {}
    for log_file in listing.files:
        if first_batch is not None and log_file.batch_id < first_batch:
            continue
        try:
            entry = parse(log_file)
        except MalformedLogFileError as error:
            problems.append(as_problem(log_file.path, error))
            continue
        parsed[entry.batch_id] = entry
        if entry.version_problem:
            problems.append(entry.version_problem)
        if verify_crc and checksum_name(log_file.path) in listing.checksums and (problem := crc_problem(log_file.path)):
            problems.append(problem)
    return parsed


def read_query_id(path: LocationLike) -> str | None:
    """The query id recorded in `<checkpoint>/metadata`, or None when it is missing or unreadable."""
    return _read_metadata(Location.of(path))[0]


def _read_metadata(root: Location, top: DirListing | None = None) -> tuple[str | None, LogProblem | None]:
    path = root / METADATA_FILE
    try:
        if top is not None and METADATA_FILE not in {f.name for f in top.files}:
            raise FileNotFoundError(str(path))
        data = path.read_bytes()
    except FileNotFoundError:
        return None, LogProblem(path, "missing", f"`{path}` is missing: the query id is lost")
    except OSError as error:
        return None, LogProblem(path, "unreadable", f"cannot read `{path}`: {error}")
    if not data.strip():
        return None, LogProblem(path, "empty", f"`{path}` is empty: the query id is lost")
    try:
        value = orjson.loads(data.splitlines()[0])
        return str(value["id"]), None
    except (orjson.JSONDecodeError, KeyError, TypeError, IndexError):
        return None, LogProblem(path, "corrupt", f'`{path}` does not hold {{"id": <query id>}}')


def _looks_like_checkpoint(top: DirListing) -> bool:
    return any(name in top.dirs for name in (OFFSETS_DIR, COMMITS_DIR, SOURCES_DIR, STATE_DIR))


def _source_logs(root: Location) -> tuple[SourceLogInfo, ...]:
    sources_root = root / SOURCES_DIR
    infos = []
    for name in sorted(sources_root.list_dir().dirs, key=lambda n: (not n.isdigit(), n.zfill(12))):
        listing = list_log(sources_root / name)
        try:
            kind: SourceLogKind = "file_source" if is_file_source_log(listing) else "other"
        except NotAFileSourceLogError:
            kind = "other"
        infos.append(SourceLogInfo(name, kind, listing))
    return tuple(infos)
