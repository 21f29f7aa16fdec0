"""`streamops lake vacuum`: with a stream lagging 20 versions behind a compaction and a zero-hour
retention, nothing the stream still needs is deleted and the stream catches up without loss;
plain delta-rs VACUUM with the same settings breaks it (the baseline)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from checkpoint_worlds import append_versions, run_delta_stream, sink_rows, source_rows
from deltalake import DeltaTable
from pyspark.errors import StreamingQueryException

from streamops.checkpoint_tools.stream_readers import find_readers
from streamops.checkpoint_tools.stream_safe_vacuum import vacuum_table
from streamops.cli import main
from streamops.core.storage.location import Location

LAG = 5


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["lake", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def lagging_behind_a_compaction(world) -> int:
    """The stream caught up at 35 rows; LAG versions land and are compacted before it reads them
    (one batch each when it catches up).
    Returns how many data files the table's history holds."""
    append_versions(world.source, 1000, LAG)
    DeltaTable(str(world.source)).optimize.compact()
    return len([p for p in world.source.iterdir() if p.suffix == ".parquet"])


def test_a_lagging_stream_keeps_its_files_and_catches_up_where_plain_vacuum_breaks_it(
    spark, capsys, delta_world, tmp_path
):
    files = lagging_behind_a_compaction(delta_world)
    baseline = delta_world.copy_to(tmp_path / "baseline")

    code, out, err = run(
        capsys,
        "vacuum",
        "--lake",
        delta_world.lake.root,
        "--retention-hours",
        "0",
        "--allow-short-retention",
        "--yes",
        "--json",
    )
    assert code == 0, err
    report = {Path(t["table"]).name: t for t in json.loads(out)["tables"]}
    events = report["events"]
    assert events["refused"] is None and events["method"] == "delta-rs dry run, streamops delete"
    assert events["files_kept_by_streams"] == LAG
    assert events["files_deleted"] == files - 1 - LAG  # the 7 files the stream read, before the compaction
    [protection] = events["protected_by"]
    assert protection["stream"] == "silver_core" and protection["needed_version"] == 5
    assert protection["files_kept"] == LAG and protection["needs_snapshot"] is False
    assert all((delta_world.source / p).exists() is False for p in events["deleted"])
    silver = report["evt_even"]
    assert silver["streams_reading"] == 0 and silver["protected_by"] == [] and silver["method"] == "delta-rs vacuum"

    run_delta_stream(
        spark,
        delta_world.source,
        delta_world.checkpoint,
        delta_world.sinks,
        delta_world.stream,
        connector=delta_world.connector,
    )
    assert sink_rows(delta_world.sinks) == source_rows(delta_world.source)
    assert len(sink_rows(delta_world.sinks)) == 35 + 5 * LAG

    plain_vacuum(spark, baseline)
    with pytest.raises(StreamingQueryException, match=GONE[baseline.connector]):
        run_delta_stream(
            spark, baseline.source, baseline.checkpoint, baseline.sinks, baseline.stream, connector=baseline.connector
        )


GONE = {"embedded": "is gone", "native": "FileNotFoundException|does not exist"}
"""How each connector's reader fails on a file a plain VACUUM deleted under it."""


def plain_vacuum(spark, world) -> None:
    """The table's own VACUUM with the same retention (0 hours): delta-spark's SQL command on
    the native world, delta-rs's on the embedded one. Neither knows what a stream still needs."""
    if world.connector == "native":
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        try:
            spark.sql(f"VACUUM delta.`{world.source}` RETAIN 0 HOURS")
        finally:
            spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    else:
        DeltaTable(str(world.source)).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)


def test_a_stream_reading_its_starting_snapshot_keeps_the_whole_snapshot(delta_world):
    # Batch 0 of the world read the first file of the snapshot at version 2 and then was committed;
    # pretend only batch 0 ran: a restart reads on inside that snapshot.
    checkpoint = delta_world.checkpoint
    for log in ("offsets", "commits"):
        for path in (checkpoint / log).iterdir():
            if path.name.isdigit() and int(path.name) > 0:
                path.unlink()
    DeltaTable(str(delta_world.source)).optimize.compact()
    readers = find_readers(delta_world.lake)
    result = vacuum_table(Location.of(delta_world.source), readers, 0, dry_run=True, allow_short_retention=True)
    [protection] = result.protections
    assert protection.read.needs_snapshot and protection.read.needed_version == 2
    # the snapshot at version 2 (4 files) and the commits after it (3 files): nothing to delete
    assert protection.files_kept == 7 and result.deleted == () and result.kept_by_streams == 7


def test_without_yes_nothing_is_deleted_and_a_dry_run_lists_what_would_be(capsys, delta_world):
    lagging_behind_a_compaction(delta_world)
    before = sorted(p.name for p in delta_world.source.iterdir())
    code, _, err = run(
        capsys, "vacuum", "--lake", delta_world.lake.root, "--retention-hours", "0", "--allow-short-retention"
    )
    assert code == 2 and "--dry-run" in err and "--yes" in err and "\n" not in err.strip()
    code, out, _ = run(
        capsys,
        "vacuum",
        "--lake",
        delta_world.lake.root,
        "--retention-hours",
        "0",
        "--allow-short-retention",
        "--dry-run",
    )
    assert code == 0 and "would delete" in out and "silver_core" in out and "version 5" in out
    assert sorted(p.name for p in delta_world.source.iterdir()) == before


def test_a_retention_below_the_tables_own_needs_the_explicit_flag(capsys, delta_world):
    code, _, err = run(capsys, "vacuum", str(delta_world.source), "--retention-hours", "1", "--dry-run")
    assert code == 2 and "delta.deletedFileRetentionDuration" in err and "--allow-short-retention" in err


def test_an_unreadable_checkpoint_stops_the_vacuum_of_its_table_only(capsys, delta_world):
    lagging_behind_a_compaction(delta_world)
    newest = max(int(p.name) for p in (delta_world.checkpoint / "offsets").iterdir() if p.name.isdigit())
    (delta_world.checkpoint / "offsets" / str(newest)).write_text("v1\n{broken")
    before = sorted(p.name for p in delta_world.source.iterdir())
    code, out, _ = run(
        capsys,
        "vacuum",
        "--lake",
        delta_world.lake.root,
        "--retention-hours",
        "0",
        "--allow-short-retention",
        "--yes",
        "--json",
    )
    report = {Path(t["table"]).name: t for t in json.loads(out)["tables"]}
    assert code == 2
    assert "silver_core" in report["events"]["refused"] and "cannot be read" in report["events"]["refused"]
    assert report["evt_even"]["refused"] is None  # a silver table: the broken stream does not read it
    assert sorted(p.name for p in delta_world.source.iterdir()) == before


def test_a_named_checkpoint_protects_a_table_outside_any_lake(capsys, delta_world, tmp_path):
    lagging_behind_a_compaction(delta_world)
    outside = tmp_path / "elsewhere"
    shutil.move(str(delta_world.checkpoint), outside)
    code, out, _ = run(
        capsys,
        "vacuum",
        delta_world.source,
        "--checkpoint",
        outside,
        "--retention-hours",
        "0",
        "--allow-short-retention",
        "--dry-run",
        "--json",
    )
    [table] = json.loads(out)["tables"]
    assert code == 0 and table["files_kept_by_streams"] == LAG
    assert table["protected_by"][0]["checkpoint"] == str(outside)
    code, out, _ = run(
        capsys, "vacuum", delta_world.source, "--retention-hours", "0", "--allow-short-retention", "--dry-run"
    )
    assert code == 0 and "no stream protected" in out
