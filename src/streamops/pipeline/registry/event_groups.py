"""Which streaming query serves which event type: the `_system/event_groups` table.

A 2-core driver cannot keep 300 queries on schedule, so event types share queries ("groups").
Assignment is permanent (a type never moves, so its silver table has one writer) and follows
one documented heuristic: new types, taken in the order the registry first saw them (bronze
version, then name), join the least-loaded group (fewest event types) that has room; ties go to
the lowest group name; when every group is full a new group is opened.
`types_per_group = 1` reproduces the seed's one-query-per-event-type layout, with the group
named after the event type.

Because the registry commits before the bronze rows it describes, and the heuristic is a pure
function of (recorded assignments, registry order), a silver stream can resolve the group of
every row it reads even before the management stream has recorded it: rows of a new type that
arrive before its assignment is written are never skipped, and no backfill is ever needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping

import pyarrow as pa

from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.pipeline.lake_tables import table_access

EVENT_GROUPS_SCHEMA = pa.schema(
    [
        ("event_type", pa.string()),
        ("group", pa.string()),
        ("assigned_at", pa.timestamp("us", tz="UTC")),
        ("management_batch_id", pa.int64()),
    ]
)
DEFAULT_TYPES_PER_GROUP = 150
"""A group's batch costs about the same per table whatever the group's size, plus a fixed cost
per query (its planning process, its jobs), so under the seed's load on two cores a few large
groups are fresher and smaller than many small ones (BENCHMARKS.md, "Memory and freshness by
group size and driver heap"). A failing group
(`--on-incompatible fail_group`) stops at most this many tables."""


def group_name(number: int) -> str:
    return f"g{number:04d}"


def assign_groups(
    existing: Mapping[str, str], new_types: Iterable[str], types_per_group: int = DEFAULT_TYPES_PER_GROUP
) -> dict[str, str]:
    """Groups for `new_types` not yet in `existing`, in the order given (registry order)."""
    if types_per_group < 1:
        raise ValueError("types_per_group must be at least 1")
    load: dict[str, int] = {}
    for group in existing.values():
        load[group] = load.get(group, 0) + 1
    assigned: dict[str, str] = {}
    for event_type in new_types:
        if event_type in existing or event_type in assigned:
            continue
        if types_per_group == 1:
            assigned[event_type] = event_type
            continue
        open_groups = [g for g, n in load.items() if n < types_per_group]
        if open_groups:
            group = min(open_groups, key=lambda g: (load[g], g))
        else:
            group = group_name(len(load) + 1)
            while group in load:
                group = group_name(int(group[1:]) + 1)
        load[group] = load.get(group, 0) + 1
        assigned[event_type] = group
    return assigned


def resolve_groups(recorded: Mapping[str, str], registry_order: Iterable[str], types_per_group: int) -> dict[str, str]:
    """The group of every registered type: recorded assignments plus the heuristic's continuation."""
    return {**recorded, **assign_groups(recorded, registry_order, types_per_group)}


@dataclass(frozen=True)
class EventGroups:
    """A snapshot of the table: event type -> group, at a table version."""

    version: int
    by_type: dict[str, str]

    def types_of(self, group: str) -> list[str]:
        return sorted(t for t, g in self.by_type.items() if g == group)

    @property
    def groups(self) -> list[str]:
        return sorted(set(self.by_type.values()))


class EventGroupsReader:
    """Re-reads the (small) table only when its version changes."""

    def __init__(self, table: Path) -> None:
        self.table = table
        self._snapshot = EventGroups(-1, {})

    def read(self) -> EventGroups:
        with table_access(self.table, "read"):
            if not is_table(self.table):  # the pipeline has not created it yet: no groups
                return self._snapshot
            dt = open_table(self.table)
            if dt.version() != self._snapshot.version:
                rows = read_delta(dt, columns=["event_type", "group"]).to_pylist()
                self._snapshot = EventGroups(dt.version(), {r["event_type"]: r["group"] for r in rows})
        return self._snapshot


def assignment_rows(assigned: Mapping[str, str], batch_id: int) -> pa.Table:
    now = datetime.now(timezone.utc)
    return pa.Table.from_pylist(
        [
            {"event_type": t, "group": g, "assigned_at": now, "management_batch_id": batch_id}
            for t, g in sorted(assigned.items())
        ],
        schema=EVENT_GROUPS_SCHEMA,
    )
