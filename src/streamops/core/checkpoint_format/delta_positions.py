"""Where a checkpoint's Delta source stands, and which files its next batches read.

A restart (and the replay of a planned, uncommitted batch) reads on from the end offset of the
latest committed batch, so that is the position every question about "what is still to be read"
starts from: the doctor's backlog and damaged-file checks, stream-safe vacuum, and the pipeline
naming the file a failed stream could not read. Spark-free: offsets come from the checkpoint,
files from the Delta log.
"""

from __future__ import annotations

from deltalake.exceptions import DeltaError

from streamops.core.checkpoint_format.reader import Checkpoint
from streamops.core.delta_format.source_offsets import BASE_INDEX, DeltaFileIndex, DeltaSourceOffset, IndexedFile
from streamops.core.exceptions import VersionNotInLogError


def delta_source_slot(checkpoint: Checkpoint, table_id: str | None = None) -> int | None:
    """Position of the (first) Delta source in the offsets lines, from the newest batch read.

    With `table_id`, the first Delta source reading that table (or whose offsets name no table),
    so a stream that joins two tables is asked about the one the caller means."""
    for batch_id in sorted(checkpoint.offsets, reverse=True):
        for slot, offset in enumerate(checkpoint.offsets[batch_id].sources):
            delta = offset.delta
            if delta is not None and (table_id is None or delta.reservoir_id in ("", table_id)):
                return slot
    return None


def delta_end(checkpoint: Checkpoint, batch_id: int | None, slot: int) -> DeltaSourceOffset | None:
    """The Delta end offset batch `batch_id` recorded for the source at `slot`."""
    if batch_id is None or batch_id not in checkpoint.offsets:
        return None
    sources = checkpoint.offsets[batch_id].sources
    return sources[slot].delta if slot < len(sources) else None


def reservoir_id(checkpoint: Checkpoint) -> str | None:
    """The table id the (first) Delta source of the newest batch reads, if any."""
    slot = delta_source_slot(checkpoint)
    end = None if slot is None else delta_end(checkpoint, checkpoint.latest_planned, slot)
    return end.reservoir_id if end is not None and end.reservoir_id else None


def processed_position(checkpoint: Checkpoint, slot: int) -> DeltaSourceOffset | None:
    """Where the Delta source at `slot` has processed through: the latest committed batch's end
    offset, or, before any commit, the position just before batch 0's data. A restart (and a
    replay of an uncommitted batch) reads on from there. None when the checkpoint cannot tell.

    Batch 0 of a new stream reads the table's snapshot; when it reads all of it, delta-spark
    records its end as the next version's base (`v+1, -1, not starting`), so its data began at
    the snapshot of `v` (a stream started with `startingVersion` is taken the same way: before
    its first commit it is counted from a snapshot, a superset of what it reads)."""
    committed = delta_end(checkpoint, checkpoint.latest_committed, slot)
    if committed is not None:
        return committed
    if checkpoint.latest_committed is None:
        first = delta_end(checkpoint, 0, slot)
        if first is None:
            return None
        version, starting = first.reservoir_version, first.is_starting_version
        if not starting and first.index == BASE_INDEX and version > 0:
            version, starting = version - 1, True
        return DeltaSourceOffset(version, BASE_INDEX, starting, first.reservoir_id)
    return None


def unread_files(index: DeltaFileIndex, position: DeltaSourceOffset) -> list[IndexedFile]:
    """Every file after `position` through the table's latest version: the uncommitted batch
    and the backlog, what the stream's next batches read.

    Raises `VersionNotInLogError` when log cleanup removed what they need."""
    try:
        return list(index.files_after(position, index.log.latest_version()))
    except DeltaError as error:
        raise VersionNotInLogError(
            f"cannot rebuild the snapshot at version {position.reservoir_version} of "
            f"`{index.log.table}` (log cleanup removed it): {str(error).splitlines()[0]}"
        ) from error
