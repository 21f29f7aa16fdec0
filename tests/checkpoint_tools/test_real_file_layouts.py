"""Byte layouts real writers produce that once gave false alarms, and what a verdict skipped."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import orjson
import pytest
from checkpoint_worlds import append_versions
from test_doctor import doctor, finding, found

from streamops.checkpoint_tools.doctor import DoctorTarget, diagnose
from streamops.checkpoint_tools.inspection import inspect_checkpoint
from streamops.checkpoint_tools.skipped_checks import SINK_CHECKS, SOURCE_CHECKS
from streamops.core.checkpoint_format.metadata_log import hadoop_crc, list_log
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.delta_format.log import DeltaLog, parse_commit

FIXTURES = Path(__file__).parent / "fixtures"
META = b'{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}'


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    (path.parent / f".{path.name}.crc").write_bytes(hadoop_crc(data))


def test_offsets_file_ending_in_a_newline_is_not_a_phantom_source(tmp_path):
    """Spark 2.1 and 4.0 sometimes end an offsets file with a newline after the last offset."""
    ckpt = tmp_path / "rate_spark24"
    shutil.copytree(FIXTURES / "rate_spark24", ckpt)
    path = ckpt / "offsets" / "1"
    write(path, path.read_bytes() + b"\n")
    report = inspect_checkpoint(ckpt)
    widths = {b["batch_id"]: len(b["sources"]) for b in report["batches"]}
    assert widths == {0: 2, 1: 2, 2: 2}
    diagnosis = diagnose(DoctorTarget(ckpt))
    assert "corrupt_log_file" not in {f.code for f in diagnosis.findings}
    assert diagnosis.exit_code == 0


def test_offset_log_v2_with_named_sources(tmp_path):
    ckpt = tmp_path / "named"
    write(ckpt / "metadata", b'{"id":"2f7a0c1e-0000-4000-8000-000000000001"}')
    kafka = b'{"events":{"0":150,"1":90}}'
    for batch, files in ((0, 0), (1, 3)):
        body = b"v2\n" + META + b"\nkafka_in:" + kafka + b"\nlanding:" + b'{"logOffset":%d}' % files + b"\n"
        write(ckpt / "offsets" / str(batch), body)
        write(ckpt / "commits" / str(batch), b'v1\n{"nextBatchWatermarkMs":0}')
    batch = read_checkpoint(ckpt).offsets[1]
    assert batch.log_version == 2 and batch.source_ids == ("kafka_in", "landing")
    assert [s.kind for s in batch.sources] == ["kafka", "file"]
    report = inspect_checkpoint(ckpt)
    assert [s["source_id"] for s in report["batches"][1]["sources"]] == ["kafka_in", "landing"]
    assert report["problems"] == []


def test_offset_log_v2_line_without_a_source_key_is_corrupt(tmp_path):
    ckpt = tmp_path / "broken"
    write(ckpt / "metadata", b'{"id":"2f7a0c1e-0000-4000-8000-000000000002"}')
    write(ckpt / "offsets" / "0", b"v2\n" + META + b'\n{"logOffset":0}')
    problems = read_checkpoint(ckpt).problems
    assert [p.kind for p in problems] == ["corrupt"] and "<source>:<offset>" in problems[0].detail


def test_a_newer_unknown_offset_log_version_is_refused_clearly(tmp_path):
    ckpt = tmp_path / "future"
    write(ckpt / "metadata", b'{"id":"2f7a0c1e-0000-4000-8000-000000000003"}')
    write(ckpt / "offsets" / "0", b"v3\n" + META + b"\nsomething new")
    problems = read_checkpoint(ckpt).problems
    assert [p.kind for p in problems] == ["unknown_version"]
    assert "v3" in problems[0].detail and "v1, v2" in problems[0].detail


def test_temporary_files_and_their_checksums_are_reported(tmp_path):
    directory = tmp_path / "commits"
    write(directory / "0", b'v1\n{"nextBatchWatermarkMs":0}')
    (directory / ".1.3c9d.tmp").write_bytes(b"v1\n")
    (directory / "..1.3c9d.tmp.crc").write_bytes(hadoop_crc(b"v1\n"))
    listing = list_log(directory)
    assert sorted(p.name for p in listing.temp_files) == ["..1.3c9d.tmp.crc", ".1.3c9d.tmp"]
    assert listing.batch_ids == (0,)


def test_backlog_age_of_a_commit_without_commit_info(delta_world):
    """Old writers and other engines write no commitInfo: date the commit by its log file."""
    append_versions(delta_world.source, 1000, 2, rows=3)
    log_file = delta_world.source / "_delta_log" / f"{5:020d}.json"
    actions = [line for line in log_file.read_bytes().splitlines() if b"commitInfo" not in line]
    log_file.write_bytes(b"\n".join(actions) + b"\n")
    two_hours_ago = time.time() - 7200
    os.utime(log_file, (two_hours_ago, two_hours_ago))
    assert DeltaLog(delta_world.source).commit(5).timestamp_ms is None
    assert DeltaLog(delta_world.source).commit_time_ms(5) == pytest.approx(two_hours_ago * 1000, abs=1000)
    diagnosis = doctor(delta_world)
    assert ("backlog", "warning") in found(diagnosis)
    assert finding(diagnosis, "backlog").evidence["seconds"] >= 7100


def test_a_verdict_lists_the_checks_it_could_not_run(delta_world):
    unnamed = diagnose(DoctorTarget(delta_world.checkpoint))
    skipped = {s.checks: s.reason for s in unnamed.skipped}
    ckpt = read_checkpoint(delta_world.checkpoint)
    table_id = ckpt.offsets[ckpt.latest_planned].sources[0].delta.reservoir_id
    assert SOURCE_CHECKS in skipped and "--source-table" in skipped[SOURCE_CHECKS]
    assert table_id in skipped[SOURCE_CHECKS] and SINK_CHECKS in skipped
    assert unnamed.to_json()["skipped"] == [s.to_json() for s in unnamed.skipped]
    assert doctor(delta_world).skipped == ()


def test_rows_of_a_file_with_a_deletion_vector_exclude_the_deleted_ones():
    """An add action as Delta's protocol writes it for a file with a deletion vector."""
    add = {
        "path": "part-00000-1.snappy.parquet",
        "partitionValues": {},
        "size": 1024,
        "modificationTime": 1700000000000,
        "dataChange": True,
        "stats": '{"numRecords":10,"minValues":{"id":0},"maxValues":{"id":9},"nullCount":{"id":0}}',
        "deletionVector": {
            "storageType": "u",
            "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
            "offset": 4,
            "sizeInBytes": 40,
            "cardinality": 3,
        },
    }
    commit = parse_commit(7, orjson.dumps({"add": add}) + b"\n")
    assert commit.adds[0].num_records == 7 and commit.adds[0].has_deletion_vector
