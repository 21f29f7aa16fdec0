"""Rewind, then restart the real query: exactly the expected batches run again, nothing doubles."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from checkpoint_worlds import (
    build_file_world,
    run_delta_stream,
    run_file_stream,
    sink_rows,
    source_rows,
)

from streamops.checkpoint_tools.correlation import correlate
from streamops.checkpoint_tools.doctor import DoctorTarget, diagnose
from streamops.checkpoint_tools.exceptions import RewindError
from streamops.checkpoint_tools.rewind import apply_rewind, plan_rewind
from streamops.core.checkpoint_format.metadata_log import remove_log_file
from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.storage.location import Location
from streamops.pipeline.delta_connector.batch_writer import write_batch


def snapshot(root: Path | Location) -> dict[str, tuple[bytes, float]]:
    root = Path(root)
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime) for p in root.rglob("*") if p.is_file()}


def test_plan_changes_nothing_and_lists_the_replay(delta_world):
    before = snapshot(delta_world.lake.root)
    plan = plan_rewind(delta_world.checkpoint, 4, delta_world.source, delta_world.sinks)
    assert snapshot(delta_world.lake.root) == before
    assert plan.replayed_batch_ids == (4, 5, 6)
    assert [b.source_read.versions for b in plan.replayed] == [(3,), (3,), (4,)]
    assert {s.table for s in plan.sinks} == set(map(Location.of, delta_world.sinks))
    for sink in plan.sinks:
        assert sink.txn == 6 and sink.skipped_batches == (4, 5, 6) and sink.written_batches == ()
        assert sink.restore_version is not None
    assert any("skipped by the idempotent writer" in w for w in plan.warnings)
    assert len(plan.remove) == 6


def test_rewind_then_restart_replays_exactly_and_duplicates_nothing(spark, delta_world, tmp_path):
    expected_rows = source_rows(delta_world.source)
    assert sink_rows(delta_world.sinks) == expected_rows
    original = tmp_path / "original"
    original.mkdir()
    for name in ("offsets", "commits"):
        (original / name).mkdir()
        for path in (delta_world.checkpoint / name).iterdir():
            (original / name / path.name).write_bytes(path.read_bytes())

    result = apply_rewind(plan_rewind(delta_world.checkpoint, 4, delta_world.source, delta_world.sinks))
    assert result.backup.parent == Location.of(delta_world.checkpoint.parent) and result.backup.name.startswith(
        ".silver_core.backup-"
    )
    assert not filecmp.dircmp(Path(result.backup / "offsets"), original / "offsets").diff_files
    assert sorted(p.name for p in (delta_world.checkpoint / "offsets").iterdir() if p.name.isdigit()) == [
        "0",
        "1",
        "2",
        "3",
    ]
    assert delta_world.lake.checkpoint_dirs() == [Location.of(delta_world.checkpoint)]  # the backup is not a stream

    replayed, query_id = run_delta_stream(
        spark,
        delta_world.source,
        delta_world.checkpoint,
        delta_world.sinks,
        delta_world.stream,
        connector=delta_world.connector,
    )
    assert replayed == [4, 5, 6]
    assert query_id == delta_world.query_id  # metadata kept: same query
    assert sink_rows(delta_world.sinks) == expected_rows  # skipped by txn: no duplicate
    for batch in (4, 5, 6):  # re-planned exactly as before
        assert _offset_line(delta_world.checkpoint, batch) == _offset_line(original, batch)


def _offset_line(checkpoint: Path, batch: int) -> str:
    return (checkpoint / "offsets" / str(batch)).read_text().split("\n")[2]


def test_rewind_refills_a_sink_that_lost_batches(spark, delta_world):
    """The doctor's fix for sink_txn_behind, end to end: rewind to txn + 1 and restart."""
    reads = correlate(delta_world.checkpoint, delta_world.source).batches
    for parity, sink in enumerate(delta_world.sinks):
        shutil.rmtree(sink)
        for batch in reads[:2]:
            ids = _file_ids(delta_world.source, batch)
            rows = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})
            rows = rows.filter(pc.equal(pc.bit_wise_and(rows["id"], 1), parity))
            write_batch(sink, rows, BatchCommitInfo(delta_world.stream, batch.batch.batch_id, delta_world.query_id))
    target = DoctorTarget(delta_world.checkpoint, delta_world.source, delta_world.sinks, delta_world.stream)
    behind = [f for f in diagnose(target).findings if f.code == "sink_txn_behind"]
    assert behind and "--to-batch 2" in behind[0].fix

    plan = plan_rewind(delta_world.checkpoint, 2, delta_world.source, delta_world.sinks)
    assert all(s.written_batches == (2, 3, 4, 5, 6) and s.skipped_batches == () for s in plan.sinks)
    apply_rewind(plan)
    replayed, _ = run_delta_stream(
        spark,
        delta_world.source,
        delta_world.checkpoint,
        delta_world.sinks,
        delta_world.stream,
        connector=delta_world.connector,
    )
    assert replayed == [2, 3, 4, 5, 6]
    assert sink_rows(delta_world.sinks) == source_rows(delta_world.source)
    assert diagnose(target).findings == ()


def _file_ids(source: Path, batch) -> list[int]:
    return [i for f in batch.source_read.files for i in pq.read_table(source / f.path).column("id").to_pylist()]


def test_file_source_rewind_replays_the_same_files(spark, file_world):
    landing = correlate(file_world.checkpoint).landing_files
    original = {b: sorted(Path(f.path).name for f in landing if f.batch_id == b) for b in range(file_world.batches)}
    apply_rewind(plan_rewind(file_world.checkpoint, 5, sink_tables=file_world.sinks))
    seen, _ = run_file_stream(spark, file_world.landing, file_world.checkpoint, file_world.sinks[0], file_world.stream)
    assert [b for b, _ in seen] == [5, 6, 7, 8, 9]
    assert {b: sorted(Path(f).name for f in files) for b, files in seen} == {b: original[b] for b in range(5, 10)}
    assert sink_rows(file_world.sinks) == list(range(10))


def test_file_source_rewind_after_spark_compacted_and_deleted(spark, tmp_path):
    spark.conf.set("spark.sql.streaming.minBatchesToRetain", "3")
    try:
        world = build_file_world(spark, tmp_path, files=13)
        plan = plan_rewind(world.checkpoint, 11, sink_tables=world.sinks)
        assert plan.file_sources[0].keep_before_log_batch == 11 and plan.file_sources[0].entries_released == 2
        apply_rewind(plan)
        seen, _ = run_file_stream(spark, world.landing, world.checkpoint, world.sinks[0], world.stream)
    finally:
        spark.conf.unset("spark.sql.streaming.minBatchesToRetain")
    assert [b for b, _ in seen] == [11, 12]
    assert sink_rows(world.sinks) == list(range(13))


def test_refusals(delta_world, rate_world):
    with pytest.raises(RewindError, match="between 0 and 6"):
        plan_rewind(delta_world.checkpoint, 7)
    first_delta = rate_world.checkpoint / "state" / "0" / "1" / "1.delta"
    first_delta.unlink()
    with pytest.raises(RewindError, match=r"state version 1, which cannot be loaded: .*state/0/1/1\.delta is missing"):
        plan_rewind(rate_world.checkpoint, 1)
    remove_log_file(delta_world.checkpoint / "offsets" / "2")
    with pytest.raises(RewindError, match="offsets/2"):
        plan_rewind(delta_world.checkpoint, 3)
