"""Which streams read a Delta table, and from which version on they still need its files.

A checkpoint names the tables its Delta sources read only by table id (the offsets'
`reservoirId`), so a table's readers are found by reading every candidate checkpoint and
matching ids. What a reader needs is what a restart reads (`processed_position`): commits from
that version on, or, when it is still reading its starting snapshot, the snapshot at that version.

A checkpoint that cannot be read is not "a stream that reads nothing": it is kept as
`UnreadableCheckpoint`, so maintenance can refuse to delete what it might still need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from streamops.core.checkpoint_format.delta_positions import processed_position
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.delta_format.source_offsets import DeltaSourceOffset
from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.core.storage.location import Location, LocationLike

RECENT_BATCHES = 2
"""A reader's position is in its latest committed batch and the one planned after it."""


@dataclass(frozen=True)
class StreamRead:
    """One Delta source of one checkpoint: the table it reads and where a restart reads on from."""

    stream: str
    checkpoint: Location
    source: int
    reservoir_id: str
    position: DeltaSourceOffset
    latest_committed: int | None

    @property
    def needed_version(self) -> int:
        """The oldest version whose files (or snapshot) the stream still has to read."""
        return self.position.reservoir_version

    @property
    def needs_snapshot(self) -> bool:
        return self.position.is_starting_version

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "checkpoint": str(self.checkpoint),
            "source": self.source,
            "needed_version": self.needed_version,
            "needs_snapshot": self.needs_snapshot,
            "latest_committed_batch": self.latest_committed,
        }


@dataclass(frozen=True)
class UnreadableCheckpoint:
    """A checkpoint whose Delta positions cannot be told. `tables`: the tables it reads when the
    lake layout says so (a pipeline stream), None when it could read any table."""

    stream: str
    checkpoint: Location
    reason: str
    tables: tuple[Location, ...] | None = None


@dataclass(frozen=True)
class StreamReaders:
    reads: tuple[StreamRead, ...]
    unreadable: tuple[UnreadableCheckpoint, ...]

    def of_table(self, table_id: str) -> list[StreamRead]:
        return [read for read in self.reads if read.reservoir_id == table_id]

    def blocking(self, table: Location) -> list[UnreadableCheckpoint]:
        """Unreadable checkpoints that may read `table`."""
        return [u for u in self.unreadable if u.tables is None or table in u.tables]


def read_positions(checkpoint: Location, stream: str | None = None) -> list[StreamRead]:
    """Every Delta source position of one checkpoint (raises `StreamopsError` when it cannot tell)."""
    ckpt = read_checkpoint(checkpoint, last_batches=RECENT_BATCHES)
    name = stream or ckpt.stream
    newest = ckpt.offsets.get(ckpt.latest_planned) if ckpt.latest_planned is not None else None
    if ckpt.latest_planned is not None and newest is None:
        raise StreamopsError(f"its newest offsets file (batch {ckpt.latest_planned}) cannot be read")
    reads = []
    for slot, offset in enumerate(newest.sources if newest else ()):
        if offset.kind != "delta":
            continue
        position = processed_position(ckpt, slot)
        if position is None:
            committed = ckpt.latest_committed
            raise StreamopsError(f"the offsets of its latest committed batch ({committed}) cannot be read")
        reads.append(StreamRead(name, checkpoint, slot, position.reservoir_id, position, ckpt.latest_committed))
    return reads


def find_readers(lake: LakeLike | None, checkpoints: Iterable[LocationLike] = ()) -> StreamReaders:
    """The Delta reads of every checkpoint in the lake plus those named."""
    lake = None if lake is None else LakeLayout.at(lake)
    candidates: dict[Location, tuple[Location, ...] | None] = {}
    if lake is not None:
        for path in lake.checkpoint_dirs():
            table = lake.stream_source_table(path.name)
            candidates[path] = ((table,) if table else ()) if lake.is_pipeline_stream(path.name) else None
    for named in checkpoints:
        candidates.setdefault(Location.of(named), None)
    reads: list[StreamRead] = []
    unreadable: list[UnreadableCheckpoint] = []
    for path, tables in candidates.items():
        try:
            reads.extend(read_positions(path))
        except (StreamopsError, OSError) as error:
            unreadable.append(UnreadableCheckpoint(path.name, path, _one_line(error), tables))
    return StreamReaders(tuple(reads), tuple(unreadable))


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
