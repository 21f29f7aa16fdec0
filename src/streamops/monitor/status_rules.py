"""Stream status in the spirit of LinkedIn Burrow: judged over a sliding window of recent
batches, with no fixed lag threshold.

Pure functions over a `StreamObservation` (what the monitor knows about one stream) and `now`,
so the same rules run live in the exporter, offline in `streamops status`, and in unit tests on
recorded progress.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import pairwise

from streamops.core.delta_format.backlog import Backlog
from streamops.core.plain_text import human_seconds
from streamops.monitor.metric_catalog import StreamWarningCode
from streamops.monitor.status_severity import StreamStatus


@dataclass(frozen=True)
class StatusPolicy:
    """The knobs of the rules. Defaults suit trigger intervals from sub-second to minutes."""

    window: int = 10
    min_batches: int = 3
    stall_intervals: float = 3.0
    min_stall_seconds: float = 2.0
    default_interval_seconds: float = 10.0
    silent_after_seconds: float = 180.0
    log_delay_seconds: float = 15.0
    retention_warning_seconds: float = 24 * 3600.0

    def __post_init__(self) -> None:
        if self.window < 2 or not 2 <= self.min_batches <= self.window:
            raise ValueError("StatusPolicy needs window >= 2 and 2 <= min_batches <= window")


DEFAULT_POLICY = StatusPolicy()


@dataclass(frozen=True)
class ProgressSample:
    """One batch as the rules see it. `timestamp` is when the batch started (Spark's progress
    timestamp); `backlog`/`pending` were measured right after its progress event arrived.

    `files` are the files waiting in its sources, measured or reported by the source (None:
    unknown); `offsets` the records behind the latest offset (Kafka and the like).
    `source_rows` are the rows each source read. `watermark` is the batch's event-time
    watermark: None when the query has none, 0.0 while Spark has not set it. `state_rows` is the
    rows held by all stateful operators (None: not stateful), `state_rows_removed` the rows they
    evicted and `late_rows` the input rows they dropped as older than the watermark."""

    timestamp: float
    batch_id: int
    num_input_rows: int
    processed_rows_per_second: float
    duration_seconds: float
    backlog: Backlog | None = None
    pending: bool | None = None
    files: int | None = None
    offsets: int | None = None
    source_rows: tuple[int, ...] = ()
    watermark: float | None = None
    state_rows: int | None = None
    state_rows_removed: int = 0
    late_rows: int = 0

    @property
    def ended_at(self) -> float:
        return self.timestamp + self.duration_seconds


@dataclass(frozen=True)
class StreamObservation:
    """Everything the rules need about one stream.

    `active` is None when nobody asked the driver (offline, from the progress log).
    `pending` is True when data is waiting in a source (measured backlog, or a source reporting
    a latest offset beyond the one processed), None when the source cannot tell.
    `pending_since` is when the oldest waiting data arrived (or was first seen waiting).
    """

    active: bool | None
    exception: str | None = None
    started_at: float | None = None
    stopped_at: float | None = None
    last_event_at: float | None = None
    last_idle_at: float | None = None
    samples: tuple[ProgressSample, ...] = ()
    backlog: Backlog | None = None
    pending: bool | None = None
    pending_since: float | None = None


@dataclass(frozen=True)
class StreamWarning:
    """Something to watch in a stream that still runs (see `warnings_of`)."""

    code: StreamWarningCode
    message: str


@dataclass(frozen=True)
class StatusVerdict:
    """The status and its reason; `warnings` only for streams neither failed nor stopped."""

    status: StreamStatus
    reason: str
    warnings: tuple[StreamWarning, ...] = ()


def evaluate(
    observation: StreamObservation,
    now: float,
    policy: StatusPolicy = DEFAULT_POLICY,
    offline: bool = False,
) -> StatusVerdict:
    """The status of one stream; the first rule that matches wins."""
    obs = observation
    samples = obs.samples[-policy.window :]
    verdict = _status(obs, samples, now, policy, offline)
    if verdict.status in ("failed", "stopped"):
        return verdict
    return StatusVerdict(
        verdict.status, verdict.reason, warnings_of(samples, policy) + source_warnings(obs.backlog, policy)
    )


def _status(
    obs: StreamObservation,
    samples: tuple[ProgressSample, ...],
    now: float,
    policy: StatusPolicy,
    offline: bool,
) -> StatusVerdict:
    if obs.active is False or obs.stopped_at is not None:
        if obs.exception:
            return StatusVerdict("failed", obs.exception)
        when = f" at {_utc(obs.stopped_at)}" if obs.stopped_at else ""
        return StatusVerdict("stopped", f"stopped{when} without error")

    interval = typical_interval(samples, policy)
    stall_after = max(policy.stall_intervals * interval, policy.min_stall_seconds)
    if offline:
        stall_after += policy.log_delay_seconds
    if obs.pending:
        marks = [t for t in (_last_read_end(samples), obs.pending_since, obs.started_at) if t is not None]
        waiting_since = max(marks) if marks else None
        if waiting_since is not None and now - waiting_since > stall_after:
            return StatusVerdict(
                "stalled",
                f"{describe_backlog(obs.backlog)} waiting {now - waiting_since:.0f}s with no batch "
                f"reading it (stalled after {stall_after:.1f}s: "
                f"{policy.stall_intervals:g} x {interval:.1f}s typical batch interval)",
            )

    if offline and obs.last_event_at is not None:
        silent_for = now - obs.last_event_at
        if silent_for > policy.silent_after_seconds + policy.log_delay_seconds:
            return StatusVerdict(
                "stopped",
                f"no event for {silent_for:.0f}s since {_utc(obs.last_event_at)}: not running "
                "(its driver ended without recording a termination)",
            )

    lagging = backlog_growth(samples, policy) or processing_slower(samples, policy)
    if lagging:
        return StatusVerdict("lagging", lagging)

    if not obs.pending and _no_new_data(obs, samples):
        last_data = _last_read_end(samples)
        since = f" since {_utc(last_data)}" if last_data else ""
        return StatusVerdict("idle", f"no new data{since}, nothing waiting")

    if samples:
        last = samples[-1]
        return StatusVerdict(
            "ok",
            f"batch {last.batch_id} read {last.num_input_rows} rows "
            f"({last.processed_rows_per_second:.0f} rows/s processed)",
        )
    return StatusVerdict("ok", "started, no batch completed yet")


def typical_interval(samples: tuple[ProgressSample, ...], policy: StatusPolicy = DEFAULT_POLICY) -> float:
    """How often this stream normally completes a batch: the larger of the shortest gap between
    batch starts (the trigger interval, or back-to-back batches) and the longest batch."""
    gaps = [b.timestamp - a.timestamp for a, b in pairwise(samples) if b.timestamp > a.timestamp]
    durations = [s.duration_seconds for s in samples]
    interval = max(min(gaps) if gaps else 0.0, max(durations) if durations else 0.0)
    return interval if interval > 0 else policy.default_interval_seconds


def backlog_growth(samples: tuple[ProgressSample, ...], policy: StatusPolicy = DEFAULT_POLICY) -> str | None:
    """LAGGING rule 1: the backlog is never zero across the window, never shrinks from one batch
    to the next, and ends larger than it started. Counted in waiting files where every batch has
    them (measured, or reported by the source), else in records behind the latest offset."""
    files = [_waiting_files(s) for s in samples]
    offsets = [s.offsets for s in samples]
    for series, unit in ((files, "files"), (offsets, "records behind the latest offset")):
        if len(series) < policy.min_batches or any(n is None for n in series):
            continue
        known: list[int] = [n for n in series if n is not None]
        if all(n > 0 for n in known) and all(b >= a for a, b in pairwise(known)) and known[-1] > known[0]:
            return f"backlog grew from {known[0]} to {known[-1]} {unit} over the last {len(known)} batches"
        return None
    return None


def _waiting_files(sample: ProgressSample) -> int | None:
    if sample.files is not None:
        return sample.files
    return sample.backlog.files if sample.backlog is not None else None


def warnings_of(
    samples: tuple[ProgressSample, ...], policy: StatusPolicy = DEFAULT_POLICY
) -> tuple[StreamWarning, ...]:
    """The warnings over the window, in this order (each independent of the others)."""
    found = (
        state_unbounded(samples, policy),
        watermark_stalled(samples, policy),
        late_rows_dropped(samples),
    )
    return tuple(w for w in found if w is not None)


def source_warnings(backlog: Backlog | None, policy: StatusPolicy = DEFAULT_POLICY) -> tuple[StreamWarning, ...]:
    """The warnings about what waits in the stream's Delta sources (measured now)."""
    if backlog is None:
        return ()
    found = (source_retention_low(backlog, policy), source_change_commits(backlog))
    return tuple(w for w in found if w is not None)


