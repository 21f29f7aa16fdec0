"""What one batch of a table's changes does to its current state, its deleted keys and its
history: the reference semantics, as pure functions over rows (dicts).

The embedded connector applies a batch with these functions on the driver; the native one
computes the same in Spark (pipeline/cdc/merge_native.py), and tests hold both to the same
tables. Each function returns the source rows of one Delta MERGE (pipeline/cdc/cdc_tables.py
says how they match), and each MERGE compares sequences again: a batch applied twice changes
nothing.

- **Current state** (SCD type 1): the batch is reduced to the last change per key by sequence
  (ties: the later arrival); an upsert (c, r, u) replaces the row when it is newer than the
  row, a delete removes an older row. An upsert no newer than its key's last delete (the key's
  marker among the deleted keys) is dropped, so a late update cannot bring a deleted row back;
  every change no newer than the table's last truncate is dropped; a truncate deletes every row
  older than it.
- **Deleted keys**: a delete leaves a marker (key, sequence), a newer upsert of the key removes
  it, a truncate is a marker of the whole table (key ""). Markers whose delete is older than
  the retention, in source time, are dropped.
- **History** (SCD type 2): every change newer than what the current state holds for its key
  (its row, its marker, the last truncate) is a boundary: an upsert opens a version
  (`__valid_from` = its sequence), the key's next change or a truncate closes it (`__valid_to`);
  a delete only closes. The version open before the batch is closed at the first boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from streamops.pipeline.cdc.debezium_envelope import TRUNCATE_KEY, UPSERT_OPS

OP = "_cdc_op"
SEQUENCE = "_cdc_sequence"
KEY = "_cdc_key"
ORDER = "_cdc_order"
"""Arrival order in the batch: breaks ties between changes of one key at one position."""
EVENT_TIME = "_event_time"
VALID_FROM = "__valid_from"
VALID_TO = "__valid_to"
VALID_FROM_TIME = "__valid_from_time"
VALID_TO_TIME = "__valid_to_time"
ACTION = "_cdc_action"
"""History source rows: `insert` a version, or `close` the version open before the batch."""
MATCH_FROM = "_cdc_match_from"
"""History source rows: the `__valid_from` of the version a row matches (its own for an insert,
the open version's for a close)."""
DELETE_OPS = frozenset({"d", "t"})

Row = dict[str, Any]
Boundary = tuple[str, Any]
"""A sequence and its source time."""


@dataclass(frozen=True)
class BatchSummary:
    """What a table's batch holds, known before it is decided: its row changes (truncates left
    out), its deletes, its truncates (sequence, source time) in order and its newest source time.
    The CDC stream counts them in the job that routes the batch, so the native apply spends no
    job of its own on them."""

    row_changes: int
    deletes: int
    truncates: tuple[Boundary, ...]
    newest_time: Any


@dataclass(frozen=True)
class TableBatch:
    """A batch of one table, decided. `current`: the MERGE source of the table (the last change
    per key that may apply); `truncate`: the batch's newest truncate, which deletes older rows;
    `markers`: the deleted keys' MERGE source (d/t rows record, upsert rows remove);
    `history`: the history's MERGE source (insert and close rows); `closes_all`: the truncate
    that closes every version still open, when the batch has one newer than the table's last."""

    current: list[Row]
    truncate: Boundary | None
    markers: list[Row]
    history: list[Row]
    closes_all: Boundary | None


def decide(
    changes: Sequence[Row],
    deleted: Mapping[str, str],
    truncated: str | None,
    held: Mapping[str, str] | None = None,
) -> TableBatch:
    """One table's batch against its deleted keys (`deleted`: key -> sequence of its marker),
    its last truncate's sequence and, when history is kept, the sequence of the current row of
    each key the batch touches (`held`)."""
    truncates = sorted((c[SEQUENCE], c[EVENT_TIME]) for c in changes if c[OP] == "t")
    truncate = truncates[-1] if truncates else None
    floor = max((s for s in (truncated, truncate[0] if truncate else None) if s is not None), default=None)
    current = [
        c
        for c in last_per_key(changes)
        if (floor is None or c[SEQUENCE] > floor) and (c[OP] == "d" or deleted.get(c[KEY], "") < c[SEQUENCE])
    ]
    markers = [c for c in current if c[OP] == "d" and deleted.get(c[KEY], "") < c[SEQUENCE]]
    markers += [c for c in current if c[OP] in UPSERT_OPS and c[KEY] in deleted]
    newer = [t for t in truncates if truncated is None or t[0] > truncated]
    if newer:
        markers.append({KEY: TRUNCATE_KEY, SEQUENCE: newer[-1][0], OP: "t", EVENT_TIME: newer[-1][1]})
    rows = [] if held is None else history(changes, deleted, truncated, held)
    return TableBatch(current, truncate, markers, rows, newer[0] if newer else None)


def last_per_key(changes: Iterable[Row]) -> list[Row]:
    """The newest row change of each key (truncates left out), in key order."""
    last: dict[str, Row] = {}
    for change in changes:
        if change[OP] == "t":
            continue
        held = last.get(change[KEY])
        if held is None or (change[SEQUENCE], change[ORDER]) > (held[SEQUENCE], held[ORDER]):
            last[change[KEY]] = change
    return [last[key] for key in sorted(last)]


def history(
    changes: Sequence[Row], deleted: Mapping[str, str], truncated: str | None, held: Mapping[str, str]
) -> list[Row]:
    """The history's MERGE source: a version row per fresh upsert and, for a key whose current
    row has an open version, the row closing it."""
    truncates = sorted((c[SEQUENCE], c[EVENT_TIME]) for c in changes if c[OP] == "t")
    by_key: dict[str, list[Row]] = {}
    for change in changes:
        if change[OP] != "t":
            by_key.setdefault(change[KEY], []).append(change)
    rows: list[Row] = []
    for key in sorted(by_key):
        state = max(held.get(key, ""), deleted.get(key, ""), truncated or "")
        fresh = sorted((c for c in by_key[key] if c[SEQUENCE] > state), key=lambda c: (c[SEQUENCE], c[ORDER]))
        if not fresh:
            continue
        if key in held:
            end = _first_between(truncates, held[key], fresh[0][SEQUENCE]) or (fresh[0][SEQUENCE], fresh[0][EVENT_TIME])
            rows.append(_history_row(fresh[0], "close", held[key], None, end))
        for index, change in enumerate(fresh):
            if change[OP] not in UPSERT_OPS:
                continue
            following = fresh[index + 1] if index + 1 < len(fresh) else None
            end = _first_between(truncates, change[SEQUENCE], following[SEQUENCE] if following else None)
            if end is None and following is not None:
                end = (following[SEQUENCE], following[EVENT_TIME])
            rows.append(_history_row(change, "insert", change[SEQUENCE], (change[SEQUENCE], change[EVENT_TIME]), end))
    return rows


def _history_row(change: Row, action: str, match_from: str, start: Boundary | None, end: Boundary | None) -> Row:
    return {
        **change,
        ACTION: action,
        MATCH_FROM: match_from,
        VALID_FROM: start[0] if start else None,
        VALID_FROM_TIME: start[1] if start else None,
        VALID_TO: end[0] if end else None,
        VALID_TO_TIME: end[1] if end else None,
    }


def _first_between(truncates: list[Boundary], after: str, before: str | None) -> Boundary | None:
    for truncate in truncates:
        if truncate[0] > after and (before is None or truncate[0] < before):
            return truncate
    return None


def marker_cutoff(changes: Iterable[Row], retention_seconds: float) -> Any:
    """Markers of deletes older than this (source time) are dropped: the batch's newest change
    minus the retention, so a replay of the batch drops the same ones."""
    times = [c[EVENT_TIME] for c in changes if c[EVENT_TIME] is not None]
    if not times:
        return None
    return max(times) - timedelta(seconds=retention_seconds)
