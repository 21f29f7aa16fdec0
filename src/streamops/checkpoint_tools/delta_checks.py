"""Doctor checks that compare a checkpoint with the Delta tables it reads and writes."""

from __future__ import annotations

from streamops.checkpoint_tools.doctor_context import DoctorContext
from streamops.checkpoint_tools.findings import Finding
from streamops.core.checkpoint_format.delta_positions import delta_end
from streamops.core.delta_format.damaged_files import DamagedFile
from streamops.core.exceptions import StreamopsError, VersionNotInLogError

MAX_LISTED_FILES = 10
MAX_NAMED_FILES = 3
"""Damaged files a message names in full; the evidence lists up to MAX_LISTED_FILES."""


def check_source_table(ctx: DoctorContext) -> list[Finding]:
    source = ctx.source
    if source is None:
        return []
    if not source.exists():
        return [
            ctx.finding(
                "source_table_missing",
                "error",
                f"the source table `{source.path}` does not exist",
                "Point the stream at the right path, or restore the table; the checkpoint's offsets "
                "only make sense for the table they were recorded against.",
                table=str(source.path),
            )
        ]
    ckpt = ctx.checkpoint
    latest = delta_end(ckpt, ckpt.latest_planned, ctx.delta_slot or 0)
    if latest is None or not latest.reservoir_id or latest.reservoir_id == source.table_id:
        return []
    return [
        ctx.finding(
            "source_table_replaced",
            "error",
            f"`{source.path}` now holds table {source.table_id}, but the checkpoint was reading "
            f"table {latest.reservoir_id} (reservoirId): the table was dropped and recreated or overwritten",
            "Restore the original table, or start the stream on a new checkpoint against the new table "
            "(add startingVersion to skip what was already processed).",
            table=str(source.path),
            reservoir_id=latest.reservoir_id,
            table_id=source.table_id,
            batch_id=ckpt.latest_planned,
        )
    ]


def check_source_retention(ctx: DoctorContext) -> list[Finding]:
    if not ctx.source_usable or ctx.processed_position is None:
        return []
    source = ctx.source
    assert source is not None
    needed = source.first_needed_version(ctx.processed_position)
    if needed is None:
        return []
    version, snapshot = needed
    retention = source.retention
    earliest = retention.earliest_snapshot if snapshot else retention.earliest_commit
    if version >= earliest:
        return []
    what = f"the table snapshot at version {version}" if snapshot else f"version {version}"
    return [
        ctx.finding(
            "source_version_cleaned_up",
            "error",
            f"the next batch must read {what} of `{source.path}`, but log cleanup kept only versions "
            f">= {earliest}: restart will fail",
            "The stream fell further behind than delta.logRetentionDuration (default 30 days). Start a "
            f"new checkpoint with startingVersion={earliest}, back-fill versions {version}..{earliest - 1} "
            "with a batch job if their data files still exist, and raise delta.logRetentionDuration "
            "on the source.",
            table=str(source.path),
            needed_version=version,
            needs_snapshot=snapshot,
            earliest_commit=retention.earliest_commit,
            earliest_snapshot=retention.earliest_snapshot,
            processed_offset=ctx.processed_position.to_json_dict(),
        )
    ]


def check_vacuumed_files(ctx: DoctorContext) -> list[Finding]:
    damaged = _damaged_pending(ctx)
    outside = set(ctx.damaged_outside_delta) if damaged else set()
    missing = [d for d in damaged if d not in outside]
    if not missing:
        return []
    versions = sorted({d.version for d in missing})
    return [
        ctx.finding(
            "source_files_vacuumed",
            "error",
            f"{len(missing)} data file(s) of source version(s) {versions[0]}..{versions[-1]} that the "
            "stream has not read yet were deleted (VACUUM)" + _what_fails(ctx),
            "The stream lagged more than delta.deletedFileRetentionDuration behind a compaction + VACUUM. "
            f"Start a new checkpoint with startingVersion={versions[-1] + 1} and back-fill the lost "
            "range from the table's current files; keep deletedFileRetentionDuration above the longest "
            "stream downtime.",
            table=str(ctx.source.path),  # type: ignore[union-attr]
            missing_files=len(missing),
            versions=versions,
            examples=[d.path for d in missing[:MAX_LISTED_FILES]],
        )
    ]


