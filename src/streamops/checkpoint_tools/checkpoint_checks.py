"""Doctor checks that need only the checkpoint directory.

Each check takes the shared `DoctorContext` and returns its findings; each is small enough to be
tested alone against a real checkpoint with one injected fault.
"""

from __future__ import annotations

from itertools import pairwise

from streamops.checkpoint_tools.doctor_context import DoctorContext
from streamops.checkpoint_tools.findings import Finding
from streamops.core.checkpoint_format.offset_log import KEYED_OFFSET_LOG_VERSION, kafka_regressions, offset_position
from streamops.core.delta_format.commit_metadata import txn_holds_batch
from streamops.core.exceptions import StreamopsError

RESTART_BREAKING_PROBLEMS = ("empty", "truncated", "corrupt", "crc_mismatch", "unreadable")

# Confs Spark restores from the offset log because state written under one value cannot be read
# under another (partitioning, state formats, state store implementation, encodings).
STATE_CONFS = frozenset(
    {
        "spark.sql.shuffle.partitions",
        "spark.sql.streaming.stateStore.providerClass",
        "spark.sql.streaming.stateStore.rocksdb.formatVersion",
        "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion",
        "spark.sql.streaming.stateStore.encodingFormat",
        "spark.sql.streaming.stateStore.compression.codec",
        "spark.sql.streaming.stateStore.rowChecksum.enabled",
        "spark.sql.streaming.aggregation.stateFormatVersion",
        "spark.sql.streaming.join.stateFormatVersion",
        "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
        "spark.sql.streaming.statefulOperator.useStrictDistribution",
        "spark.sql.streaming.multipleWatermarkPolicy",
    }
)
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
CLOCK_SLACK_MS = 2000