def source_retention_low(backlog: Backlog, policy: StatusPolicy = DEFAULT_POLICY) -> StreamWarning | None:
    """WARNING `source_retention_low`: the oldest unread data of a Delta source was committed so
    long ago that, in less than `retention_warning_seconds` (or already), VACUUM may delete its
    files (its commit time + `delta.deletedFileRetentionDuration`) or log cleanup its commit
    (+ `delta.logRetentionDuration`): a restart after that fails."""
    headroom = backlog.retention
    if headroom is None or headroom.least >= policy.retention_warning_seconds:
        return None
    which = "VACUUM may delete its files" if headroom.files <= headroom.log else "log cleanup may drop its commit"
    when = "now" if headroom.least <= 0 else f"in {human_seconds(headroom.least)}"
    return StreamWarning(
        "source_retention_low",
        f"the oldest unread source data (version {backlog.oldest_pending_version}) is {which} {when}: catch "
        "the stream up, or raise the source table's retention (`streamops lake vacuum` keeps what streams need)",
    )


def source_change_commits(backlog: Backlog) -> StreamWarning | None:
    """WARNING `source_change_commits`: a Delta source has unread commits that are not appends
    (DELETE, UPDATE, MERGE, OVERWRITE, a schema change): with Delta's default options the stream
    fails when it reaches the first; skipChangeCommits skips them; ignoreChanges re-reads
    rewritten files (duplicates); a schema change stops it whatever the options."""
    changes = backlog.change_commits
    if not changes:
        return None
    named = ", ".join(c.describe() for c in changes[:5]) + (f" and {len(changes) - 5} more" if len(changes) > 5 else "")
    return StreamWarning(
        "source_change_commits",
        f"unread source commits that are not appends: {named}; by default the stream fails at the first "
        "(skipChangeCommits skips them, ignoreChanges re-reads rewritten files as duplicates)",
    )