def check_damaged_files(ctx: DoctorContext) -> list[Finding]:
    if not _damaged_pending(ctx):
        return []
    damaged = ctx.damaged_outside_delta
    if not damaged:
        return []
    table = ctx.source.path  # type: ignore[union-attr]
    versions = sorted({d.version for d in damaged})
    named = "; ".join(d.describe(table) for d in damaged[:MAX_NAMED_FILES])
    more = f" and {len(damaged) - MAX_NAMED_FILES} more" if len(damaged) > MAX_NAMED_FILES else ""
    return [
        ctx.finding(
            "source_files_damaged",
            "error",
            f"{len(damaged)} data file(s) the stream has not read yet were deleted or truncated outside "
            f"Delta: {named}{more}" + _what_fails(ctx),
            "Restore the file(s) under the same path from a backup or the store's object versioning, then "
            f"restart. If they are lost, `streamops lake fsck {table} --yes` drops them from the table's log "
            "(their rows are lost, and recorded in its commit), but this stream still reads the adds of "
            f"version(s) {', '.join(map(str, versions))}: start it on a new checkpoint with "
            f"startingVersion={versions[-1] + 1} (with ignoreDeletes=true to pass the fsck commit) and "
            f"back-fill versions {versions[0]}..{versions[-1]} from the repaired table.",
            table=str(table),
            damaged_files=len(damaged),
            versions=versions,
            files=[d.to_json() for d in damaged[:MAX_LISTED_FILES]],
        )
    ]


def _damaged_pending(ctx: DoctorContext) -> list[DamagedFile]:
    """The pending files that cannot be read, or none when there is nothing to ask."""
    if not ctx.source_usable or ctx.processed_position is None:
        return []
    try:
        return ctx.damaged_pending
    except VersionNotInLogError:
        return []  # reported by check_source_retention


def _what_fails(ctx: DoctorContext) -> str:
    uncommitted = ctx.checkpoint.uncommitted_batch
    if uncommitted is not None:
        return f"; batch {uncommitted} and later batches will fail"
    return "; restart will fail"


def check_backlog(ctx: DoctorContext) -> list[Finding]:
    backlog = ctx.backlog
    if backlog is None or backlog.is_empty:
        return []
    late = backlog.seconds > ctx.settings.backlog_warning_seconds
    return [
        ctx.finding(
            "backlog",
            "warning" if late else "info",
            f"{backlog.files} file(s), {backlog.bytes} bytes in {backlog.versions} version(s) not "
            f"processed yet; the oldest was committed {backlog.seconds:.0f}s ago",
            "Nothing to do if the query is running and keeping up; if it is not running, start it; if it "
            "lags, raise maxFilesPerTrigger/maxBytesPerTrigger or the cluster size.",
            versions=backlog.versions,
            files=backlog.files,
            bytes=backlog.bytes,
            seconds=round(backlog.seconds, 3),
            oldest_pending_version=backlog.oldest_pending_version,
            latest_version=ctx.source.latest_version,  # type: ignore[union-attr]
        )
    ]


def check_retention_headroom(ctx: DoctorContext) -> list[Finding]:
    backlog = ctx.backlog
    headroom = backlog.retention if backlog is not None else None
    if backlog is None or headroom is None or headroom.least >= ctx.settings.retention_warning_seconds:
        return []
    retention = ctx.source.log.table_retention()  # type: ignore[union-attr]
    files_first = headroom.files <= headroom.log
    what = "VACUUM may delete its files" if files_first else "log cleanup may drop its commit"
    when = "already" if headroom.least <= 0 else f"in {headroom.least / 3600:.1f} h"
    return [
        ctx.finding(
            "retention_headroom",
            "warning",
            f"the oldest unread source data (version {backlog.oldest_pending_version}, committed "
            f"{backlog.seconds / 3600:.1f} h ago) is close to the table's retention: {what} {when}",
            "Catch the stream up before then (start it, or give it more resources); vacuum the source "
            "with `streamops lake vacuum`, which keeps what streams still need; or raise "
            "delta.deletedFileRetentionDuration / delta.logRetentionDuration on the source table.",
            table=str(ctx.source.path),  # type: ignore[union-attr]
            oldest_pending_version=backlog.oldest_pending_version,
            headroom_files_seconds=round(headroom.files, 1),
            headroom_log_seconds=round(headroom.log, 1),
            deleted_file_retention_seconds=retention.deleted_files_seconds,
            log_retention_seconds=retention.log_seconds,
        )
    ]


