"""A MERGE into a table a stream reads (a CDC table of `streamops run --cdc` is kept that way) is
not an append: the doctor lists it among the unread change commits and points the table's
readers at its change feed, since skipChangeCommits would skip the updates and deletes too.
Real checkpoints of both connectors (`delta_world`)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable

from streamops.checkpoint_tools.doctor import DoctorTarget, diagnose
from streamops.checkpoint_tools.doctor_context import DoctorSettings


def doctor_change_commits(world):
    diagnosis = diagnose(DoctorTarget(world.checkpoint, world.source, world.sinks, world.stream), DoctorSettings())
    return [f for f in diagnosis.findings if f.code == "unread_change_commits"]


def test_an_unread_merge_points_readers_at_the_change_feed(delta_world):
    changes = pa.table({"id": pa.array([1, 5000], pa.int64()), "name": ["renamed", "new"]})
    (
        DeltaTable(str(delta_world.source))
        .merge(changes, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    [finding] = doctor_change_commits(delta_world)
    assert [c["operation"] for c in finding.evidence["change_commits"]] == ["MERGE"]
    assert "readChangeFeed=true" in finding.fix and "skipChangeCommits" in finding.fix


def test_a_delete_gets_no_change_feed_advice(delta_world):
    DeltaTable(str(delta_world.source)).delete("id = 1")
    [finding] = doctor_change_commits(delta_world)
    assert [c["operation"] for c in finding.evidence["change_commits"]] == ["DELETE"]
    assert "readChangeFeed" not in finding.fix
