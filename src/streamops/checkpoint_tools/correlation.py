"""Tie each micro-batch to the source data it read and the sink commits it produced.

For a Delta source, a batch read exactly the files between the previous batch's end offset and
its own (the seed talk's walk-through: end index 4 of version 0 with a null start = files 0-4 of
version 0); their rows and bytes come from the add actions' stats. For Spark's file source, each
landing file is one row: the batch that took it, when it was discovered and when that batch
committed (what Databricks shows as cloud_files_state). Sink commits are found by identity (see
sink_commits), so a batch that wrote several tables lists each commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamops.checkpoint_tools.sink_commits import SinkCommit, StreamIdentity, scan_sink_commits
from streamops.checkpoint_tools.sink_index import SinkTableIndex
from streamops.checkpoint_tools.source_table import SourceTable
from streamops.core.checkpoint_format.delta_positions import delta_source_slot, reservoir_id
from streamops.core.checkpoint_format.file_source_log import FileSourceLog
from streamops.core.checkpoint_format.kafka_positions import offset_ranges
from streamops.core.checkpoint_format.reader import Batch, Checkpoint, read_checkpoint
from streamops.core.delta_format.log import DeltaLog
from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.core.storage.location import Location, LocationLike


@dataclass(frozen=True)
class FileRead:
    version: int
    index: int
    is_starting_version: bool
    path: str
    size: int
    rows: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "index": self.index,
            "is_starting_version": self.is_starting_version,
            "path": self.path,
            "size": self.size,
            "rows": self.rows,
        }


@dataclass(frozen=True)
class SourceRead:
    """What one batch read from the Delta source."""

    versions: tuple[int, ...]
    files: tuple[FileRead, ...]
    version_timestamps_ms: dict[int, int | None]
    problem: str | None = None

    @property
    def rows(self) -> int | None:
        counts = [f.rows for f in self.files]
        return None if None in counts else sum(c for c in counts if c is not None)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> dict[str, Any]:
        return {
            "versions": list(self.versions),
            "version_timestamps_ms": {str(k): v for k, v in self.version_timestamps_ms.items()},
            "files": [f.to_json() for f in self.files],
            "rows": self.rows,
            "bytes": self.bytes,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class BatchCorrelation:
    batch: Batch
    source_read: SourceRead | None
    sink_commits: tuple[SinkCommit, ...]

    def to_json(self) -> dict[str, Any]:
        batch = self.batch
        return {
            "batch_id": batch.batch_id,
            "status": batch.status,
            "batch_timestamp_ms": batch.batch_timestamp_ms,
            "watermark_ms": batch.watermark_ms,
            "committed_ms": batch.committed_ms,
            "start_offsets": None if batch.start is None else [o.to_json() for o in batch.start],
            "end_offsets": [o.to_json() for o in batch.end],
            "kafka_ranges": [
                offset_ranges(batch.start[i] if batch.start else None, end)
                for i, end in enumerate(batch.end)
                if end.kind == "kafka"
            ],
            "source": self.source_read.to_json() if self.source_read else None,
            "sink_commits": [c.to_json() for c in self.sink_commits],
        }


@dataclass(frozen=True)
class LandingFile:
    """One file a file source took: which batch, discovered and committed when."""

    source_id: str
    path: str
    modified_ms: int
    log_batch: int
    batch_id: int | None
    discovered_ms: int | None
    committed: bool
    committed_ms: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "path": self.path,
            "modified_ms": self.modified_ms,
            "log_batch": self.log_batch,
            "batch_id": self.batch_id,
            "discovered_ms": self.discovered_ms,
            "committed": self.committed,
            "committed_ms": self.committed_ms,
        }


@dataclass(frozen=True)
class Correlation:
    stream: str
    checkpoint: Location
    query_id: str | None
    source_table: Location | None
    sink_tables: tuple[Location, ...]
    batches: tuple[BatchCorrelation, ...]
    landing_files: tuple[LandingFile, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "checkpoint": str(self.checkpoint),
            "query_id": self.query_id,
            "source_table": str(self.source_table) if self.source_table else None,
            "sink_tables": [str(t) for t in self.sink_tables],
            "batches": [b.to_json() for b in self.batches],
            "landing_files": [f.to_json() for f in self.landing_files],
        }


def correlate(
    checkpoint: LocationLike | Checkpoint,
    source_table: LocationLike | None = None,
    sink_tables: Sequence[LocationLike] = (),
    lake: LakeLike | None = None,
    sink_index: SinkTableIndex | None = None,
    last_batches: int | None = None,
    stream: str | None = None,
) -> Correlation:
    """Correlate every batch the checkpoint still records (or the newest `last_batches`).

    With `lake`, a missing source table comes from the lake layout and the sinks are every lake
    table holding a txn of this stream (pass a long-lived `sink_index` to reuse its cache).
    `stream` is the appId the sink commits carry; it defaults to the checkpoint directory's name.
    """
    lake = None if lake is None else LakeLayout.at(lake)
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else read_checkpoint(checkpoint, last_batches)
    identity = StreamIdentity(stream or ckpt.stream, ckpt.query_id)
    source_path, sink_paths = resolve_tables(identity, source_table, sink_tables, lake, sink_index, reservoir_id(ckpt))
    batches = ckpt.batches()
    sink_by_batch = _sink_commits_by_batch(sink_paths, identity, batches, sink_index)
    source = SourceTable(source_path) if source_path is not None else None
    slot = delta_source_slot(ckpt)
    rows = tuple(
        BatchCorrelation(
            batch,
            _source_read(source, batch, slot) if source is not None and slot is not None else None,
            tuple(sink_by_batch.get(batch.batch_id, ())),
        )
        for batch in batches
    )
    return Correlation(
        stream=identity.stream,
        checkpoint=ckpt.path,
        query_id=ckpt.query_id,
        source_table=source_path,
        sink_tables=tuple(sink_paths),
        batches=rows,
        landing_files=tuple(landing_files(ckpt)),
    )


def resolve_tables(
    identity: StreamIdentity,
    source_table: LocationLike | None,
    sink_tables: Sequence[LocationLike],
    lake: LakeLayout | None,
    sink_index: SinkTableIndex | None,
    reservoir_id: str | None = None,
) -> tuple[Location | None, list[Location]]:
    """The source and sink tables of a checkpoint: as given, else from the lake (its layout for
    the pipeline's streams, the table whose id is the Delta offsets' `reservoirId` for others)."""
    source = Location.of(source_table) if source_table is not None else None
    sinks = [Location.of(t) for t in sink_tables]
    if lake is not None:
        index = sink_index or SinkTableIndex(lake)
        if source is None:
            source = lake.stream_source_table(identity.stream)
        if source is None and reservoir_id:
            source = index.table_with_id(reservoir_id)
        if not sinks:
            sinks = sorted(index.tables_for(identity.app_ids))
    return source, sinks


def _source_read(source: SourceTable, batch: Batch, slot: int) -> SourceRead | None:
    end = batch.end[slot].delta if slot < len(batch.end) else None
    if end is None:
        return None
    start = None
    if batch.start is not None and slot < len(batch.start):
        start = batch.start[slot].delta
    elif batch.batch_id > 0:
        return SourceRead((), (), {}, f"offsets/{batch.batch_id - 1} is gone, so the batch's start is unknown")
    try:
        files = source.files_between(start, end)
    except StreamopsError as error:
        return SourceRead((), (), {}, str(error))
    versions = tuple(sorted({f.version for f in files}))
    return SourceRead(
        versions=versions,
        files=tuple(
            FileRead(f.version, f.index, f.is_starting_version, f.file.path, f.file.size, f.file.num_records)
            for f in files
        ),
        version_timestamps_ms={v: _commit_time(source.log, v) for v in versions},
    )


def _commit_time(log: DeltaLog, version: int) -> int | None:
    try:
        return log.commit_time_ms(version)
    except StreamopsError:
        return None


def _sink_commits_by_batch(
    sinks: Sequence[Location],
    identity: StreamIdentity,
    batches: Sequence[Batch],
    sink_index: SinkTableIndex | None,
) -> dict[int, list[SinkCommit]]:
    if not batches:
        return {}
    oldest = batches[0].batch_id
    found: dict[int, list[SinkCommit]] = {}
    for table in sinks:
        log = sink_index.log(table) if sink_index else DeltaLog(table)
        for commit in reversed(scan_sink_commits(log, identity, down_to_batch=oldest)):
            found.setdefault(commit.batch_id, []).append(commit)
    return found


def landing_files(ckpt: Checkpoint) -> list[LandingFile]:
    """One row per file every file source of the checkpoint took."""
    slots = [i for i, o in enumerate(_newest_sources(ckpt)) if o.kind == "file"]
    logs = [s for s in ckpt.source_logs if s.kind == "file_source"]
    rows: list[LandingFile] = []
    for info in logs:
        slot = _slot_for(info.source_id, slots)
        rows.extend(_landing_rows(ckpt, ckpt.file_source_log(info.source_id), slot))
    return rows


def _newest_sources(ckpt: Checkpoint) -> tuple:
    newest = max(ckpt.offsets, default=None)
    return ckpt.offsets[newest].sources if newest is not None else ()


def _slot_for(source_id: str, file_slots: list[int]) -> int | None:
    """Source ids are the sources' positions in the offsets lines; a named source (Spark 4.2
    source evolution) is matched when it is the only file source."""
    if source_id.isdigit() and int(source_id) in file_slots:
        return int(source_id)
    return file_slots[0] if len(file_slots) == 1 else None


def _landing_rows(ckpt: Checkpoint, log: FileSourceLog, slot: int | None) -> list[LandingFile]:
    """Map file-source log batches to query batches through the logOffset each batch recorded:
    batch N took log batches (end offset of N-1, end offset of N]."""
    owner_of: dict[int, Batch] = {}
    committed_through = -1
    for batch in ckpt.batches():
        if slot is None or slot >= len(batch.end) or batch.end[slot].kind != "file":
            continue
        end = int(batch.end[slot].file_log_offset)  # type: ignore[arg-type]
        if batch.status != "planned":
            committed_through = max(committed_through, end)
        start = batch.start[slot] if batch.start and slot < len(batch.start) else None
        if start is None and batch.batch_id > 0:
            continue  # offsets of the batch before are gone: its range is unknown
        low = start.file_log_offset if start is not None and start.kind == "file" else -1
        for log_batch in range(int(low) + 1, end + 1):  # type: ignore[arg-type]
            owner_of[log_batch] = batch
    rows = []
    for entry in log.entries:
        owner = owner_of.get(entry.batch_id)
        committed = entry.batch_id <= committed_through
        rows.append(
            LandingFile(
                source_id=log.source_id,
                path=entry.path,
                modified_ms=entry.timestamp_ms,
                log_batch=entry.batch_id,
                batch_id=owner.batch_id if owner else None,
                discovered_ms=owner.batch_timestamp_ms if owner else None,
                committed=committed,
                committed_ms=owner.committed_ms if owner else None,
            )
        )
    return rows