MERGED_TABLE_HINT = (
    " The table is kept by MERGE (a CDC table of `streamops run --cdc` is): skipChangeCommits would also skip "
    "its updates and deletes; to see every change, read its change feed (readChangeFeed=true, docs/cdc.md)."
)


def check_unread_change_commits(ctx: DoctorContext) -> list[Finding]:
    changes = ctx.backlog.change_commits if ctx.backlog is not None else ()
    if not changes:
        return []
    first = changes[0]
    return [
        ctx.finding(
            "unread_change_commits",
            "warning",
            f"{len(changes)} unread source commit(s) are not appends: "
            + ", ".join(c.describe() for c in changes[:MAX_LISTED_FILES])
            + f"; with default options the stream fails at version {first.version}",
            "Decide before the stream gets there: set skipChangeCommits=true on the source to skip "
            "them (ignoreDeletes=true skips deletes only; ignoreChanges=true re-reads rewritten files, "
            "duplicating their unchanged rows), or restart it on a new checkpoint with "
            f"startingVersion={changes[-1].version + 1} and back-fill; a schema change needs a restart."
            + (MERGED_TABLE_HINT if any(c.operation.upper() == "MERGE" for c in changes) else ""),
            table=str(ctx.source.path),  # type: ignore[union-attr]
            change_commits=[c.to_json() for c in changes],
        )
    ]


def check_stalled(ctx: DoctorContext) -> list[Finding]:
    if not ctx.source_usable or ctx.processed_position is None:
        return []
    try:
        pending = ctx.pending_files
    except VersionNotInLogError:
        return []
    if not pending:
        return []
    ckpt = ctx.checkpoint
    oldest = pending[0].version
    try:
        arrived_ms = ctx.source.log.commit_time_ms(oldest)  # type: ignore[union-attr]
    except StreamopsError:
        return []
    latest_commit = ckpt.commits_listing.latest
    last_commit_ms = latest_commit.mtime_ms if latest_commit else None
    if arrived_ms is None or (last_commit_ms is not None and last_commit_ms >= arrived_ms):
        return []
    waiting = ctx.now - arrived_ms / 1000.0
    if waiting <= ctx.settings.stall_seconds:
        return []
    return [
        ctx.finding(
            "stalled",
            "warning",
            f"no batch committed for {waiting:.0f}s although source version {oldest} arrived then",
            "Check that the query is running (`streamops status`); if it failed, read its exception, "
            "fix it and restart; if it runs, look for a batch stuck on a slow task or a lost executor.",
            last_commit_ms=last_commit_ms,
            oldest_pending_version=oldest,
            oldest_pending_committed_ms=arrived_ms,
            waiting_seconds=round(waiting, 1),
        )
    ]


def check_sink_txn(ctx: DoctorContext) -> list[Finding]:
    if not ctx.sinks:
        return []
    ckpt = ctx.checkpoint
    planned, committed = ckpt.latest_planned, ckpt.latest_committed
    findings = []
    for table, txn in sorted(ctx.sink_txns.items()):
        if txn is not None and (planned is None or txn > planned):
            findings.append(
                ctx.finding(
                    "sink_txn_ahead",
                    "error",
                    f"`{table}` already holds batch {txn} of `{ctx.stream}`, but the checkpoint planned "
                    f"only through batch {planned}: batches up to {txn} will be skipped by the idempotent "
                    "writer (the checkpoint was restored, replaced or rewound)",
                    "If the checkpoint was reset on purpose, also restore the sink to the version before "
                    f"batch {0 if planned is None else planned + 1}, or give the stream a new name (appId); "
                    "if not, restore the checkpoint's newer offsets/ and commits/ from a backup.",
                    table=str(table),
                    sink_txn=txn,
                    latest_planned=planned,
                )
            )
    txn = ctx.stream_txn
    if committed is not None and (txn is None or txn < committed):
        data = _batches_with_data(ctx, -1 if txn is None else txn, committed)
        if data is not False:
            first = 0 if txn is None else txn + 1
            findings.append(
                ctx.finding(
                    "sink_txn_behind",
                    "warning",
                    f"batches {first}..{committed} are committed in the checkpoint"
                    + (" and read source data" if data else "")
                    + f", but no sink holds a batch of `{ctx.stream}` after {txn}",
                    "If those batches legitimately wrote nothing (filters), ignore this. If the sink lost "
                    f"them (restored or overwritten), replay them: `streamops checkpoint rewind {ckpt.path} "
                    f"--to-batch {first} --yes`, then restart.",
                    sink_txn=txn,
                    latest_committed=committed,
                    read_data=data,
                    sinks=[str(t) for t in ctx.sinks],
                )
            )
    return findings