def check_metadata(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    problem = ckpt.metadata_problem
    if problem is None:
        return []
    has_batches = bool(ckpt.offsets_listing.files)
    recorded = sorted({c.query_id for commits in ctx.recent_sink_commits.values() for c in commits if c.query_id})
    restore = (
        f'write {{"id":"{recorded[0]}"}} (the query id the sink commits record) to `{problem.path}`'
        if len(recorded) == 1
        else f"restore `{problem.path}` from a backup of the checkpoint"
    )
    return [
        ctx.finding(
            "missing_metadata",
            "error" if has_batches else "warning",
            f"{problem.detail}; Spark will start the query under a new id"
            + (" while keeping its offsets (sinks keyed by query id will rewrite batches)" if has_batches else ""),
            f"Before restarting, {restore}.",
            path=str(problem.path),
            kind=problem.kind,
            query_ids_in_sink=recorded,
        )
    ]


def check_log_files(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    restart_reads = set()
    if ckpt.latest_planned is not None:
        restart_reads |= {
            ckpt.offsets_listing.get(ckpt.latest_planned),
            ckpt.offsets_listing.get(ckpt.latest_planned - 1),
        }
    if ckpt.latest_committed is not None:
        restart_reads.add(ckpt.commits_listing.get(ckpt.latest_committed))
    read_paths = {f.path for f in restart_reads if f is not None}
    problems = list(ckpt.problems)
    for info in ckpt.source_logs:
        if info.kind == "file_source":
            file_log = ckpt.file_source_log(info.source_id)
            problems.extend(file_log.problems)
    findings = []
    for problem in problems:
        if problem.kind == "unknown_version":
            findings.append(
                ctx.finding(
                    "unknown_log_version",
                    "warning",
                    problem.detail if str(problem.path) in problem.detail else f"`{problem.path}`: {problem.detail}",
                    "Use streamops tools that support this Spark version; the checkpoint itself is fine for Spark.",
                    path=str(problem.path),
                )
            )
        elif problem.kind in RESTART_BREAKING_PROBLEMS or problem.kind == "missing":
            # a restart reads the newest offsets/commit files and the whole file-source log
            breaks = problem.path in read_paths or problem.path.parent.parent.name == "sources"
            findings.append(
                ctx.finding(
                    "corrupt_log_file",
                    "error" if breaks else "warning",
                    f"{problem.detail}" + ("; a restart reads this file and will fail" if breaks else ""),
                    _corrupt_fix(ctx, problem.path),
                    path=str(problem.path),
                    kind=problem.kind,
                )
            )
    findings.extend(_fewer_sources_than_before(ctx))
    return findings


def _corrupt_fix(ctx: DoctorContext, path) -> str:
    ckpt = ctx.checkpoint
    name = path.parent.name
    if name in ("offsets", "commits") and path.name.isdigit():
        batch = int(path.name)
        if name == "offsets" and batch == ckpt.latest_planned:
            return (
                f"Restore the file from a backup, or rewind so batch {batch} is planned again: "
                f"`streamops checkpoint rewind {ckpt.path} --to-batch {batch} --yes`."
            )
        if name == "commits" and batch == ckpt.latest_committed:
            return (
                f"Restore the file from a backup, or rewind to batch {batch} "
                f"(`streamops checkpoint rewind {ckpt.path} --to-batch {batch} --yes`); an idempotent "
                "sink skips the replay if the batch already reached it."
            )
        return "Restore the file from a backup; Spark only reads it when rewinding past it."
    return "Restore the file from a backup of the checkpoint, or start the stream on a new checkpoint."


def _fewer_sources_than_before(ctx: DoctorContext) -> list[Finding]:
    """A file cut at a line boundary parses, but lists fewer sources than the batch before it.

    Only for offset log v1, where a source is a line position; v2 keys each line by source, and
    with source evolution a query may drop a source between batches."""
    ckpt = ctx.checkpoint
    latest = ckpt.latest_planned
    if latest is None or latest not in ckpt.offsets or latest - 1 not in ckpt.offsets:
        return []
    now, before = ckpt.offsets[latest], ckpt.offsets[latest - 1]
    if KEYED_OFFSET_LOG_VERSION in (now.log_version, before.log_version) or len(now.sources) >= len(before.sources):
        return []
    return [
        ctx.finding(
            "corrupt_log_file",
            "error",
            f"`{now.file.path}` lists {len(now.sources)} source offset(s), batch {latest - 1} listed "
            f"{len(before.sources)}: the file is truncated",
            _corrupt_fix(ctx, now.file.path),
            path=str(now.file.path),
            kind="truncated",
        )
    ]


def check_temp_files(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    temps = [*ckpt.offsets_listing.temp_files, *ckpt.commits_listing.temp_files]
    for info in ckpt.source_logs:
        temps.extend(info.listing.temp_files)
    if not temps:
        return []
    return [
        ctx.finding(
            "stale_temp_file",
            "info",
            f"{len(temps)} temporary file(s) left by a writer that stopped mid-write",
            "Harmless to Spark; delete them once no query is running on this checkpoint.",
            paths=[str(p) for p in temps],
        )
    ]


def check_batch_gaps(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    offsets = ckpt.offsets_listing.batch_ids
    commits = ckpt.commits_listing.batch_ids
    findings = []
    missing_offsets = _gaps(offsets)
    if missing_offsets:
        latest = offsets[-1]
        fatal = latest - 1 in missing_offsets
        findings.append(
            ctx.finding(
                "batch_gap",
                "error" if fatal else "warning",
                f"offsets/ lacks batch(es) {id_ranges(missing_offsets)}"
                + (f"; a restart needs offsets/{latest - 1} as the start of batch {latest}" if fatal else ""),
                "Restore the missing files from a backup of the checkpoint"
                + (f", or rewind to batch {latest - 1} to plan it again" if fatal else "")
                + ".",
                missing_offsets=missing_offsets,
            )
        )
    ahead = [c for c in commits if not offsets or c > offsets[-1]]
    missing_commits = [c for c in _gaps(commits) if c in set(offsets)]
    if ahead:
        findings.append(
            ctx.finding(
                "batch_gap",
                "error",
                f"commits/ holds batch(es) {id_ranges(ahead)} that offsets/ never planned",
                "The offsets were deleted or the commits copied from another checkpoint: restore the "
                "checkpoint from one consistent backup.",
                commits_without_offsets=ahead,
            )
        )
    if missing_commits:
        findings.append(
            ctx.finding(
                "batch_gap",
                "warning",
                f"commits/ lacks batch(es) {id_ranges(missing_commits)} although later batches committed",
                "Spark does not read old commits, so the stream runs; restore the files from a backup "
                "if you need the history.",
                missing_commits=missing_commits,
            )
        )
    return findings


def check_uncommitted(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    batch_id = ckpt.uncommitted_batch
    if batch_id is None:
        return []
    batch = ckpt.batch(batch_id)
    planned_ms = batch.batch_timestamp_ms if batch else None
    age = None if planned_ms is None else max(0.0, ctx.now - planned_ms / 1000.0)
    running = age is not None and age < ctx.settings.stall_seconds
    evidence: dict = {"batch_id": batch_id, "planned_ms": planned_ms, "age_seconds": age}
    if batch is not None:
        evidence["end_offsets"] = [o.to_json() for o in batch.end]
    replay = _replay_scope(ctx, batch_id)
    evidence.update(replay)
    in_sink = txn_holds_batch(ctx.stream_txn, batch_id)
    evidence["sink_already_has_batch"] = in_sink if ctx.sinks else None
    what = f"batch {batch_id} was planned but not committed"
    if replay.get("versions"):
        what += f" (source versions {id_ranges(replay['versions'])}, {replay['files']} file(s))"
    return [
        ctx.finding(
            "uncommitted_batch",
            "info" if running else "warning",
            what + (f"; planned {age:.0f}s ago, probably still running" if running else "; a restart replays it"),
            "Nothing to do while the query runs. Otherwise restart it: batch "
            f"{batch_id} runs again with the same offsets"
            + ("; the sink already holds it, so the idempotent writer skips it." if in_sink else "."),
            **evidence,
        )
    ]


def _replay_scope(ctx: DoctorContext, batch_id: int) -> dict:
    """Which source versions and files the batch will read again (Delta sources only)."""
    batch = ctx.checkpoint.batch(batch_id)
    slot = ctx.delta_slot
    if batch is None or slot is None or not ctx.source_usable or slot >= len(batch.end):
        return {}
    end = batch.end[slot].delta
    start = batch.start[slot].delta if batch.start and slot < len(batch.start) else None
    if end is None:
        return {}
    try:
        files = ctx.source.files_between(start, end)  # type: ignore[union-attr]
    except StreamopsError as error:
        return {"replay_scope_unknown": str(error)}
    return {
        "versions": sorted({f.version for f in files}),
        "files": len(files),
        "bytes": sum(f.file.size for f in files),
    }


def check_conf_changes(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    changes = ckpt.conf_changes()
    latest = ckpt.offsets.get(ckpt.latest_planned) if ckpt.latest_planned is not None else None
    recorded = latest.metadata.conf.get(SHUFFLE_PARTITIONS) if latest and latest.metadata else None
    on_disk = ckpt.state.partitions
    if ckpt.state.present and recorded and recorded.isdigit() and on_disk and int(recorded) != on_disk:
        changes.append(
            {
                "batch_id": ckpt.latest_planned,
                "key": SHUFFLE_PARTITIONS,
                "before": str(on_disk),
                "after": recorded,
                "source": "state store partitions on disk",
            }
        )
    if not changes:
        return []
    breaking = [c for c in changes if ckpt.state.present and c["key"] in STATE_CONFS]
    return [
        ctx.finding(
            "conf_changed",
            "error" if breaking else "warning",
            f"{len(changes)} conf value(s) recorded in the offset log changed between batches"
            + (
                f", {len(breaking)} of them used to read the state store: a restart cannot restore state"
                if breaking
                else "; Spark never changes these itself, so the offset log was edited"
            ),
            "Put the values back as the earliest batch recorded them (edit the newest offsets file and "
            "delete its .crc sidecar, which no longer matches), or start the query on a new checkpoint.",
            changes=changes,
        )
    ]


def check_concurrent_writers(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    evidence = []
    ids = sorted(ckpt.offsets)
    for batch_id in ids:
        offsets, commit = ckpt.offsets[batch_id], ckpt.commits.get(batch_id)
        if offsets.metadata and commit and offsets.metadata.batch_timestamp_ms > commit.file.mtime_ms + CLOCK_SLACK_MS:
            evidence.append(
                {
                    "batch_id": batch_id,
                    "kind": "planned_after_commit",
                    "detail": f"offsets/{batch_id} was planned at {offsets.metadata.batch_timestamp_ms}, "
                    f"after commits/{batch_id} was written at {commit.file.mtime_ms}",
                }
            )
    for before, after in pairwise(ids):
        if after != before + 1:
            continue
        first, second = ckpt.offsets[before], ckpt.offsets[after]
        if (
            first.metadata
            and second.metadata
            and second.metadata.batch_timestamp_ms < first.metadata.batch_timestamp_ms
        ):
            evidence.append(
                {
                    "batch_id": after,
                    "kind": "timestamp_backwards",
                    "detail": f"batch {after} planned at {second.metadata.batch_timestamp_ms}, "
                    f"before batch {before} ({first.metadata.batch_timestamp_ms})",
                }
            )
        for slot, (old, new) in enumerate(zip(first.sources, second.sources)):
            old_pos, new_pos = offset_position(old), offset_position(new)
            regressed = old_pos is not None and new_pos is not None and new_pos < old_pos
            kafka = kafka_regressions(old, new)
            if regressed or kafka:
                evidence.append(
                    {
                        "batch_id": after,
                        "kind": "offset_backwards",
                        "source": slot,
                        "detail": f"source {slot} ends at {new.raw} in batch {after}, "
                        f"before where batch {before} ended ({old.raw})",
                        **({"partitions": {k: list(v) for k, v in kafka.items()}} if kafka else {}),
                    }
                )
    if not evidence:
        return []
    return [
        ctx.finding(
            "concurrent_writers",
            "error",
            f"{len(evidence)} sign(s) that two runs wrote this checkpoint (first at batch {evidence[0]['batch_id']})",
            "Stop every run of this query but one (look for a second job or cluster using "
            f"`{ckpt.path}`), then have the batches from the first sign on planned again: "
            f"`streamops checkpoint rewind {ckpt.path} --to-batch {evidence[0]['batch_id']}`.",
            signs=evidence,
        )
    ]


def check_file_source_log(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    latest = ckpt.latest_planned
    if latest is None or latest not in ckpt.offsets:
        return []
    findings = []
    sources = ckpt.offsets[latest].sources
    for info in ckpt.source_logs:
        if info.kind != "file_source" or not info.source_id.isdigit():
            continue
        slot = int(info.source_id)
        if slot >= len(sources) or sources[slot].kind != "file":
            continue
        wanted = sources[slot].file_log_offset
        have = info.listing.latest.batch_id if info.listing.latest else -1
        if wanted is not None and have < wanted:
            findings.append(
                ctx.finding(
                    "file_source_log_behind",
                    "error",
                    f"offsets/{latest} says source {slot} read through file-log batch {wanted}, "
                    f"but sources/{slot} ends at {have}: restart cannot tell which files it took",
                    "Restore sources/ from the same backup as offsets/, or rewind to the batch whose "
                    f"logOffset is <= {have}.",
                    source=slot,
                    log_offset=wanted,
                    log_latest=have,
                )
            )
    return findings


CHECKPOINT_CHECKS = (
    check_metadata,
    check_log_files,
    check_temp_files,
    check_batch_gaps,
    check_uncommitted,
    check_conf_changes,
    check_concurrent_writers,
    check_file_source_log,
)


def _gaps(ids: tuple[int, ...]) -> list[int]:
    present = set(ids)
    return [i for i in range(ids[0], ids[-1] + 1) if i not in present] if ids else []


def id_ranges(ids: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    spans: list[list[int]] = []
    for value in sorted(ids):
        if spans and spans[-1][1] == value - 1:
            spans[-1][1] = value
        else:
            spans.append([value, value])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
