"""Damaged data files of real Delta tables (delta-rs writes them): missing, truncated or intact,
named with the version that added them; the files a checkpoint has not read yet; and the
difference between a file VACUUM deleted and one deleted outside Delta."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from streamops.core.delta_format.damaged_files import (
    DamagedFile,
    damaged_files,
    outside_delta,
    table_damaged_files,
    unread_damaged_files,
)
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.source_offsets import BASE_INDEX, DeltaFileIndex, DeltaSourceOffset, IndexedFile
from streamops.core.exceptions import CheckpointError, StreamopsError, TableNotFoundError


def appended(table: Path, versions: int, rows: int = 5) -> list[Path]:
    """Versions 0..versions-1, one file of `rows` rows each (partition `a b`, so paths are
    URL-encoded twice in the log); returns each version's file."""
    files = []
    for version in range(versions):
        write_deltalake(
            table,
            pa.table({"id": list(range(version * rows, (version + 1) * rows)), "part": ["a b"] * rows}),
            mode="append",
            partition_by=["part"],
        )
        [add] = DeltaLog(table).commit(version).adds
        files.append(table / "part=a%20b" / add.path.rsplit("/", 1)[1])
    return files


def truncate(path: Path, size: int = 20) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(size)


def commit_files(table: Path, versions: range) -> list[IndexedFile]:
    """The files of these commits as a stream reads them."""
    index = DeltaFileIndex(DeltaLog(table))
    return [f for v in versions for f in index.files_after(DeltaSourceOffset(v, BASE_INDEX, False), v)]


def test_missing_truncated_and_intact_files(tmp_path):
    table = tmp_path / "events"
    files = appended(table, 3)
    files[0].unlink()
    truncate(files[1])
    found = damaged_files(table, commit_files(table, range(3)))
    assert [(d.version, d.missing, d.damage, d.actual_size, d.rows) for d in found] == [
        (0, True, "missing", None, 5),
        (1, False, "truncated", 20, 5),
    ]
    missing, cut = found
    assert missing.path.startswith("part=a%2520b/")  # as the log spells it; describe names the file on disk
    assert missing.describe(table) == f"`{files[0]}` (added in version 0) is missing"
    assert cut.describe(table) == f"`{files[1]}` (added in version 1) is truncated: 20 of {cut.expected_size:,} bytes"
    assert damaged_files(table, commit_files(table, range(2, 3))) == []


def test_a_file_larger_than_its_add_is_damaged_too(tmp_path):
    table = tmp_path / "events"
    [file] = appended(table, 1)
    file.write_bytes(file.read_bytes() + b"extra")
    [found] = damaged_files(table, commit_files(table, range(1)))
    assert found.damage == "wrong_size"
    assert found.describe(table).endswith(
        f"has {found.expected_size + 5:,} bytes, not the {found.expected_size:,} its add records"
    )


def test_the_table_snapshot_names_the_version_that_added_each_file(tmp_path):
    table = tmp_path / "events"
    files = appended(table, 4)
    files[1].unlink()
    truncate(files[3])
    found = table_damaged_files(table)
    assert [(d.version, d.damage, d.in_snapshot, d.rows) for d in found] == [
        (1, "missing", False, 5),
        (3, "truncated", False, 5),
    ]
    assert found[0].path == DeltaLog(table).commit(1).adds[0].path
    assert table_damaged_files(tmp_path / "events") == found


def test_a_file_whose_commit_log_cleanup_removed_is_named_by_the_snapshot(tmp_path):
    table = tmp_path / "events"
    files = appended(table, 3)
    dt = DeltaTable(str(table))
    dt.alter.set_table_properties({"delta.logRetentionDuration": "interval 0 seconds"})
    write_deltalake(table, pa.table({"id": [99], "part": ["c"]}), mode="append")
    DeltaTable(str(table)).create_checkpoint()
    DeltaTable(str(table)).cleanup_metadata()
    assert DeltaLog(table).retention().earliest_commit == 4
    files[0].unlink()
    [found] = table_damaged_files(table)
    assert (found.in_snapshot, found.version) == (True, 4)
    assert found.describe(table) == f"`{files[0]}` (in the snapshot at version 4) is missing"


