"""A source data file deleted outside Delta or truncated under a stream that has not read it
yet: the doctor names it (`source_files_damaged`, not VACUUM's `source_files_vacuumed`), the core
names it for the pipeline, `lake fsck` names the stream that still has to read it, and, after
the fsck drops it from the log, the stream still stops (its add stays in its version, and the
FSCK commit is a delete).
Real checkpoints of both connectors (`delta_world`)."""

from __future__ import annotations

import json

import pytest
from checkpoint_worlds import World, append_versions, run_delta_stream
from deltalake import DeltaTable
from pyspark.errors import StreamingQueryException

from streamops.checkpoint_tools.doctor import Diagnosis, DoctorTarget, diagnose
from streamops.checkpoint_tools.doctor_context import DoctorSettings
from streamops.checkpoint_tools.findings import Finding
from streamops.cli import main
from streamops.core.delta_format.damaged_files import unread_damaged_files
from streamops.core.delta_format.log import DeltaLog, data_file_path

UNREAD = (5, 6)
"""The versions appended after the world's stream caught up (it read versions 1..4)."""


def doctor(world: World) -> Diagnosis:
    return diagnose(DoctorTarget(world.checkpoint, world.source, world.sinks, world.stream), DoctorSettings())


def found(diagnosis: Diagnosis) -> set[tuple[str, str]]:
    return {(f.code, f.severity) for f in diagnosis.findings}


def finding(diagnosis: Diagnosis, code: str) -> Finding:
    [match] = [f for f in diagnosis.findings if f.code == code]
    return match


def version_file(world: World, version: int):
    [add] = DeltaLog(world.source).commit(version).adds
    return world.source / add.path


def behind_a_damaged_file(world):
    """Versions 5 and 6 land unread; version 6's file is deleted by hand, version 5's truncated."""
    append_versions(world.source, 1000, len(UNREAD))
    deleted, cut = version_file(world, 6), version_file(world, 5)
    deleted.unlink()
    cut.write_bytes(cut.read_bytes()[:20])
    return deleted, cut


def test_files_deleted_or_truncated_outside_delta_are_damaged_not_vacuumed(delta_world):
    deleted, cut = behind_a_damaged_file(delta_world)
    diagnosis = doctor(delta_world)
    assert ("source_files_damaged", "error") in found(diagnosis)
    assert "source_files_vacuumed" not in {code for code, _ in found(diagnosis)}
    item = finding(diagnosis, "source_files_damaged")
    assert f"`{cut}` (added in version 5) is truncated: 20 of " in item.message
    assert f"`{deleted}` (added in version 6) is missing" in item.message
    assert item.message.endswith("; restart will fail")
    assert item.evidence["versions"] == [5, 6] and item.evidence["damaged_files"] == 2
    assert [f["damage"] for f in item.evidence["files"]] == ["truncated", "missing"]
    assert f"streamops lake fsck {delta_world.source} --yes" in item.fix and "startingVersion=7" in item.fix


def test_vacuumed_files_stay_vacuumed(delta_world):
    append_versions(delta_world.source, 1000, len(UNREAD))
    table = DeltaTable(str(delta_world.source))
    table.optimize.compact()
    table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    codes = {code for code, _ in found(doctor(delta_world))}
    assert "source_files_vacuumed" in codes and "source_files_damaged" not in codes


def test_the_core_names_the_unread_damaged_files_for_the_pipeline(delta_world):
    deleted, cut = behind_a_damaged_file(delta_world)
    damaged = unread_damaged_files(delta_world.checkpoint, delta_world.source)
    assert [(d.version, d.damage) for d in damaged] == [(5, "truncated"), (6, "missing")]
    assert [data_file_path(delta_world.source, d.path) for d in damaged] == [str(cut), str(deleted)]


def test_fsck_names_the_stream_that_still_has_to_read_them(capsys, delta_world):
    read_already = version_file(delta_world, 4)
    read_already.unlink()
    assert main(["lake", "fsck", "--lake", str(delta_world.lake.root), "--json"]) == 1
    tables = {t["table"]: t for t in json.loads(capsys.readouterr().out)["tables"]}
    source = tables[str(delta_world.source)]
    assert [d["version"] for d in source["damaged"]] == [4] and source["streams_to_restart"] == []

    behind_a_damaged_file(delta_world)
    assert main(["lake", "fsck", "--lake", str(delta_world.lake.root)]) == 1
    out = capsys.readouterr().out
    assert f"{delta_world.source}: {delta_world.stream} have not read the damaged version(s) yet" in out


AFTER_FSCK = {"embedded": "is gone", "native": "DELTA_SOURCE_IGNORE_DELETE"}
"""How each connector stops: the embedded source reads version 5's adds and finds the file gone;
delta-spark's source refuses the FSCK commit (a delete) as soon as it plans a range holding it."""


def test_after_fsck_a_stream_behind_the_dropped_files_still_fails_on_them(spark, capsys, delta_world):
    behind_a_damaged_file(delta_world)
    assert main(["lake", "fsck", str(delta_world.source), "--yes"]) == 0
    capsys.readouterr()
    with pytest.raises(StreamingQueryException, match=AFTER_FSCK[delta_world.connector]):
        run_delta_stream(
            spark,
            delta_world.source,
            delta_world.checkpoint,
            delta_world.sinks,
            delta_world.stream,
            connector=delta_world.connector,
        )


STOPS_AT_FSCK = {
    "embedded": r"deleted or rewrote data at version 5 \(FSCK, delete\)",
    "native": "DELTA_SOURCE_IGNORE_DELETE",
}
"""A stream with Delta's default options stops at the FSCK commit: its `remove`s are a delete."""


def test_a_stream_past_the_damaged_version_stops_at_the_fsck_commit(spark, capsys, delta_world):
    version_file(delta_world, 4).unlink()
    assert main(["lake", "fsck", str(delta_world.source), "--yes"]) == 0
    capsys.readouterr()
    fsck = finding(doctor(delta_world), "unread_change_commits")
    assert [(c["version"], c["operation"], c["kind"]) for c in fsck.evidence["change_commits"]] == [
        (5, "FSCK", "delete")
    ]
    with pytest.raises(StreamingQueryException, match=STOPS_AT_FSCK[delta_world.connector]):
        run_delta_stream(
            spark,
            delta_world.source,
            delta_world.checkpoint,
            delta_world.sinks,
            delta_world.stream,
            connector=delta_world.connector,
        )
