"""The event-group heuristic (pipeline/registry/event_groups.py): new types join the least-loaded group
with room, ties go to the lowest group name, a full fleet opens a new group, and an assignment
never moves, so each silver table keeps one writer."""

from __future__ import annotations

import pytest
from deltalake import write_deltalake

from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.registry.event_groups import (
    EVENT_GROUPS_SCHEMA,
    EventGroupsReader,
    assign_groups,
    assignment_rows,
    group_name,
    resolve_groups,
)


def test_groups_fill_in_registry_order_and_a_full_fleet_opens_a_new_group():
    assert assign_groups({}, ["a", "b", "c", "d", "e"], types_per_group=2) == {
        "a": "g0001",
        "b": "g0001",
        "c": "g0002",
        "d": "g0002",
        "e": "g0003",
    }


def test_a_new_type_joins_the_least_loaded_group_with_room():
    existing = {"a": "g0001", "b": "g0001", "c": "g0001", "d": "g0002"}
    assert assign_groups(existing, ["e"], types_per_group=4) == {"e": "g0002"}
    assert assign_groups(existing, ["e", "f", "g"], types_per_group=4) == {"e": "g0002", "f": "g0002", "g": "g0001"}


def test_a_tie_goes_to_the_lowest_group_name():
    existing = {"a": "g0003", "b": "g0002", "c": "g0010"}
    assert assign_groups(existing, ["d"], types_per_group=2) == {"d": "g0002"}


def test_full_groups_are_skipped_and_a_new_name_never_reuses_one_in_use():
    existing = {"a": "g0001", "b": "g0001", "c": "g0003", "d": "g0003"}
    assert assign_groups(existing, ["e"], types_per_group=2) == {"e": "g0004"}, "g0003 is taken: not g0003 again"
    assert group_name(7) == "g0007"


def test_assignments_never_move():
    existing = {"a": "g0002", "b": "g0002", "c": "g0002"}
    assigned = assign_groups(existing, ["a", "b", "c", "x"], types_per_group=2)
    assert assigned == {"x": "g0003"}, "known types are not reassigned, even to balance an over-full group"
    assert assign_groups({}, ["a", "a", "b"], types_per_group=5) == {"a": "g0001", "b": "g0001"}


def test_one_type_per_group_names_the_group_after_the_type():
    assert assign_groups({"a": "a"}, ["a", "b", "c"], types_per_group=1) == {"b": "b", "c": "c"}


def test_a_group_needs_room_for_one_type():
    with pytest.raises(ValueError, match="at least 1"):
        assign_groups({}, ["a"], types_per_group=0)


def test_resolving_continues_the_recorded_assignments_with_the_heuristic():
    """A silver stream resolves the group of a type the management stream has not recorded yet
    to the same group the management stream will record."""
    registry_order = ["a", "b", "c", "d", "e"]
    recorded = assign_groups({}, registry_order[:3], types_per_group=2)
    resolved = resolve_groups(recorded, registry_order, types_per_group=2)
    assert resolved == {**recorded, **assign_groups(recorded, registry_order[3:], types_per_group=2)}
    assert resolved == assign_groups({}, registry_order, types_per_group=2)
    assert resolve_groups(resolved, registry_order, types_per_group=2) == resolved


def test_the_table_round_trip_is_read_again_only_when_it_changes(tmp_path):
    table = tmp_path / "event_groups"
    EmbeddedDelta().create_table(table, EVENT_GROUPS_SCHEMA)
    reader = EventGroupsReader(table)
    empty = reader.read()
    assert empty.by_type == {} and empty.groups == []
    write_deltalake(str(table), assignment_rows({"b": "g0001", "a": "g0001", "c": "g0002"}, batch_id=0), mode="append")
    snapshot = reader.read()
    assert snapshot.version == empty.version + 1
    assert snapshot.groups == ["g0001", "g0002"] and snapshot.types_of("g0001") == ["a", "b"]
    assert reader.read() is snapshot, "same version: the snapshot is reused"
