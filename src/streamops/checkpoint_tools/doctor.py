"""Diagnose checkpoints: run every check and collect findings with severity, evidence and fix.

    diagnose(DoctorTarget(checkpoint, source_table=..., sink_tables=(...)))   one checkpoint
    diagnose_lake(LakeLayout.at(root))                                       every stream of a lake

The doctor reads only what a restart would read (the newest batches, the source log from the
stream's position on, the tail of each sink log), so a pass over hundreds of checkpoints whose
tables have thousands of commits takes seconds. A check that cannot run becomes a
`check_failed` finding; the doctor itself never stops at one broken checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from deltalake.exceptions import DeltaError

from streamops.checkpoint_tools.checkpoint_checks import CHECKPOINT_CHECKS
from streamops.checkpoint_tools.correlation import resolve_tables
from streamops.checkpoint_tools.delta_checks import DELTA_CHECKS
from streamops.checkpoint_tools.doctor_context import DoctorContext, DoctorSettings
from streamops.checkpoint_tools.findings import SEVERITY_RANK, Finding, exit_code, worst
from streamops.checkpoint_tools.kafka_checks import KAFKA_CHECKS
from streamops.checkpoint_tools.sink_commits import StreamIdentity
from streamops.checkpoint_tools.sink_index import SinkTableIndex
from streamops.checkpoint_tools.skipped_checks import SkippedCheck, skipped_checks
from streamops.checkpoint_tools.state_checks import STATE_CHECKS
from streamops.core.checkpoint_format.delta_positions import reservoir_id
from streamops.core.checkpoint_format.reader import (
    Checkpoint,
    read_checkpoint,
    read_query_id,
)
from streamops.core.delta_format.log import DeltaLog
from streamops.core.exceptions import CheckpointNotFoundError, StreamopsError
from streamops.core.lake_layout import LakeLayout, LakeLike, LakeNotFoundError
from streamops.core.storage.errors import StorageError
from streamops.core.storage.location import Location, LocationLike

Check = Callable[[DoctorContext], list[Finding]]
CHECKS: tuple[Check, ...] = (*CHECKPOINT_CHECKS, *STATE_CHECKS, *DELTA_CHECKS, *KAFKA_CHECKS)
DEFAULT_WORKERS = min(4, os.cpu_count() or 1)
OBJECT_STORE_WORKERS = 16
"""On an object store the doctor waits on requests, not on the CPU: more in flight at once."""


@dataclass(frozen=True)
class DoctorTarget:
    """One checkpoint and the tables it reads and writes (`stream` defaults to its dir name)."""

    checkpoint: Location
    source_table: Location | None = None
    sink_tables: tuple[Location, ...] = ()
    stream: str | None = None


@dataclass(frozen=True)
class Diagnosis:
    stream: str
    checkpoint: Location
    query_id: str | None
    latest_planned: int | None
    latest_committed: int | None
    source_table: Location | None
    sink_tables: tuple[Location, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[SkippedCheck, ...] = ()

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    @property
    def worst(self) -> str | None:
        return worst(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "checkpoint": str(self.checkpoint),
            "query_id": self.query_id,
            "latest_planned": self.latest_planned,
            "latest_committed": self.latest_committed,
            "source_table": str(self.source_table) if self.source_table else None,
            "sink_tables": [str(t) for t in self.sink_tables],
            "worst": self.worst,
            "findings": [f.to_json() for f in self.findings],
            "skipped": [s.to_json() for s in self.skipped],
        }


def diagnose(
    target: DoctorTarget,
    settings: DoctorSettings | None = None,
    sink_logs: dict[Location, DeltaLog] | None = None,
    checks: Sequence[Check] = CHECKS,
) -> Diagnosis:
    """Run `checks` on one checkpoint. `sink_logs` lets a caller reuse already loaded sink logs."""
    settings = settings or DoctorSettings()
    ckpt = read_checkpoint(target.checkpoint, last_batches=settings.recent_batches)
    stream = target.stream or ckpt.stream
    sinks = {t: (sink_logs or {}).get(t) or DeltaLog(t) for t in target.sink_tables}
    ctx = DoctorContext(ckpt, stream, target.source_table, sinks, settings)
    findings: list[Finding] = []
    for check in checks:
        findings.extend(_run(check, ctx))
    findings.sort(key=lambda f: -SEVERITY_RANK[f.severity])
    return _diagnosis(ckpt, stream, target, findings, skipped_checks(ctx))


def diagnose_many(
    targets: Iterable[DoctorTarget],
    settings: DoctorSettings | None = None,
    sink_logs: dict[Location, DeltaLog] | None = None,
    workers: int | None = None,
) -> list[Diagnosis]:
    """Diagnose each target, in order; a path that holds no checkpoint is reported, not raised.

    Targets are independent and most of the time goes to delta-rs loading logs (which releases
    the GIL), so a few threads cut the wall time of a large fleet roughly by the core count; on
    an object store, where the time is spent waiting for requests, more threads keep more
    requests in flight.
    """
    targets = list(targets)
    if workers is None:
        workers = workers_for(target.checkpoint for target in targets)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda target: _diagnose_or_report(target, settings, sink_logs), targets))


def workers_for(locations: Iterable[LocationLike]) -> int:
    """Threads for independent reads of these locations: more when one is on an object store."""
    remote = any(not Location.of(location).is_local for location in locations)
    return OBJECT_STORE_WORKERS if remote else DEFAULT_WORKERS


def _diagnose_or_report(
    target: DoctorTarget, settings: DoctorSettings | None, sink_logs: dict[Location, DeltaLog] | None
) -> Diagnosis:
    try:
        return diagnose(target, settings, sink_logs)
    except CheckpointNotFoundError as error:
        return _not_a_checkpoint(target, error)


def checkpoint_targets(
    checkpoints: Sequence[LocationLike],
    source_table: LocationLike | None = None,
    sink_tables: Sequence[LocationLike] = (),
    lake: LakeLike | None = None,
    stream: str | None = None,
    index: SinkTableIndex | None = None,
) -> list[DoctorTarget]:
    """Targets for checkpoints; tables not given come from the lake (layout, then txn owners)."""
    lake = None if lake is None else LakeLayout.at(lake)
    if lake is not None and index is None:
        index = SinkTableIndex(lake)
    targets = []
    for checkpoint in map(Location.of, checkpoints):
        identity = StreamIdentity(stream or checkpoint.name, read_query_id(checkpoint))
        reads_from = None
        if source_table is None and lake is not None and not lake.is_pipeline_stream(identity.stream):
            reads_from = _newest_reservoir_id(checkpoint)
        source, sinks = resolve_tables(identity, source_table, sink_tables, lake, index, reads_from)
        targets.append(DoctorTarget(checkpoint, source, tuple(sinks), identity.stream))
    return targets


def _newest_reservoir_id(checkpoint: Location) -> str | None:
    """Which Delta table a user stream of the lake reads (its newest offsets); None when it reads
    none or cannot be read (the diagnosis reports why)."""
    try:
        return reservoir_id(read_checkpoint(checkpoint, last_batches=1))
    except StreamopsError:
        return None


def diagnose_lake(
    lake: LakeLike,
    settings: DoctorSettings | None = None,
    index: SinkTableIndex | None = None,
) -> list[Diagnosis]:
    """Diagnose every stream of a lake. Keep `index` between calls to reuse its table cache.

    A lake that does not exist or has no checkpoint is an error, not a healthy empty fleet."""
    lake = LakeLayout.at(lake)
    checkpoints = lake.require().checkpoint_dirs()
    if not checkpoints:
        raise LakeNotFoundError(
            f"the lake `{lake.root}` has no checkpoints under `{lake.checkpoints_root}`: "
            "check --lake, or name checkpoint directories instead"
        )
    index = (index or SinkTableIndex(lake)).refresh()
    logs = {t: index.log(t) for t in lake.table_dirs()}
    targets = checkpoint_targets(checkpoints, lake=lake, index=index)
    return diagnose_many(targets, settings, logs)


def _run(check: Check, ctx: DoctorContext) -> list[Finding]:
    try:
        return check(ctx)
    except StorageError:
        raise  # the store itself refused (credentials, access, network): one line for the whole run
    except (StreamopsError, DeltaError, OSError) as error:
        return [
            ctx.finding(
                "check_failed",
                "warning",
                f"{check.__name__} could not run: {error}",
                "Fix what the message names (a path, a permission, a table) and run the doctor again.",
                check=check.__name__,
            )
        ]


def _not_a_checkpoint(target: DoctorTarget, error: CheckpointNotFoundError) -> Diagnosis:
    exists = target.checkpoint.is_dir()
    stream = target.stream or target.checkpoint.name
    finding = Finding(
        "missing_metadata",
        "warning" if exists else "error",
        stream,
        str(error),
        "An empty directory is a query that never started: start it, or remove the directory."
        if exists
        else "Check the path: it should be the directory passed as checkpointLocation.",
        {"path": str(target.checkpoint)},
    )
    return Diagnosis(
        stream=stream,
        checkpoint=target.checkpoint,
        query_id=None,
        latest_planned=None,
        latest_committed=None,
        source_table=target.source_table,
        sink_tables=target.sink_tables,
        findings=(finding,),
    )


def _diagnosis(
    ckpt: Checkpoint,
    stream: str,
    target: DoctorTarget,
    findings: list[Finding],
    skipped: tuple[SkippedCheck, ...],
) -> Diagnosis:
    return Diagnosis(
        stream=stream,
        checkpoint=ckpt.path,
        query_id=ckpt.query_id,
        latest_planned=ckpt.latest_planned,
        latest_committed=ckpt.latest_committed,
        source_table=target.source_table,
        sink_tables=target.sink_tables,
        findings=tuple(findings),
        skipped=skipped,
    )
