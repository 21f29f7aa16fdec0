"""How far each source of a stream is behind, from what its progress says and what the monitor
measured, and how long it would take to catch up.

A source reports its own lag in its `metrics` map and its offsets: Kafka's
`min/avg/maxOffsetsBehindLatest` (and, on Databricks, `estimatedTotalBytesBehindLatest`) and
`latestOffset` - `endOffset` per topic partition; Delta's and Auto Loader's `numFilesOutstanding`
and `numBytesOutstanding`; Kinesis' `maxMsBehindLatest` and `totalPrefetchedBytes`; Pub/Sub's
`numRecordsReadyToProcess` and `sizeOfRecordsReadyToProcess`. These are read by name whatever
the source's kind, so a connector that reports Kafka's names is understood too. Pure functions:
no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from streamops.core.checkpoint_format.offset_log import classify_offset
from streamops.core.delta_format.backlog import Backlog
from streamops.core.delta_format.change_commits import ChangeCommit
from streamops.monitor.progress_event import SourceProgress
from streamops.monitor.source_kinds import SourceKind, description_label, kind_of
from streamops.monitor.status_rules import ProgressSample

AVG_OFFSETS_BEHIND = "avgOffsetsBehindLatest"
MAX_OFFSETS_BEHIND = "maxOffsetsBehindLatest"
RECORDS_WAITING = ("numRecordsReadyToProcess",)
FILES_OUTSTANDING = ("numFilesOutstanding",)
BYTES_OUTSTANDING = (
    "numBytesOutstanding",
    "estimatedTotalBytesBehindLatest",
    "totalPrefetchedBytes",
    "sizeOfRecordsReadyToProcess",
)
MS_BEHIND = ("maxMsBehindLatest",)


@dataclass(frozen=True)
class ReportedLag:
    """What one source's progress says about its lag; None where it says nothing.

    `offsets` are records behind the latest offset, summed over partitions: from the offsets
    themselves when both are topic/partition maps, else the average times the partitions, else
    (a source naming no partitions) the maximum, which is then a lower bound."""

    offsets: int | None = None
    max_partition_offsets: int | None = None
    files: int | None = None
    bytes: int | None = None
    seconds: float | None = None
    partitions: tuple[tuple[str, int, int], ...] = ()
    """(topic, partition, records behind) of each partition both offsets name."""


def reported_lag(source: SourceProgress) -> ReportedLag:
    metrics = source.metric_values()
    by_partition = _partition_lags(source.end_offset, source.latest_offset)
    behind = None if by_partition is None else list(by_partition.values())
    max_partition = _first_int(metrics, (MAX_OFFSETS_BEHIND,))
    if behind is not None:
        offsets: int | None = sum(behind)
        max_partition = max(behind, default=0) if max_partition is None else max_partition
    elif AVG_OFFSETS_BEHIND in metrics and (partitions := _partition_count(source.latest_offset)):
        offsets = round(metrics[AVG_OFFSETS_BEHIND] * partitions)
    else:
        offsets = max_partition if max_partition is not None else _first_int(metrics, RECORDS_WAITING)
    ms = _first_int(metrics, MS_BEHIND)
    return ReportedLag(
        offsets=offsets,
        max_partition_offsets=max_partition,
        files=_first_int(metrics, FILES_OUTSTANDING),
        bytes=_first_int(metrics, BYTES_OUTSTANDING),
        seconds=None if ms is None else ms / 1000.0,
        partitions=tuple((topic, partition, lag) for (topic, partition), lag in sorted((by_partition or {}).items())),
    )


@dataclass(frozen=True)
class SourceLag:
    """One source of a stream right after a batch: position `source` in the query's sources
    (Spark's own `sources/<id>` numbering), its kind, and how far behind it is.

    `files`, `bytes`, `versions` and `seconds` are the monitor's own measurement where it can
    make one (`measured`: Delta tables and Spark's file source), else what the source reported.
    `seconds` is the age of the oldest waiting data (or, for Kinesis, the time behind the
    stream's tip). None means unknown, never zero. For a Delta source the monitor measured,
    `retention_files_seconds` / `retention_log_seconds` are the time left before VACUUM / log
    cleanup may remove its oldest unread data, and `change_commits` its unread commits that are
    not appends. `partitions` are (topic, partition, records behind) for a Kafka-shaped source."""

    source: int
    kind: SourceKind
    description: str
    pending: bool | None
    offsets: int | None = None
    max_partition_offsets: int | None = None
    files: int | None = None
    bytes: int | None = None
    versions: int | None = None
    seconds: float | None = None
    measured: bool = False
    retention_files_seconds: float | None = None
    retention_log_seconds: float | None = None
    change_commits: tuple[ChangeCommit, ...] = ()
    partitions: tuple[tuple[str, int, int], ...] = ()


def source_lag(source_id: int, source: SourceProgress, measured: Backlog | None, pending: bool | None) -> SourceLag:
    """One source's lag: the monitor's measurement where it made one, else what the source
    reports; data waits when either says so (`pending` is what the offsets alone say)."""
    reported = reported_lag(source)
    common = {
        "source": source_id,
        "kind": kind_of(source),
        "description": description_label(source.description),
        "offsets": reported.offsets,
        "max_partition_offsets": reported.max_partition_offsets,
        "partitions": reported.partitions,
    }
    if measured is not None:
        return SourceLag(
            **common,
            pending=not measured.is_empty,
            files=measured.files,
            bytes=measured.bytes,
            versions=measured.versions,
            seconds=measured.seconds,
            measured=True,
            retention_files_seconds=measured.retention.files if measured.retention else None,
            retention_log_seconds=measured.retention.log if measured.retention else None,
            change_commits=measured.change_commits,
        )
    waiting = [n for n in (reported.offsets, reported.files) if n is not None]
    if waiting:
        pending = any(n > 0 for n in waiting) or bool(pending)
    return SourceLag(**common, pending=pending, files=reported.files, bytes=reported.bytes, seconds=reported.seconds)


def read_rate(samples: Sequence[ProgressSample], source: int) -> float | None:
    """Rows per second `source` read over the window: its rows in the window's batches over the
    wall time they span, trigger gaps included (what a backlog actually drains at, unlike
    Spark's per-batch processing rate). None before two batches or when nothing was read."""
    if len(samples) < 2:
        return None
    rows = sum(s.source_rows[source] for s in samples[1:] if source < len(s.source_rows))
    span = samples[-1].ended_at - samples[0].ended_at
    return rows / span if rows > 0 and span > 0 else None


def estimated_seconds(offsets: int | None, rate: float | None) -> float | None:
    """Seconds to read `offsets` records at `rate`, ignoring what arrives meanwhile: an
    estimate (0 when nothing waits, None when either is unknown)."""
    if offsets is None:
        return None
    if offsets <= 0:
        return 0.0
    return offsets / rate if rate else None


def _partition_lags(end: str | None, latest: str | None) -> dict[tuple[str, int], int] | None:
    """latest - end per topic partition, when both offsets are Kafka-shaped. A partition the
    end offset does not name yet (added since the batch) is left out until a batch reads it."""
    if end is None or latest is None:
        return None
    end_offset, latest_offset = classify_offset(end), classify_offset(latest)
    if end_offset.kind != "kafka" or latest_offset.kind != "kafka":
        return None
    lags = {}
    for topic, partitions in latest_offset.value.items():
        read = end_offset.value.get(topic, {})
        for partition, newest in partitions.items():
            if partition in read:
                lags[(topic, int(partition))] = max(0, newest - read[partition])
    return lags


def _partition_count(latest: str | None) -> int | None:
    if latest is None:
        return None
    offset = classify_offset(latest)
    if offset.kind != "kafka":
        return None
    return sum(len(partitions) for partitions in offset.value.values())


def _first_int(metrics: dict[str, float], names: Sequence[str]) -> int | None:
    for name in names:
        if name in metrics:
            return max(0, round(metrics[name]))
    return None