def state_unbounded(samples: tuple[ProgressSample, ...], policy: StatusPolicy = DEFAULT_POLICY) -> StreamWarning | None:
    """WARNING `state_unbounded`: every batch of the window (at least `min_batches`) holds
    state, the rows held never shrink from one batch to the next and end higher than they
    started, and no operator evicted a single row: nothing bounds the state (a deduplication or
    aggregation without a watermark, or a watermark that does not advance). A stateful query
    looks the same until its first eviction, so this is a warning, not a status."""
    rows = [s.state_rows for s in samples]
    if len(rows) < policy.min_batches or any(r is None for r in rows):
        return None
    held: list[int] = [r for r in rows if r is not None]
    if sum(s.state_rows_removed for s in samples) or not all(b >= a for a, b in pairwise(held)):
        return None
    if held[-1] <= held[0]:
        return None
    return StreamWarning(
        "state_unbounded",
        f"state grew from {held[0]} to {held[-1]} rows over the last {len(held)} batches and "
        "no row was evicted: a stateful operator without a watermark, or a watermark that does "
        "not advance, keeps every key forever",
    )


def watermark_stalled(
    samples: tuple[ProgressSample, ...], policy: StatusPolicy = DEFAULT_POLICY
) -> StreamWarning | None:
    """WARNING `watermark_stalled`: the query has a watermark, and over the trailing batches of
    the window in which it did not move (or was never set), at least `min_batches` read rows
    and they span longer than a stall (`max(stall_intervals x typical interval,
    min_stall_seconds)`): windows never close and state is never evicted. Typical causes: one
    idle source of a join or union holding the global watermark (Spark's default
    `multipleWatermarkPolicy` is `min`), or input whose event times stopped advancing."""
    if not samples or any(s.watermark is None for s in samples):
        return None
    mark = samples[-1].watermark
    start = len(samples)
    while start > 0 and samples[start - 1].watermark == mark:
        start -= 1
    held = samples[start:]
    reading = [s for s in held if s.num_input_rows > 0]
    stall_after = max(policy.stall_intervals * typical_interval(samples, policy), policy.min_stall_seconds)
    if len(reading) < policy.min_batches or held[-1].ended_at - reading[0].timestamp <= stall_after:
        return None
    where = f"at {_utc(mark)}" if mark else "unset"
    return StreamWarning(
        "watermark_stalled",
        f"the watermark stayed {where} while {len(reading)} batches read rows over "
        f"{held[-1].ended_at - reading[0].timestamp:.0f}s: windows do not close and state is not "
        "evicted (an idle source of a join or union holds it back, or event times stopped advancing)",
    )


