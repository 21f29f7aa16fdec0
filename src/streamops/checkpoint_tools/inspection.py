"""`checkpoint inspect`: everything a checkpoint records, as one stable JSON document.

The console and the CLI render the same document, so what a user sees in a terminal and what a
script reads never disagree.
"""

from __future__ import annotations

from typing import Any

from streamops.checkpoint_tools.state_report import describe_state
from streamops.core.checkpoint_format.reader import (
    Batch,
    Checkpoint,
    SourceLogInfo,
    read_checkpoint,
)
from streamops.core.exceptions import NotAFileSourceLogError
from streamops.core.storage.location import LocationLike


def inspect_checkpoint(path: LocationLike, last_batches: int | None = None) -> dict[str, Any]:
    return describe(read_checkpoint(path, last_batches))


def describe(ckpt: Checkpoint) -> dict[str, Any]:
    latest = ckpt.offsets.get(ckpt.latest_planned) if ckpt.latest_planned is not None else None
    temps = [*ckpt.offsets_listing.temp_files, *ckpt.commits_listing.temp_files]
    for info in ckpt.source_logs:
        temps.extend(info.listing.temp_files)
    return {
        "checkpoint": str(ckpt.path),
        "stream": ckpt.stream,
        "query_id": ckpt.query_id,
        "metadata_problem": ckpt.metadata_problem.to_json() if ckpt.metadata_problem else None,
        "latest_planned": ckpt.latest_planned,
        "latest_committed": ckpt.latest_committed,
        "uncommitted_batch": ckpt.uncommitted_batch,
        "offsets_files": len(ckpt.offsets_listing.files),
        "commits_files": len(ckpt.commits_listing.files),
        "oldest_offsets_batch": ckpt.offsets_listing.files[0].batch_id if ckpt.offsets_listing.files else None,
        "conf": dict(latest.metadata.conf) if latest and latest.metadata else {},
        "conf_changes": ckpt.conf_changes(),
        "batches": [_batch(b) for b in ckpt.batches()],
        "source_logs": [_source_log(ckpt, info) for info in ckpt.source_logs],
        "state": describe_state(ckpt),
        "problems": [p.to_json() for p in ckpt.problems],
        "temp_files": [str(p) for p in temps],
    }


def _batch(batch: Batch) -> dict[str, Any]:
    return {
        "batch_id": batch.batch_id,
        "status": batch.status,
        "log_version": batch.offsets.log_version if batch.offsets else None,
        "batch_timestamp_ms": batch.batch_timestamp_ms,
        "watermark_ms": batch.watermark_ms,
        "committed_ms": batch.committed_ms,
        "next_watermark_ms": batch.commit.next_batch_watermark_ms if batch.commit else None,
        "sources": [
            {"index": i, "source_id": source_id, "kind": o.kind, "offset": o.to_json()}
            for i, (source_id, o) in enumerate(zip(_source_ids(batch), batch.end))
        ],
    }


def _source_ids(batch: Batch) -> tuple[str, ...]:
    ids = batch.offsets.source_ids if batch.offsets else ()
    return ids if len(ids) == len(batch.end) else tuple(map(str, range(len(batch.end))))


def _source_log(ckpt: Checkpoint, info: SourceLogInfo) -> dict[str, Any]:
    described: dict[str, Any] = {
        "source_id": info.source_id,
        "kind": info.kind,
        "files": len(info.listing.files),
        "latest_log_batch": info.listing.latest.batch_id if info.listing.latest else None,
    }
    if info.kind == "file_source":
        try:
            log = ckpt.file_source_log(info.source_id)
        except NotAFileSourceLogError:
            return described
        described.update(
            entries=len(log.entries),
            compact_batches=list(log.compact_batch_ids),
            compact_interval=log.compact_interval,
            problems=[p.to_json() for p in log.problems],
        )
    return described
