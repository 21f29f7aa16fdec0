"""Every fault the doctor knows, injected into checkpoints real queries wrote; healthy ones stay clean."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from checkpoint_worlds import World, append_version, append_versions, run_delta_stream
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties

from streamops.checkpoint_tools.checkpoint_checks import (
    check_batch_gaps,
    check_concurrent_writers,
)
from streamops.checkpoint_tools.doctor import DoctorTarget, diagnose, diagnose_lake
from streamops.checkpoint_tools.doctor_context import DoctorSettings
from streamops.core.checkpoint_format.metadata_log import remove_log_file, write_log_file
from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.log import DeltaLog
from streamops.core.storage.location import Location
from streamops.pipeline.delta_connector.batch_writer import write_batch

FIXTURES = Path(__file__).parent / "fixtures"
HOUR = 3600.0


def doctor(world: World, checks=None, **settings):
    target = DoctorTarget(world.checkpoint, world.source, world.sinks, world.stream)
    kwargs = {"checks": checks} if checks else {}
    return diagnose(target, DoctorSettings(**settings), **kwargs)


def found(diagnosis) -> set[tuple[str, str]]:
    return {(f.code, f.severity) for f in diagnosis.findings}


def finding(diagnosis, code):
    matches = [f for f in diagnosis.findings if f.code == code]
    assert matches, f"no {code} in {found(diagnosis)}"
    return matches[0]


def drop_batches_from(world: World, first: int) -> None:
    for directory in ("offsets", "commits"):
        for path in (world.checkpoint / directory).iterdir():
            if path.name.isdigit() and int(path.name) >= first:
                remove_log_file(path)


def latest(world: World) -> int:
    return world.batches - 1


# --- healthy -------------------------------------------------------------------------------


def test_healthy_checkpoints_have_no_findings(delta_world, file_world, rate_world):
    for world in (delta_world, file_world, rate_world):
        diagnosis = doctor(world)
        assert diagnosis.findings == (), (world.stream, found(diagnosis))
        assert diagnosis.exit_code == 0


def test_healthy_lake_finds_tables_itself(delta_world):
    [diagnosis] = diagnose_lake(delta_world.lake)
    assert diagnosis.findings == ()
    assert diagnosis.source_table == Location.of(delta_world.source)
    assert set(diagnosis.sink_tables) == set(map(Location.of, delta_world.sinks))


def test_empty_checkpoint_directory_in_a_lake_is_a_warning(delta_world):
    Path(delta_world.lake.checkpoints_root / "silver_new").mkdir()
    diagnoses = {d.stream: d for d in diagnose_lake(delta_world.lake)}
    assert found(diagnoses["silver_new"]) == {("missing_metadata", "warning")}
    assert diagnoses[delta_world.stream].findings == ()


# --- checkpoint-only faults ----------------------------------------------------------------


def test_uncommitted_batch_is_replayed_with_its_versions(delta_world):
    remove_log_file(delta_world.checkpoint / "commits" / str(latest(delta_world)))
    recent = doctor(delta_world)
    # planned minutes ago: probably still running; its data is still backlog until it commits
    assert found(recent) == {("uncommitted_batch", "info"), ("backlog", "info")}
    old = doctor(delta_world, now=time.time() + HOUR)
    item = finding(old, "uncommitted_batch")
    assert item.severity == "warning"
    assert item.evidence["batch_id"] == latest(delta_world)
    assert item.evidence["versions"] == [4] and item.evidence["files"] == 1
    assert item.evidence["sink_already_has_batch"] is True  # the write landed before the "crash"
    assert "skips it" in item.fix


def test_missing_metadata_suggests_the_query_id_the_sink_recorded(delta_world):
    (delta_world.checkpoint / "metadata").unlink()
    item = finding(doctor(delta_world), "missing_metadata")
    assert item.severity == "error"
    assert delta_world.query_id in item.fix


@pytest.mark.parametrize(
    "directory, which, damage, severity",
    [
        ("offsets", "latest", lambda d: b"", "error"),
        ("offsets", "latest", lambda d: d + b" ", "error"),  # fails its .crc
        ("commits", "latest", lambda d: d[:-8], "error"),
        ("offsets", "first", lambda d: d[: len(d) // 2], "warning"),  # a restart never reads it
    ],
)
def test_corrupt_log_files(delta_world, directory, which, damage, severity):
    batch = latest(delta_world) if which == "latest" else 0
    path = delta_world.checkpoint / directory / str(batch)
    path.write_bytes(damage(path.read_bytes()))
    item = finding(doctor(delta_world), "corrupt_log_file")
    assert item.severity == severity and item.evidence["path"] == str(path)


def test_offsets_cut_at_a_line_boundary_lose_a_source(tmp_path):
    ckpt = tmp_path / "rate_spark24"
    shutil.copytree(FIXTURES / "rate_spark24", ckpt)
    path = ckpt / "offsets" / "2"
    path.write_text(path.read_text().rsplit("\n", 1)[0])
    diagnosis = diagnose(DoctorTarget(ckpt))
    item = finding(diagnosis, "corrupt_log_file")
    assert item.severity == "error" and "lists 1 source offset(s)" in item.message


def test_unknown_log_version_from_a_newer_spark():
    assert found(diagnose(DoctorTarget(FIXTURES / "future_spark"))) == {("unknown_log_version", "warning")}


def test_stale_temp_file(delta_world):
    (delta_world.checkpoint / "commits" / ".7.9f8e7d6c.tmp").write_text("v1\n")
    assert found(doctor(delta_world)) == {("stale_temp_file", "info")}


@pytest.mark.parametrize(
    "remove, expected",
    [
        (("offsets", -1), ("batch_gap", "error")),  # the start of the latest batch is gone
        (("offsets", 2), ("batch_gap", "warning")),
        (("commits", 2), ("batch_gap", "warning")),
    ],
)
def test_batch_gaps(delta_world, remove, expected):
    directory, batch = remove
    batch = latest(delta_world) - 1 if batch == -1 else batch
    remove_log_file(delta_world.checkpoint / directory / str(batch))
    assert expected in found(doctor(delta_world, checks=[check_batch_gaps]))


def test_commit_without_offsets(delta_world):
    commits = delta_world.checkpoint / "commits"
    shutil.copy(commits / str(latest(delta_world)), commits / str(latest(delta_world) + 1))
    assert ("batch_gap", "error") in found(doctor(delta_world))


def test_conf_changed_stateless_is_a_warning(delta_world):
    path = delta_world.checkpoint / "offsets" / str(latest(delta_world))
    write_log_file(
        path, path.read_bytes().replace(b'"spark.sql.shuffle.partitions":"2"', b'"spark.sql.shuffle.partitions":"7"')
    )
    item = finding(doctor(delta_world), "conf_changed")
    assert item.severity == "warning"
    assert item.evidence["changes"][0]["after"] == "7"


def test_conf_changed_under_state_breaks_restart(rate_world):
    path = rate_world.checkpoint / "offsets" / str(latest(rate_world))
    write_log_file(
        path,
        path.read_bytes()
        .replace(b"HDFSBackedStateStoreProvider", b"RocksDBStateStoreProvider")
        .replace(b"state.HDFS", b"state.Rocks"),
    )
    assert ("conf_changed", "error") in found(doctor(rate_world))


def test_two_runs_writing_one_checkpoint(spark, delta_world, tmp_path):
    """Run B starts from the checkpoint as it was at batch 4 while run A went on to batch 6;
    on an object store without put-if-absent, B's offsets/5 replaces A's (last writer wins)."""
    run_b = tmp_path / "run_b" / delta_world.stream
    shutil.copytree(delta_world.checkpoint, run_b)
    for directory in ("offsets", "commits"):
        for batch in range(5, delta_world.batches):
            remove_log_file(run_b / directory / str(batch))
    replayed, _ = run_delta_stream(
        spark, delta_world.source, run_b, delta_world.sinks, delta_world.stream, connector=delta_world.connector
    )
    assert replayed == [5, 6]
    for name in ("5", ".5.crc"):
        shutil.copy2(run_b / "offsets" / name, delta_world.checkpoint / "offsets" / name)
    item = finding(doctor(delta_world, checks=[check_concurrent_writers]), "concurrent_writers")
    assert item.severity == "error"
    assert {(s["batch_id"], s["kind"]) for s in item.evidence["signs"]} == {
        (5, "planned_after_commit"),
        (6, "timestamp_backwards"),
    }


def test_offsets_going_backwards(tmp_path):
    ckpt = tmp_path / "kafka"
    shutil.copytree(FIXTURES / "kafka_spark35", ckpt)
    path = ckpt / "offsets" / "2"
    path.write_text(path.read_text().replace('"0":150', '"0":60'))
    item = finding(diagnose(DoctorTarget(ckpt)), "concurrent_writers")
    assert item.evidence["signs"][0]["partitions"] == {"events/0": [97, 60]}


def test_file_source_log_behind(file_world):
    remove_log_file(file_world.checkpoint / "sources" / "0" / str(latest(file_world)))
    assert ("file_source_log_behind", "error") in found(doctor(file_world))


# --- source table faults -------------------------------------------------------------------


def test_source_table_missing(delta_world):
    shutil.rmtree(delta_world.source)
    assert found(doctor(delta_world)) == {("source_table_missing", "error")}


def test_source_table_replaced(delta_world):
    old_id = DeltaTable(str(delta_world.source)).metadata().id
    shutil.rmtree(delta_world.source)
    append_version(delta_world.source, 0)
    item = finding(doctor(delta_world), "source_table_replaced")
    assert item.severity == "error" and item.evidence["reservoir_id"] == old_id


def test_source_version_removed_by_log_cleanup(delta_world):
    table = DeltaTable(str(delta_world.source))
    table.alter.set_table_properties({"delta.logRetentionDuration": "interval 0 seconds"})
    append_versions(delta_world.source, 1000, 2)
    DeltaTable(str(delta_world.source)).create_checkpoint()
    DeltaTable(str(delta_world.source)).cleanup_metadata()
    item = finding(doctor(delta_world), "source_version_cleaned_up")
    assert item.severity == "error"
    assert item.evidence["needed_version"] == 5 and item.evidence["earliest_commit"] == 7


def test_unread_files_removed_by_vacuum(delta_world):
    append_versions(delta_world.source, 1000, 2)
    table = DeltaTable(str(delta_world.source))
    table.optimize.compact()
    table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    item = finding(doctor(delta_world), "source_files_vacuumed")
    assert item.severity == "error"
    assert item.evidence["versions"] == [5, 6] and item.evidence["missing_files"] == 2


def test_backlog_and_stall(delta_world):
    append_versions(delta_world.source, 1000, 2, rows=3)
    fresh = doctor(delta_world)
    assert found(fresh) == {("backlog", "info")}
    backlog = finding(fresh, "backlog").evidence
    assert (backlog["versions"], backlog["files"], backlog["oldest_pending_version"]) == (2, 2, 5)
    log = DeltaLog(delta_world.source)
    assert backlog["bytes"] == sum(a.size for v in (5, 6) for a in log.commit(v).data_adds)
    later = doctor(delta_world, now=time.time() + 2 * HOUR)
    assert found(later) == {("backlog", "warning"), ("stalled", "warning")}
    assert later.exit_code == 1


# --- sink faults ---------------------------------------------------------------------------


def test_sink_txn_ahead_when_the_checkpoint_lost_batches(delta_world):
    drop_batches_from(delta_world, latest(delta_world) - 1)
    item = finding(doctor(delta_world), "sink_txn_ahead")
    assert item.severity == "error" and item.evidence["sink_txn"] == latest(delta_world)


def test_sink_txn_behind_when_the_sink_lost_batches(delta_world):
    for sink in delta_world.sinks:
        shutil.rmtree(sink)
        for batch in (0, 1):
            write_batch(
                sink,
                pa.table({"id": pa.array([batch * 2], pa.int64()), "name": ["x"]}),
                BatchCommitInfo(delta_world.stream, batch, delta_world.query_id),
            )
    item = finding(doctor(delta_world), "sink_txn_behind")
    assert item.severity == "warning"
    assert item.evidence["sink_txn"] == 1 and item.evidence["read_data"] is True
    assert "--to-batch 2" in item.fix


def test_sink_written_by_another_query(delta_world):
    write_batch(
        delta_world.sinks[0],
        pa.table({"id": pa.array([10_000], pa.int64()), "name": ["x"]}),
        BatchCommitInfo(delta_world.stream, latest(delta_world) + 1, "another-query-id"),
    )
    item = finding(doctor(delta_world), "sink_written_by_other_query")
    assert item.severity == "error" and item.evidence["other_query_ids"] == ["another-query-id"]


def test_duplicate_sink_commit_from_a_non_idempotent_writer(delta_world):
    info = BatchCommitInfo(delta_world.stream, latest(delta_world), delta_world.query_id)
    write_deltalake(
        str(delta_world.sinks[1]),
        pa.table({"id": pa.array([33], pa.int64()), "name": ["n33"]}),
        mode="append",
        commit_properties=CommitProperties(custom_metadata=info.to_custom_metadata()),
    )
    item = finding(doctor(delta_world), "duplicate_sink_commit")
    assert item.severity == "error" and item.evidence["batch_id"] == latest(delta_world)
    assert len(item.evidence["versions"]) == 2


def test_a_check_that_cannot_run_is_reported(delta_world, tmp_path):
    world = World(
        delta_world.lake,
        delta_world.stream,
        delta_world.checkpoint,
        delta_world.source,
        (tmp_path / "no_such_table",),
        delta_world.query_id,
        delta_world.batches,
    )
    diagnosis = doctor(world)
    assert {f.code for f in diagnosis.findings} == {"check_failed"}
    assert all(f.severity == "warning" for f in diagnosis.findings)