def late_rows_dropped(samples: tuple[ProgressSample, ...]) -> StreamWarning | None:
    """WARNING `late_rows_dropped`: a stateful operator dropped input rows older than the
    watermark in some batch of the window (Spark's `numRowsDroppedByWatermark`)."""
    late = sum(s.late_rows for s in samples)
    if not late:
        return None
    return StreamWarning(
        "late_rows_dropped",
        f"{late} late rows dropped by the watermark in the last {len(samples)} batches: their "
        "event time was behind the watermark (raise the watermark delay if they must count)",
    )


def processing_slower(samples: tuple[ProgressSample, ...], policy: StatusPolicy = DEFAULT_POLICY) -> str | None:
    """LAGGING rule 2: in every batch of the window that read data, the processing rate (rows /
    batch duration) was below the input rate (rows / time since the previous batch started).

    The input rate is computed from consecutive batches, not taken from Spark's
    inputRowsPerSecond, which divides by the time since the previous *trigger*: triggers that
    found no data reset it, so it reads thousands of rows/s for a stream that is falling behind.
    """
    pairs = [
        (b, rate) for a, b in pairwise(samples) if b.num_input_rows > 0 and (rate := arrival_rate(a, b)) is not None
    ]
    if len(pairs) < policy.min_batches:
        return None
    if all(_processed_rate(b) < arrival for b, arrival in pairs):
        b, arrival = pairs[-1]
        return (
            f"processed rate below input rate in each of the last {len(pairs)} batches "
            f"(last: {_processed_rate(b):.0f} < {arrival:.0f} rows/s)"
        )
    return None


def arrival_rate(previous: ProgressSample, current: ProgressSample) -> float | None:
    """Rows of `current` over the time since `previous` started: the input rate of a batch."""
    gap = current.timestamp - previous.timestamp
    return current.num_input_rows / gap if gap > 0 else None


def describe_backlog(backlog: Backlog | None) -> str:
    if backlog is None or backlog.is_empty:
        return "data"
    return (
        f"{backlog.files} files ({backlog.bytes} bytes, {backlog.versions} versions, oldest {backlog.seconds:.0f}s old)"
    )


def _processed_rate(sample: ProgressSample) -> float:
    if sample.processed_rows_per_second > 0:
        return sample.processed_rows_per_second
    if sample.duration_seconds > 0:
        return sample.num_input_rows / sample.duration_seconds
    return float("inf")


def _last_read_end(samples: tuple[ProgressSample, ...]) -> float | None:
    for sample in reversed(samples):
        if sample.num_input_rows > 0:
            return sample.ended_at
    return None


def _no_new_data(obs: StreamObservation, samples: tuple[ProgressSample, ...]) -> bool:
    if not samples:
        return obs.last_idle_at is not None
    last = samples[-1]
    return last.num_input_rows == 0 or (obs.last_idle_at is not None and obs.last_idle_at >= last.timestamp)


def _utc(epoch: float | None) -> str:
    if epoch is None:
        return "?"
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
