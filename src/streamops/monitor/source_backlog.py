"""How much data waits in each source of a stream: the backlog behind the lag metrics.

A Delta source (ours or native Delta) is measured from the source table's log with
`streamops.core.delta_format.backlog` (versions, files, bytes, seconds). Its progress names no table, so the table
is found by registration or by matching the offset's `reservoirId` to the id of each Delta table
in the lake. Spark's file source is measured by comparing its landing directory with the files
its checkpoint's file-source log says were taken. Any other source can only tell whether data
waits: its reported latest offset differs from the offset processed.

Every source also gets a `SourceLag` (`streamops.monitor.source_lag`): the measurement above where there is
one, else what the source reports about itself (Kafka's offsets behind latest, Delta's and Auto
Loader's outstanding files and bytes, Kinesis' time behind), under its kind
(`streamops.monitor.source_kinds`), `unknown` included.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import orjson
from deltalake.exceptions import DeltaError

from streamops.core.checkpoint_format.file_source_log import read_file_source_log
from streamops.core.delta_format.backlog import NO_BACKLOG, Backlog, delta_backlog
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import DeltaFileIndex, DeltaSourceOffset
from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import InvalidNameError, LakeLayout
from streamops.core.storage.entries import Entry
from streamops.core.storage.location import Location, LocationLike
from streamops.monitor.progress_event import SourceProgress
from streamops.monitor.source_lag import SourceLag, source_lag

FILE_SOURCE_PREFIX = "FileStreamSource["
FILE_SOURCE_MAX_AGE_SECONDS = 7 * 24 * 3600
"""Spark's file source ignores files older than maxFileAge (default 7 days) before the newest
file it has seen; they are not backlog."""

log = logging.getLogger("streamops.monitor")


@dataclass(frozen=True)
class BacklogReading:
    """What waits in a stream's sources at `measured_at`.

    `backlog` is what the monitor measured, summed over the sources it could measure (None when
    none); `pending` is None when nothing can tell whether data waits (for example a rate source
    that reports no latest offset). `sources` has every source's lag, measured or reported.
    """

    backlog: Backlog | None
    pending: bool | None
    measured_at: float
    sources: tuple[SourceLag, ...] = ()

    @property
    def offsets(self) -> int | None:
        """Records behind the latest offset over every source that reports it (None: none does)."""
        known = [s.offsets for s in self.sources if s.offsets is not None]
        return sum(known) if known else None

    @property
    def files(self) -> int | None:
        """Files waiting over every source that measured or reported them (None: none did)."""
        known = [s.files for s in self.sources if s.files is not None]
        return sum(known) if known else None

    @property
    def pending_since(self) -> float | None:
        """When the oldest waiting data arrived, when the backlog says so."""
        if self.backlog is None or self.backlog.is_empty:
            return None
        return self.measured_at - self.backlog.seconds


class _SharedIndex(DeltaFileIndex):
    """One index per source table, shared by every stream that reads it (300 silver streams read
    one bronze table): its log is re-read at most every `min_refresh_s`, and sooner (at most
    every `min_catch_up_s`) when it was last read before the batch being measured ended. A log
    read earlier pairs the batch's offset with an older latest version: the backlog measured a
    sawtooth under any stream whose batches are shorter than `min_refresh_s`, and hid a growing
    one from the LAGGING rule. The catch-up bound keeps hundreds of streams on one table in an
    object store to a few listings a second.
    Commits that delete or rewrite data count as no new files here and are kept in `changes`;
    the stream itself fails or skips them as its options say."""

    def __init__(self, log: DeltaLog, min_refresh_s: float, min_catch_up_s: float, clock: Callable[[], float]) -> None:
        super().__init__(log, read_mode="skipChangeCommits", strict=False)
        self._min_refresh_s = min_refresh_s
        self._min_catch_up_s = min_catch_up_s
        self._clock = clock
        self._latest: int | None = None
        self._refreshed_at = 0.0

    def refresh(self, not_before: float | None = None) -> int:
        now = self._clock()
        elapsed = now - self._refreshed_at
        behind = not_before is not None and self._refreshed_at < not_before and elapsed >= self._min_catch_up_s
        if self._latest is None or elapsed >= self._min_refresh_s or behind:
            self._latest = super().refresh()
            self._refreshed_at = now
        return self._latest


class SourceBacklog:
    """Measures backlog for progress events. Not thread-safe: one owner (the monitor worker, or
    `streamops status`) calls it."""

    def __init__(
        self,
        lake: LakeLayout | None,
        clock: Callable[[], float] = time.time,
        rescan_interval_s: float = 30.0,
        min_refresh_s: float = 0.5,
        min_catch_up_s: float = 0.1,
    ) -> None:
        self.lake = lake
        self._clock = clock
        self._rescan_interval_s = rescan_interval_s
        self._min_refresh_s = min_refresh_s
        self._min_catch_up_s = min_catch_up_s
        self._registered: dict[str, list[Location]] = {}
        self._checkpoints: dict[str, Location] = {}
        self._table_ids: dict[Location, str] = {}
        self._tables_by_id: dict[str, Location] = {}
        self._indexes: dict[Location, _SharedIndex] = {}
        self._scanned_at: float | None = None
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def register_table(self, stream: str, table: LocationLike) -> None:
        """Thread-safe: the pipeline registers streams while the worker measures others."""
        path = Location.of(table)
        with self._lock:
            tables = self._registered.setdefault(stream, [])
            if path not in tables:
                tables.append(path)

    def register_checkpoint(self, stream: str, checkpoint: LocationLike) -> None:
        with self._lock:
            self._checkpoints[stream] = Location.of(checkpoint)

    def measure(
        self, stream: str, sources: Sequence[SourceProgress], batch_ended_at: float | None = None
    ) -> BacklogReading:
        """Backlog summed over the stream's sources (seconds: the oldest); data is pending when
        any source has some, not pending when every source can tell it has none.
        `batch_ended_at`: source logs last read before the measured batch ended are read again."""
        now = self._clock()
        backlogs: list[Backlog] = []
        lags: list[SourceLag] = []
        for source_id, source in enumerate(sources):
            backlog, source_pending = self._measure_source(stream, source_id, source, now, batch_ended_at)
            if backlog is not None:
                backlogs.append(backlog)
            lags.append(source_lag(source_id, source, backlog, source_pending))
        pendings = [lag.pending for lag in lags]
        pending: bool | None = None
        if any(p is True for p in pendings):
            pending = True
        elif pendings and all(p is False for p in pendings):
            pending = False
        return BacklogReading(_combine(backlogs) if backlogs else None, pending, now, tuple(lags))

    def _measure_source(
        self, stream: str, source_id: int, source: SourceProgress, now: float, batch_ended_at: float | None
    ) -> tuple[Backlog | None, bool | None]:
        end = _json_or_none(source.end_offset)
        latest = _json_or_none(source.latest_offset)
        if DeltaSourceOffset.is_delta_offset(end):
            offset = DeltaSourceOffset.from_json(end)
            table = self.table_for(stream, offset.reservoir_id)
            if table is not None:
                try:
                    index = self._index(table)
                    index.refresh(not_before=batch_ended_at)
                    return delta_backlog(index, offset, now=now), None
                except (StreamopsError, DeltaError, OSError) as error:
                    self._warn(stream, f"cannot measure the backlog of `{table}`: {error}")
            return None, _delta_pending(offset, latest)
        if source.description.startswith(FILE_SOURCE_PREFIX) and end is not None:
            return self._file_backlog(stream, source_id, source, end, now), None
        if latest is None or end is None:
            return None, None
        return None, latest != end

    def table_for(self, stream: str, reservoir_id: str) -> Location | None:
        """The Delta table behind a source offset: registered for the stream, else found in the lake."""
        with self._lock:
            registered = list(self._registered.get(stream, ()))
        for table in registered:
            if not reservoir_id or self._table_id(table) == reservoir_id:
                return table
        if not reservoir_id:
            return None
        found = self._tables_by_id.get(reservoir_id)
        if found is None and self.lake is not None:
            now = self._clock()
            if self._scanned_at is None or now - self._scanned_at >= self._rescan_interval_s:
                self._scanned_at = now
                for table in self.lake.table_dirs():
                    self._table_id(table)
                found = self._tables_by_id.get(reservoir_id)
        return found

    def _table_id(self, table: Location) -> str | None:
        if table not in self._table_ids:
            try:
                table_id = DeltaLog(table).table_id()
            except (StreamopsError, DeltaError, OSError) as error:
                self._warn(str(table), f"cannot read the table id of `{table}`: {error}")
                return None
            self._table_ids[table] = table_id
            self._tables_by_id[table_id] = table
        return self._table_ids[table]

    def _index(self, table: Location) -> _SharedIndex:
        index = self._indexes.get(table)
        if index is None:
            index = _SharedIndex(DeltaLog(table), self._min_refresh_s, self._min_catch_up_s, self._clock)
            self._indexes[table] = index
        return index

    def _checkpoint_for(self, stream: str) -> Location | None:
        with self._lock:
            checkpoint = self._checkpoints.get(stream)
        if checkpoint is None and self.lake is not None:
            try:
                candidate = self.lake.checkpoint(stream)
            except InvalidNameError:
                return None
            checkpoint = candidate if candidate.is_dir() else None
        return checkpoint

    def _file_backlog(
        self, stream: str, source_id: int, source: SourceProgress, end: Any, now: float
    ) -> Backlog | None:
        checkpoint = self._checkpoint_for(stream)
        landing = _file_source_dir(source.description)
        if checkpoint is None or landing is None:
            return None
        processed_through = end.get("logOffset") if isinstance(end, dict) else None
        try:
            entries = read_file_source_log(checkpoint, source_id)
            landed = _list_files(landing)
        except (StreamopsError, OSError) as error:
            self._warn(stream, f"cannot compare `{landing}` with the file-source log of `{checkpoint}`: {error}")
            return None
        taken = {
            _identity(Location.of(e.path))
            for e in entries
            if processed_through is None or e.batch_id <= int(processed_through)
        }
        newest_ms = max((e.timestamp_ms for e in entries), default=0)
        oldest_allowed_ms = newest_ms - FILE_SOURCE_MAX_AGE_SECONDS * 1000
        pending = [
            entry
            for entry in landed
            if _identity(landing / entry.name) not in taken and entry.mtime_ms >= oldest_allowed_ms
        ]
        if not pending:
            return NO_BACKLOG
        oldest = min(entry.mtime_ms for entry in pending) / 1000.0
        return Backlog(
            versions=0,
            files=len(pending),
            bytes=sum(entry.size for entry in pending),
            seconds=max(0.0, now - oldest),
        )

    def _warn(self, key: str, message: str) -> None:
        if (key, message) not in self._warned:
            self._warned.add((key, message))
            log.warning("%s", message)


def _combine(backlogs: list[Backlog]) -> Backlog:
    """The stream's backlog over its sources: sizes add up, the oldest data and the least
    retention headroom speak for the stream, and every source's unread change commits count."""
    if len(backlogs) == 1:
        return backlogs[0]
    headrooms = [b.retention for b in backlogs if b.retention is not None]
    return Backlog(
        versions=sum(b.versions for b in backlogs),
        files=sum(b.files for b in backlogs),
        bytes=sum(b.bytes for b in backlogs),
        seconds=max(b.seconds for b in backlogs),
        retention=min(headrooms, key=lambda h: h.least) if headrooms else None,
        change_commits=tuple(c for b in backlogs for c in b.change_commits),
    )