def test_vacuumed_files_are_not_outside_delta_but_deleted_live_files_are(tmp_path):
    table = tmp_path / "events"
    files = appended(table, 3)
    unread = commit_files(table, range(3))
    dt = DeltaTable(str(table))
    dt.optimize.compact()
    dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert not any(f.exists() for f in files)
    vacuumed = damaged_files(table, unread)
    assert len(vacuumed) == 3 and outside_delta(DeltaLog(table), vacuumed) == []

    other = tmp_path / "other"
    live = appended(other, 2)
    live[1].unlink()
    truncate(live[0])
    damaged = damaged_files(other, commit_files(other, range(2)))
    assert outside_delta(DeltaLog(other), damaged) == damaged


# --- the files a checkpoint has not read yet ----------------------------------------------


def hand_checkpoint(root: Path, table: Path, ends: list[tuple[int, int, bool]], committed: int | None) -> Path:
    """A checkpoint of one Delta source in Delta's own format: offsets/<n> per end offset,
    commits/0..committed."""
    table_id = DeltaTable(str(table)).metadata().id
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text(json.dumps({"id": "7d3c0e6a-0000-4000-8000-000000000001"}))
    for batch, (version, index, starting) in enumerate(ends):
        offset = {
            "sourceVersion": 1,
            "reservoirId": table_id,
            "reservoirVersion": version,
            "index": index,
            "isStartingVersion": starting,
        }
        metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}}
        (root / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(metadata)}\n{json.dumps(offset)}")
    for batch in range(0 if committed is None else committed + 1):
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_unread_damaged_files_are_those_after_the_last_committed_batch(tmp_path):
    table = tmp_path / "events"
    files = appended(table, 5)
    for file in (files[0], files[2], files[4]):
        file.unlink()
    # batches 0..2 read versions 0, 1, 2; batch 2 is planned, not committed: a restart replays it
    checkpoint = hand_checkpoint(tmp_path / "ckpt", table, [(0, 0, False), (1, 0, False), (2, 0, False)], 1)
    found = unread_damaged_files(checkpoint, table)
    assert [d.version for d in found] == [2, 4]
    assert found[0].describe(table) == f"`{files[2]}` (added in version 2) is missing"


def test_before_any_commit_the_first_batch_is_unread(tmp_path):
    table = tmp_path / "events"
    files = appended(table, 2)
    truncate(files[0])
    checkpoint = hand_checkpoint(tmp_path / "ckpt", table, [(1, 0, True)], None)
    [found] = unread_damaged_files(checkpoint, table)
    assert (found.version, found.in_snapshot, found.damage) == (1, True, "truncated")


def test_a_stream_that_has_found_no_data_yet_will_read_the_latest_snapshot(tmp_path):
    # its batches recorded the initial offset (version -1): its next batch reads the snapshot
    table = tmp_path / "events"
    files = appended(table, 3)
    files[1].unlink()
    checkpoint = hand_checkpoint(tmp_path / "ckpt", table, [(-1, BASE_INDEX, True)], 0)
    [found] = unread_damaged_files(checkpoint, table)
    assert (found.version, found.in_snapshot, found.damage) == (2, True, "missing")
    assert found.describe(table) == f"`{files[1]}` (in the snapshot at version 2) is missing"


def test_what_cannot_be_told_raises_a_streamops_error(tmp_path):
    table = tmp_path / "events"
    appended(table, 1)
    with pytest.raises(TableNotFoundError):
        unread_damaged_files(hand_checkpoint(tmp_path / "a", table, [(0, 0, False)], 0), tmp_path / "nothing")
    other = tmp_path / "other"
    appended(other, 1)
    with pytest.raises(CheckpointError, match="no Delta source reading"):
        unread_damaged_files(hand_checkpoint(tmp_path / "b", table, [(0, 0, False)], 0), other)
    empty = tmp_path / "c"
    (empty / "offsets").mkdir(parents=True)
    (empty / "metadata").write_text('{"id":"x"}')
    with pytest.raises(CheckpointError, match="planned no batch"):
        unread_damaged_files(empty, table)
    with pytest.raises(StreamopsError):
        unread_damaged_files(tmp_path / "no-checkpoint", table)


def test_a_damaged_file_is_a_value():
    file = DamagedFile("a.parquet", 3, 100, None, rows=7)
    assert file.to_json() == {
        "path": "a.parquet",
        "version": 3,
        "in_snapshot": False,
        "damage": "missing",
        "expected_size": 100,
        "actual_size": None,
        "rows": 7,
    }
    assert file.describe("/lake/t") == "`/lake/t/a.parquet` (added in version 3) is missing"
