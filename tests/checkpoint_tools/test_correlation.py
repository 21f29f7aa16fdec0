"""Batches tied to the source files they read and the sink commits they produced."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
from checkpoint_worlds import append_versions
from deltalake import DeltaTable, write_deltalake

from streamops.checkpoint_tools.correlation import correlate
from streamops.core.checkpoint_format.metadata_log import remove_log_file
from streamops.core.delta_format.log import DeltaLog
from streamops.core.storage.location import Location

FIXTURES = Path(__file__).parent / "fixtures"
SEED_RESERVOIR = "f3b2a7c4-61d2-4a7e-9c2e-5d0e8b1a9f10"


def test_each_batch_read_exactly_its_files_and_wrote_both_sinks(delta_world):
    result = correlate(delta_world.checkpoint, delta_world.source, delta_world.sinks)
    reads = [b.source_read for b in result.batches]
    positions = [[(f.version, f.index, f.is_starting_version) for f in r.files] for r in reads]
    assert positions == [
        [(2, 0, True)],
        [(2, 1, True)],
        [(2, 2, True)],
        [(2, 3, True)],  # the starting snapshot
        [(3, 0, False)],
        [(3, 1, False)],
        [(4, 0, False)],  # then commit by commit
    ]
    assert [r.rows for r in reads] == [5] * 7
    log = DeltaLog(delta_world.source)
    all_files = {a.path for v in range(1, 5) for a in log.commit(v).data_adds}
    assert sorted(f.path for r in reads for f in r.files) == sorted(all_files)  # each file exactly once
    assert reads[4].version_timestamps_ms[3] == log.commit(3).timestamp_ms
    for batch in result.batches:
        commits = batch.sink_commits
        assert {c.table for c in commits} == set(map(Location.of, delta_world.sinks)), batch.batch.batch_id
        assert all(c.matched_by == "txn" and c.batch_id == batch.batch.batch_id for c in commits)
        assert sum(c.rows for c in commits) == batch.source_read.rows
        assert all(c.query_id == delta_world.query_id for c in commits)


def test_lake_mode_finds_source_and_sinks_itself(delta_world):
    result = correlate(delta_world.checkpoint, lake=delta_world.lake)
    assert result.source_table == Location.of(delta_world.source)
    assert set(result.sink_tables) == set(map(Location.of, delta_world.sinks))
    assert all(len(b.sink_commits) == 2 for b in result.batches)


def test_seed_talk_walk_through_with_delta_native_offsets(tmp_path):
    """Version 0 and 1 hold 8 files each; the offsets are Delta's own (maxFilesPerTrigger=5)."""
    table = tmp_path / "delta_keyval"
    for version in range(2):
        ids = pa.array(range(version * 8192, (version + 1) * 8192), pa.int64())
        write_deltalake(str(table), pa.table({"id": ids}), mode="append", target_file_size=1)
    assert len(DeltaLog(table).commit(0).data_adds) == 8
    ckpt = tmp_path / "delta_stream"
    shutil.copytree(FIXTURES / "native_delta_seed", ckpt)
    table_id = DeltaTable(str(table)).metadata().id
    for path in (ckpt / "offsets").iterdir():
        path.write_text(path.read_text().replace(SEED_RESERVOIR, table_id))

    result = correlate(ckpt, table)
    files = [[(f.version, f.index) for f in b.source_read.files] for b in result.batches]
    assert files == [
        [(0, i) for i in range(5)],  # index 4 = the fifth file of version 0: files 0-4
        [(0, 5), (0, 6), (0, 7)],  # the three left
        [(1, i) for i in range(5)],  # from (0, 7) to (1, 4): files 0-4 of version 1
        [(1, 5), (1, 6), (1, 7)],
        [],  # (1, 7) -> (2, -1): the source moved to the next version, nothing to read
    ]
    assert [b.source_read.rows for b in result.batches] == [5120, 3072, 5120, 3072, 0]
    snapshot = {a.path for a in DeltaLog(table).commit(0).data_adds}
    assert {f.path for b in result.batches[:2] for f in b.source_read.files} == snapshot


def test_landing_files_like_cloud_files_state(file_world):
    result = correlate(file_world.checkpoint, sink_tables=file_world.sinks)
    rows = result.landing_files
    assert sorted(Path(r.path).name for r in rows) == sorted(p.name for p in file_world.landing.iterdir())
    by_batch = {b.batch.batch_id: b.batch for b in result.batches}
    for row in rows:
        assert row.batch_id == row.log_batch
        assert row.discovered_ms == by_batch[row.batch_id].batch_timestamp_ms
        assert row.committed and row.committed_ms == by_batch[row.batch_id].committed_ms
    assert all(len(b.sink_commits) == 1 for b in result.batches)


def test_landing_file_of_an_uncommitted_batch(file_world):
    last = file_world.batches - 1
    remove_log_file(file_world.checkpoint / "commits" / str(last))
    rows = {r.batch_id: r for r in correlate(file_world.checkpoint).landing_files}
    assert rows[last].committed is False and rows[last].committed_ms is None
    assert rows[last - 1].committed is True


def test_batches_whose_source_versions_were_cleaned_up_say_so(delta_world):
    DeltaTable(str(delta_world.source)).alter.set_table_properties({"delta.logRetentionDuration": "interval 0 seconds"})
    append_versions(delta_world.source, 1000, 1)
    DeltaTable(str(delta_world.source)).create_checkpoint()
    DeltaTable(str(delta_world.source)).cleanup_metadata()
    result = correlate(delta_world.checkpoint, delta_world.source)
    problems = [b.source_read.problem for b in result.batches]
    assert all(p and "log cleanup" in p for p in problems[4:]), problems


def test_landing_files_of_a_file_source_unioned_with_another_source():
    """Spark 2.4 fixture: the file source had no offset (`-`) in batch 0, so query batch 1 took
    file-log batch 0: files map through the recorded logOffsets, not by equal numbers."""
    rows = correlate(FIXTURES / "rate_spark24").landing_files
    assert [(Path(r.path).name, r.log_batch, r.batch_id) for r in rows] == [("a.json", 0, 1), ("b.json", 1, 2)]
    assert all(r.committed for r in rows)