def _delta_pending(end: DeltaSourceOffset, latest: Any) -> bool | None:
    """Without the table: does the source's reported latest offset lie beyond the processed one?

    A caught-up end offset points at the next version (`latest + 1`, index -1), so compare
    positions rather than JSON; a starting snapshot cannot be judged from offsets alone."""
    if not DeltaSourceOffset.is_delta_offset(latest) or end.is_starting_version:
        return None
    last = DeltaSourceOffset.from_json(latest)
    return (last.reservoir_version, last.index) >= (end.reservoir_version, end.index + 1) and last.index >= 0


def _json_or_none(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _file_source_dir(description: str) -> Location | None:
    """`FileStreamSource[file:/landing]` -> /landing; `s3a://bucket/landing` -> that prefix."""
    inner = description[len(FILE_SOURCE_PREFIX) :].rstrip("]")
    try:
        return Location.of(inner)
    except StreamopsError:
        return None


def _identity(location: Location) -> tuple[str, str, str]:
    """The same file however a URI spells it (`s3a://` and `s3://`, `file:/x` and `/x`)."""
    return location.root.kind, location.root.container, location.key


def _list_files(root: Location) -> list[Entry]:
    """Data files Spark's file source would list: recursive, skipping `_` and `.` names."""
    return [entry for entry in root.walk() if not any(part.startswith(("_", ".")) for part in entry.name.split("/"))]
