"""Rewind a checkpoint so the next run plans again from batch N.

Semantics:
- `offsets/N..` and `commits/N..` are removed, so batch N-1 is the latest planned and committed
  batch and the next run plans batch N from batch N-1's end offset, with the options and limits
  of that run. Rewinding to 0 removes every batch: the source picks its start again (a Delta
  source without startingVersion starts from the table's snapshot at restart time).
- A file source's log (`sources/<id>/`) is cut back to the logOffset batch N-1 recorded, so the
  files of batches N.. count as new again; compacted logs are rewritten as Spark expects them.
- A stateful query's state goes back with it: batch N runs again on state version N, so every
  store of every operator (each partition; the four stores of a stream-stream join) must still
  load version N (its file, or a snapshot plus the deltas/changelogs after it); otherwise the
  rewind is refused naming the first missing file. Version files newer than N are removed (the
  backup keeps them), so no later batch can load state from the abandoned timeline.
- Nothing else changes: the query id (`metadata`) stays, so sinks keyed by it still recognise
  the stream.
- A sink written with txn (appId = stream, version = batch id) skips every replayed batch whose
  id is <= its txn version; the plan lists, per sink, which batches will be skipped and which
  written, and the table version to RESTORE to first if the replay must really rewrite them.
Without `--yes` only the plan is shown. With it, the checkpoint is first copied to a hidden
sibling directory `.<name>.backup-<UTC time>` (not mistaken for a stream by the lake layout).

Object stores have no rename, so nothing is replaced in place, on any store. The order makes
every state in between a checkpoint Spark can restart from consistently, so an interrupted
rewind (a killed process, a lost network) leaves a usable checkpoint and running the same
rewind again finishes it:
1. the backup: every file copied (server-side on an object store), then its manifest written
   only if absent, which proves the store can write-if-absent; a store that cannot (some
   S3-compatible ones) is refused here, before anything in the checkpoint changed;
2. state version files newer than N are removed, newest first: interrupted here, a restart
   fails loudly on the missing state (never loads state of the old timeline) and running the
   rewind again finishes it;
3. batches are removed newest first, each batch's commit before its offsets (so the checkpoint
   is always "planned through B, committed through B or B-1");
4. each file-source log is cut back: the files Spark expects below the cut are written (only if
   absent), then the log batches past the cut are removed, newest first. A log longer than
   the offsets is what Spark itself leaves when it crashes between the two writes, and planning
   the same `--to-batch` again (one past the latest batch now) cuts only the logs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from streamops.checkpoint_tools.checkpoint_checks import id_ranges
from streamops.checkpoint_tools.correlation import BatchCorrelation, correlate
from streamops.checkpoint_tools.exceptions import RewindError
from streamops.checkpoint_tools.sink_commits import StreamIdentity
from streamops.checkpoint_tools.state_report import restorable_batches, state_pins
from streamops.core.checkpoint_format.file_source_log import (
    scan_file_source_log,
    truncate_file_source_log,
)
from streamops.core.checkpoint_format.metadata_log import remove_log_file
from streamops.core.checkpoint_format.reader import COMMITS_DIR, Checkpoint, read_checkpoint
from streamops.core.delta_format.log import DeltaLog
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.core.storage.errors import ConditionalWriteUnsupportedError
from streamops.core.storage.location import Location, LocationLike

RECENT_WRITE_SECONDS = 60.0
BACKUP_MANIFEST = "_streamops_backup.json"


@dataclass(frozen=True)
class SinkEffect:
    """What the replay does to one sink table."""

    table: Location
    txn: int | None
    skipped_batches: tuple[int, ...]
    written_batches: tuple[int, ...]
    restore_version: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "table": str(self.table),
            "txn": self.txn,
            "skipped_batches": list(self.skipped_batches),
            "written_batches": list(self.written_batches),
            "restore_version": self.restore_version,
        }


@dataclass(frozen=True)
class FileSourceRewind:
    source_id: str
    keep_before_log_batch: int
    entries_released: int


@dataclass(frozen=True)
class RewindPlan:
    checkpoint: Location
    stream: str
    to_batch: int
    latest_planned: int
    latest_committed: int | None
    remove: tuple[Location, ...]
    file_sources: tuple[FileSourceRewind, ...]
    replayed: tuple[BatchCorrelation, ...]
    sinks: tuple[SinkEffect, ...]
    warnings: tuple[str, ...]
    state_remove: tuple[Location, ...] = ()

    @property
    def replayed_batch_ids(self) -> tuple[int, ...]:
        return tuple(range(self.to_batch, self.latest_planned + 1))

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint": str(self.checkpoint),
            "stream": self.stream,
            "to_batch": self.to_batch,
            "latest_planned": self.latest_planned,
            "latest_committed": self.latest_committed,
            "replayed_batch_ids": list(self.replayed_batch_ids),
            "remove": [str(p) for p in self.remove],
            "state_remove": [str(p) for p in self.state_remove],
            "file_sources": [
                {
                    "source_id": f.source_id,
                    "keep_before_log_batch": f.keep_before_log_batch,
                    "entries_released": f.entries_released,
                }
                for f in self.file_sources
            ],
            "replayed": [b.to_json() for b in self.replayed],
            "sinks": [s.to_json() for s in self.sinks],
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class RewindResult:
    plan: RewindPlan
    backup: Location
    actions: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": True,
            "plan": self.plan.to_json(),
            "backup": str(self.backup),
            "actions": list(self.actions),
        }


def plan_rewind(
    checkpoint: LocationLike,
    to_batch: int,
    source_table: LocationLike | None = None,
    sink_tables: Sequence[LocationLike] = (),
    lake: LakeLike | None = None,
    stream: str | None = None,
    now: float | None = None,
) -> RewindPlan:
    """Work out what rewinding to `to_batch` removes and what the next run will replay."""
    lake = None if lake is None else LakeLayout.at(lake)
    ckpt = read_checkpoint(checkpoint)
    latest = ckpt.latest_planned
    if latest is None:
        raise RewindError(f"`{ckpt.path}` has no planned batch: there is nothing to rewind")
    out_of_range = RewindError(f"--to-batch must be between 0 and {latest} (the latest planned batch of `{ckpt.path}`)")
    if to_batch < 0 or to_batch > latest + 1:
        raise out_of_range
    state_remove = _state_to_remove(ckpt, to_batch)
    previous = ckpt.offsets.get(to_batch - 1)
    if to_batch > 0 and previous is None:
        oldest = ckpt.offsets_listing.files[0].batch_id if ckpt.offsets_listing.files else latest
        raise RewindError(
            f"offsets/{to_batch - 1} of `{ckpt.path}` is gone or unreadable (Spark keeps only the newest "
            f"batches), so batch {to_batch} has no start: rewind to a batch >= {oldest + 1}"
        )
    name = stream or ckpt.stream
    remove = tuple(
        f.path
        for listing in (ckpt.offsets_listing, ckpt.commits_listing)
        for f in listing.files
        if f.batch_id >= to_batch
    )
    file_sources = []
    for info in ckpt.source_logs:
        if info.kind != "file_source":
            continue
        keep_before = _file_log_cut(previous.sources if previous else (), info.source_id, to_batch)
        log = scan_file_source_log(ckpt.path, info.source_id)
        released = sum(1 for e in log.entries if e.batch_id >= keep_before)
        file_sources.append(FileSourceRewind(info.source_id, keep_before, released))
    if to_batch == latest + 1 and not any(f.entries_released for f in file_sources):
        raise out_of_range
    correlation = correlate(ckpt, source_table, sink_tables, lake, stream=name)
    replayed = tuple(b for b in correlation.batches if b.batch.batch_id >= to_batch)
    sinks = tuple(
        _sink_effect(t, StreamIdentity(name, ckpt.query_id), to_batch, latest, replayed)
        for t in correlation.sink_tables
    )
    warnings = _warnings(ckpt, to_batch, sinks, now)
    return RewindPlan(
        checkpoint=ckpt.path,
        stream=name,
        to_batch=to_batch,
        latest_planned=latest,
        latest_committed=ckpt.latest_committed,
        remove=remove,
        file_sources=tuple(file_sources),
        replayed=replayed,
        sinks=sinks,
        warnings=warnings,
        state_remove=state_remove,
    )


def apply_rewind(plan: RewindPlan, backup_root: LocationLike | None = None) -> RewindResult:
    """Back the checkpoint up, then remove what the plan lists, in the order of the module
    docstring. Stop the query first."""
    now = read_checkpoint(plan.checkpoint, last_batches=1)
    if (now.latest_planned, now.latest_committed) != (plan.latest_planned, plan.latest_committed):
        raise RewindError(
            f"`{plan.checkpoint}` changed since the plan was made (now planned through "
            f"{now.latest_planned}): stop the query, then plan the rewind again"
        )
    backup = backup_path(plan.checkpoint, backup_root)
    _back_up(plan, backup)
    actions = [f"copied {plan.checkpoint} to {backup}"]
    for path in plan.state_remove:
        remove_log_file(path)
        actions.append(f"removed {path}")
    for path in sorted(plan.remove, key=_removal_order):
        remove_log_file(path)
        actions.append(f"removed {path}")
    for source in plan.file_sources:
        log = scan_file_source_log(plan.checkpoint, source.source_id)
        actions.extend(truncate_file_source_log(log, source.keep_before_log_batch))
    return RewindResult(plan, backup, tuple(actions))


def _back_up(plan: RewindPlan, backup: Location) -> None:
    if not backup.same_store(plan.checkpoint):
        raise RewindError(
            f"the backup `{backup}` must be on the same store as `{plan.checkpoint}`: choose a --backup-dir there"
        )
    plan.checkpoint.copy_tree(backup)
    manifest = {"checkpoint": str(plan.checkpoint), "to_batch": plan.to_batch, "remove": [str(p) for p in plan.remove]}
    try:
        (backup / BACKUP_MANIFEST).create(json.dumps(manifest, indent=2).encode("utf-8"))
    except ConditionalWriteUnsupportedError as error:
        raise RewindError(
            f"{error}, so rewind cannot promise not to overwrite a file a running query writes; "
            f"nothing was changed (a backup is at `{backup}`): copy the checkpoint to a local disk, "
            "rewind it there, and copy it back"
        ) from error


def _removal_order(path: Location) -> tuple[int, int]:
    """Newest batch first; within a batch its commit before its offsets."""
    return -int(path.name), 0 if path.parent.name == COMMITS_DIR else 1


def _state_to_remove(ckpt: Checkpoint, to_batch: int) -> tuple[Location, ...]:
    """State versions newer than `to_batch`; refuses when version `to_batch` cannot be loaded."""
    if not ckpt.state.present:
        return ()
    missing = ckpt.state.missing_for(to_batch, state_pins(ckpt, to_batch))
    if missing:
        restorable = restorable_batches(ckpt)
        raise RewindError(
            f"batch {to_batch} would run on state version {to_batch}, which cannot be loaded: "
            f"{missing[0]} is missing"
            + (f" ({len(missing) - 1} more)" if len(missing) > 1 else "")
            + f"; batches whose state is complete: {id_ranges(restorable) or 'none'}"
        )
    return tuple(ckpt.state.files_after(to_batch))


def backup_path(checkpoint: Location, backup_root: LocationLike | None = None) -> Location:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    root = Location.of(backup_root) if backup_root is not None else checkpoint.parent
    return root / f".{checkpoint.name}.backup-{stamp}"


def _file_log_cut(previous_sources: tuple, source_id: str, to_batch: int) -> int:
    """The first file-source log batch to drop: one past what batch N-1 recorded."""
    if to_batch == 0:
        return 0
    if not source_id.isdigit() or int(source_id) >= len(previous_sources):
        raise RewindError(f"cannot tell which offsets line belongs to file source `{source_id}`; rewind is not safe")
    offset = previous_sources[int(source_id)]
    if offset.kind == "none":
        return 0
    if offset.kind != "file":
        raise RewindError(f"sources/{source_id} is a file-source log but its offset is {offset.raw!r}")
    return int(offset.file_log_offset) + 1


def _sink_effect(
    table: Location, identity: StreamIdentity, to_batch: int, latest: int, replayed: tuple[BatchCorrelation, ...]
) -> SinkEffect:
    log = DeltaLog(table)
    versions = [v for v in (log.txn_version(a) for a in identity.app_ids) if v is not None]
    txn = max(versions) if versions else None
    batch_ids = range(to_batch, latest + 1)
    skipped = tuple(b for b in batch_ids if txn is not None and b <= txn)
    written = tuple(b for b in batch_ids if txn is None or b > txn)
    commits = [c for b in replayed for c in b.sink_commits if c.table == table]
    restore = min(c.version for c in commits) - 1 if commits else None
    return SinkEffect(table, txn, skipped, written, restore)


def _warnings(ckpt: Checkpoint, to_batch: int, sinks: tuple[SinkEffect, ...], now: float | None) -> tuple[str, ...]:
    warnings = []
    files = (*ckpt.offsets_listing.files, *ckpt.commits_listing.files)
    newest = max((f.mtime_ms / 1000.0 for f in files), default=0.0)
    age = (time.time() if now is None else now) - newest
    if age < RECENT_WRITE_SECONDS:
        warnings.append(f"the checkpoint was written {age:.0f}s ago: make sure the query is stopped before applying")
    if to_batch == 0:
        warnings.append(
            "rewinding to batch 0 makes each source choose its start again (a Delta source without "
            "startingVersion starts from the table snapshot at restart time)"
        )
    for sink in sinks:
        if sink.skipped_batches:
            restore = (
                f"; to rewrite them, RESTORE `{sink.table}` to version {sink.restore_version} first"
                if sink.restore_version is not None
                else ""
            )
            warnings.append(
                f"`{sink.table}` holds batches through {sink.txn}: replayed batches "
                f"{sink.skipped_batches[0]}..{sink.skipped_batches[-1]} will be skipped by the idempotent "
                f"writer{restore}. Keep maxFilesPerTrigger/maxBytesPerTrigger unchanged so every replayed "
                "batch spans exactly the data it spanned before; a larger batch would have its new data skipped too"
            )
    return tuple(warnings)
