"""The file-source log reader against logs Spark really wrote (with compaction and deletion)."""

from __future__ import annotations

from pathlib import Path

import pytest
from checkpoint_worlds import FILE_COMPACT_INTERVAL, build_file_world

from streamops.core.checkpoint_format.file_source_log import (
    FileSourceEntry,
    read_file_source_log,
    scan_file_source_log,
    truncate_file_source_log,
)
from streamops.core.exceptions import (
    CheckpointNotFoundError,
    MalformedLogFileError,
    NotAFileSourceLogError,
)

FIXTURES = Path(__file__).parent / "fixtures"


def test_reads_every_landing_file_once_with_its_batch(file_world):
    entries = read_file_source_log(file_world.checkpoint)
    landing = sorted(p.name for p in file_world.landing.iterdir())
    assert sorted(Path(e.path).name for e in entries) == landing
    assert [e.batch_id for e in entries] == list(range(file_world.batches))
    assert all(isinstance(e, FileSourceEntry) and e.timestamp_ms > 0 for e in entries)
    log = scan_file_source_log(file_world.checkpoint)
    assert log.compact_batch_ids == (3, 7)
    assert log.compact_interval == FILE_COMPACT_INTERVAL


def test_reads_compacted_log_after_spark_deleted_the_files_it_replaced(spark, tmp_path):
    spark.conf.set("spark.sql.streaming.minBatchesToRetain", "3")
    try:
        world = build_file_world(spark, tmp_path, files=13)
    finally:
        spark.conf.unset("spark.sql.streaming.minBatchesToRetain")
    names = sorted(p.name for p in (world.checkpoint / "sources" / "0").iterdir() if not p.name.startswith("."))
    assert "0" not in names and "3.compact" not in names, names  # Spark really deleted them
    entries = read_file_source_log(world.checkpoint)
    assert [e.batch_id for e in entries] == list(range(13))
    assert len({e.path for e in entries}) == 13


def test_missing_source_dir_means_no_files_yet(delta_world):
    assert read_file_source_log(delta_world.checkpoint, 0) == []


def test_missing_checkpoint_is_an_error(tmp_path):
    with pytest.raises(CheckpointNotFoundError):
        read_file_source_log(tmp_path / "nope")


def test_rate_and_kafka_source_logs_are_not_file_source_logs(rate_world):
    with pytest.raises(NotAFileSourceLogError):
        read_file_source_log(rate_world.checkpoint, 0)
    with pytest.raises(NotAFileSourceLogError):
        read_file_source_log(FIXTURES / "kafka_spark35", 0)


def test_spark24_file_source_next_to_a_rate_source(tmp_path):
    entries = read_file_source_log(FIXTURES / "rate_spark24", 1)
    assert entries == [
        FileSourceEntry("file:///landing/a.json", 1502872589500, 0),
        FileSourceEntry("file:///landing/b.json", 1502872600000, 1),
    ]


def test_truncated_file_is_reported_not_skipped(file_world):
    newest = file_world.checkpoint / "sources" / "0" / str(file_world.batches - 1)
    newest.write_bytes(newest.read_bytes()[:-12])
    with pytest.raises(MalformedLogFileError) as error:
        read_file_source_log(file_world.checkpoint)
    assert error.value.kind == "truncated"
    log = scan_file_source_log(file_world.checkpoint)
    assert len(log.entries) == file_world.batches - 1 and log.problems[0].kind == "truncated"


def test_truncate_rewrites_compacted_files_spark_already_deleted(file_world):
    directory = file_world.checkpoint / "sources" / "0"
    for batch in range(7):  # what Spark's cleanup leaves after 7.compact: 7.compact, 8, 9
        for name in (str(batch), f"{batch}.compact"):
            (directory / name).unlink(missing_ok=True)
            (directory / f".{name}.crc").unlink(missing_ok=True)
    before = read_file_source_log(file_world.checkpoint)
    actions = truncate_file_source_log(scan_file_source_log(file_world.checkpoint), keep_before=6)
    assert any(a.endswith("3.compact") for a in actions)  # rewritten: Spark needs it for batch 5
    after = read_file_source_log(file_world.checkpoint)
    assert after == [e for e in before if e.batch_id < 6]
    assert sorted(p.name for p in directory.iterdir() if not p.name.startswith(".")) == ["3.compact", "4", "5"]
    # the rewritten compact file is byte-for-byte what Spark writes (v1 + json4s lines)
    lines = (directory / "3.compact").read_text().split("\n")
    assert lines[0] == "v1" and lines[1].startswith('{"path":"file://') and lines[1].endswith(',"batchId":0}')
