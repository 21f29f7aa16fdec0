"""Which data-quality rules fail on which table, and since when, from `_system/expectations`.

Read with delta-rs by column name (the pipeline writes the table; the monitor only knows its
columns), no Spark, so `streamops status` and the console show it with the pipeline stopped. Only
the rows committed within `LOOKBACK` are read (the filter skips older files by their
statistics): the table gains a row per table, rule and batch, far more than a status needs. A
rule is failing while it failed rows in any of its table's last `RECENT_BATCHES` batches; its
failure started at the first failing batch after the last stretch of `RECENT_BATCHES` batches it
passed whole, so a rule that fails every other batch reads as one failure, not many. Failing
rules are a section of their own, never a stream status: a `warn` rule keeps every row and the
stream is healthy; a `fail` rule stops its group, and that stream is `failed` already.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from streamops.core.delta_format.read import is_table, read_delta
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.monitor.fleet_status import iso_utc

RECENT_BATCHES = 10
"""Batches of a table, newest first, that say whether a rule fails now."""
LOOKBACK = timedelta(days=1)
"""How far back the counts are read; a failure that began earlier reads as beginning then."""
COLUMNS = ["stream", "batch_id", "table", "expectation", "action", "passed", "failed", "committed_at"]


@dataclass(frozen=True)
class RuleStatus:
    """One rule on one table: its counts over the table's recent batches and over every batch.

    `recent_batches` is how many of the table's batches the recent counts cover (fewer than
    RECENT_BATCHES for a young table); `failing_batches` how many of those had failing rows.
    `failing_since` is when the current failure began (None while the rule passes)."""

    table: str
    stream: str
    expectation: str
    action: str
    recent_batches: int
    failing_batches: int
    passed: int
    failed: int
    total_passed: int
    total_failed: int
    last_batch_id: int
    last_committed_at: float
    failing_since: float | None
    failing_since_batch_id: int | None

    @property
    def failing(self) -> bool:
        return self.failing_since is not None

    def to_json(self) -> dict[str, Any]:
        """The stable JSON form (`streamops status --json`'s `expectations`)."""
        return {
            "table": self.table,
            "stream": self.stream,
            "expectation": self.expectation,
            "action": self.action,
            "recent_batches": self.recent_batches,
            "failing_batches": self.failing_batches,
            "passed": self.passed,
            "failed": self.failed,
            "total_passed": self.total_passed,
            "total_failed": self.total_failed,
            "last_batch_id": self.last_batch_id,
            "last_committed_at": iso_utc(self.last_committed_at),
            "failing_since": iso_utc(self.failing_since),
            "failing_since_batch_id": self.failing_since_batch_id,
        }


def rule_statuses(
    lake: LakeLike, now: float | None = None, recent_batches: int = RECENT_BATCHES, lookback: timedelta = LOOKBACK
) -> list[RuleStatus]:
    """Every rule of every table with a batch in `_system/expectations` within `lookback` of
    `now`, failing ones first, then by table and rule; empty when the table does not exist (no
    run had rules)."""
    location = LakeLayout.at(lake).expectations
    if not is_table(location):
        return []
    since = datetime.fromtimestamp(time.time() if now is None else now, tz=timezone.utc) - lookback
    frame = read_delta(location, columns=COLUMNS, filters=[("committed_at", ">=", since)]).to_pandas()
    statuses = [
        status
        for table, rows in frame.groupby("table", sort=True)
        for status in _table_rules(str(table), rows, recent_batches)
    ]
    return sorted(statuses, key=lambda s: (not s.failing, s.table, s.expectation))


def failing_rules(lake: LakeLike, now: float | None = None, recent_batches: int = RECENT_BATCHES) -> list[RuleStatus]:
    """The rules failing now, by table and rule."""
    return [status for status in rule_statuses(lake, now, recent_batches) if status.failing]


def _table_rules(table: str, rows: pd.DataFrame, window: int) -> list[RuleStatus]:
    """A table's batches are numbered in commit order; each rule is judged on those numbers, so a
    batch that held no row of the rule's columns still counts as a batch it passed."""
    batches = rows.groupby(["stream", "batch_id"])["committed_at"].max().sort_values(kind="stable")
    number = {key: n for n, key in enumerate(batches.index)}
    rows = rows.assign(n=[number[key] for key in zip(rows["stream"], rows["batch_id"])])
    newest = len(batches) - 1
    statuses = []
    for expectation, mine in rows.sort_values("n", kind="stable").groupby("expectation", sort=True):
        recent = mine[mine["n"] > newest - window]
        failing = mine[mine["failed"] > 0]
        start = _failure_start(list(failing["n"]), newest, window)
        first = failing[failing["n"] == start].iloc[0] if start is not None else None
        last = mine.iloc[-1]
        statuses.append(
            RuleStatus(
                table=table,
                stream=str(last["stream"]),
                expectation=str(expectation),
                action=str(last["action"]),
                recent_batches=min(window, len(batches)),
                failing_batches=int((recent["failed"] > 0).sum()),
                passed=int(recent["passed"].sum()),
                failed=int(recent["failed"].sum()),
                total_passed=int(mine["passed"].sum()),
                total_failed=int(mine["failed"].sum()),
                last_batch_id=int(last["batch_id"]),
                last_committed_at=_epoch(last["committed_at"]),
                failing_since=None if first is None else _epoch(first["committed_at"]),
                failing_since_batch_id=None if first is None else int(first["batch_id"]),
            )
        )
    return statuses


def _failure_start(failing: list[int], newest: int, window: int) -> int | None:
    """The number of the batch the current failure began with: walking back from the newest
    failing batch while fewer than `window` passing batches separate two failing ones. None when
    the newest failing batch is older than the table's last `window` batches."""
    if not failing or failing[-1] <= newest - window:
        return None
    start = failing[-1]
    for earlier in reversed(failing[:-1]):
        if start - earlier - 1 >= window:
            break
        start = earlier
    return start


def _epoch(value: Any) -> float:
    return pd.Timestamp(value).timestamp()