def _batches_with_data(ctx: DoctorContext, after: int, through: int) -> bool | None:
    """Did batches after..through read anything? None when the checkpoint cannot tell."""
    ckpt = ctx.checkpoint
    if after not in ckpt.offsets and after >= 0:
        return None
    if through not in ckpt.offsets:
        return None
    if ctx.delta_slot is not None and ctx.source_usable:
        slot = ctx.delta_slot
        start = delta_end(ckpt, after, slot) if after >= 0 else None
        end = delta_end(ckpt, through, slot)
        if end is None:
            return None
        try:
            return bool(ctx.source.files_between(start, end))  # type: ignore[union-attr]
        except StreamopsError:
            return None
    if after < 0:
        return None
    before, now = ckpt.offsets[after].sources, ckpt.offsets[through].sources
    known = [(b, n) for b, n in zip(before, now) if b.kind != "unknown" and n.kind != "unknown"]
    if not known:
        return None
    return any(b.value != n.value for b, n in known)


def check_sink_other_query(ctx: DoctorContext) -> list[Finding]:
    ours = ctx.checkpoint.query_id
    if ours is None or not ctx.sinks:
        return []
    findings = []
    for table, commits in sorted(ctx.recent_sink_commits.items()):
        own = [c.version for c in commits if c.query_id == ours]
        foreign = [c for c in commits if c.query_id not in (None, ours) and own and c.version > min(own)]
        if not foreign:
            continue
        others = sorted({c.query_id for c in foreign if c.query_id})
        findings.append(
            ctx.finding(
                "sink_written_by_other_query",
                "error",
                f"`{table}` has commits for `{ctx.stream}` from query id(s) {', '.join(others)}, not this "
                f"checkpoint's {ours}: two checkpoints write under one appId and skip each other's batches",
                "Find the other deployment of this stream (same name, different checkpoint) and stop it; "
                "each checkpoint must have its own stream name.",
                table=str(table),
                query_id=ours,
                other_query_ids=others,
                versions=[c.version for c in foreign],
            )
        )
    return findings


def check_duplicate_sink_commits(ctx: DoctorContext) -> list[Finding]:
    findings = []
    for table, commits in sorted(ctx.recent_sink_commits.items()):
        by_batch: dict[int, list] = {}
        for commit in commits:
            by_batch.setdefault(commit.batch_id, []).append(commit)
        for batch_id, same in sorted(by_batch.items()):
            if len(same) < 2:
                continue
            versions = sorted(c.version for c in same)
            findings.append(
                ctx.finding(
                    "duplicate_sink_commit",
                    "error",
                    f"batch {batch_id} of `{ctx.stream}` was committed {len(same)} times to `{table}` "
                    f"(versions {', '.join(map(str, versions))}): its rows are duplicated",
                    "Make the writer idempotent (txnAppId/txnVersion, or streamops' write_batch), then remove "
                    f"the extra rows: delete what version(s) {', '.join(map(str, versions[1:]))} added, or "
                    f"RESTORE the table to version {versions[1] - 1} if nothing else was written since.",
                    table=str(table),
                    batch_id=batch_id,
                    versions=versions,
                    rows=[c.rows for c in sorted(same, key=lambda c: c.version)],
                )
            )
    return findings


DELTA_CHECKS = (
    check_source_table,
    check_source_retention,
    check_vacuumed_files,
    check_damaged_files,
    check_backlog,
    check_retention_headroom,
    check_unread_change_commits,
    check_stalled,
    check_sink_txn,
    check_sink_other_query,
    check_duplicate_sink_commits,
)
