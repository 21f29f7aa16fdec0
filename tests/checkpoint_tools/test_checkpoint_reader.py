"""Reading whole checkpoints written by real queries."""

from __future__ import annotations

from itertools import pairwise

import pytest

from streamops.checkpoint_tools.inspection import inspect_checkpoint
from streamops.core.checkpoint_format.metadata_log import crc_problem, list_log, write_log_file
from streamops.core.checkpoint_format.reader import read_checkpoint, read_query_id
from streamops.core.exceptions import CheckpointNotFoundError
from streamops.core.storage.location import Location


def test_delta_checkpoint(delta_world):
    ckpt = read_checkpoint(delta_world.checkpoint)
    assert ckpt.query_id == delta_world.query_id == read_query_id(delta_world.checkpoint)
    assert ckpt.stream == delta_world.stream
    assert ckpt.latest_planned == ckpt.latest_committed == delta_world.batches - 1
    assert ckpt.uncommitted_batch is None
    assert ckpt.problems == ()
    assert ckpt.state.present is False
    batches = ckpt.batches()
    assert [b.status for b in batches] == ["committed"] * delta_world.batches
    assert batches[0].start[0].kind == "none"
    for before, after in pairwise(batches):
        assert after.start == before.end  # a batch starts where the previous one ended
        assert after.batch_timestamp_ms >= before.batch_timestamp_ms
        assert after.committed_ms >= after.batch_timestamp_ms - 1000


def test_uncommitted_batch_and_window(delta_world):
    (delta_world.checkpoint / "commits" / str(delta_world.batches - 1)).unlink()
    ckpt = read_checkpoint(delta_world.checkpoint, last_batches=2)
    assert ckpt.uncommitted_batch == delta_world.batches - 1
    assert [b.batch_id for b in ckpt.batches()] == [delta_world.batches - 2, delta_world.batches - 1]
    assert ckpt.batches()[0].start is not None  # the offsets before the window are read for it
    assert ckpt.status(delta_world.batches - 1) == "planned"


def test_stateful_checkpoint_reports_its_state_store(rate_world, spark):
    ckpt = read_checkpoint(rate_world.checkpoint)
    assert ckpt.state.present and [o.operator_id for o in ckpt.state.operators] == [0]
    assert ckpt.state.partitions == int(spark.conf.get("spark.sql.shuffle.partitions"))
    assert ckpt.state.latest_version == ckpt.latest_committed + 1
    assert [b.end[0].kind for b in ckpt.batches()] == ["number"] * rate_world.batches


def test_crc_sidecars_spark_wrote_verify_and_catch_edits(delta_world):
    offsets = delta_world.checkpoint / "offsets"
    assert all(crc_problem(f.path) is None for f in list_log(offsets).files)
    path = offsets / "0"
    path.write_bytes(path.read_bytes().replace(b'"batchWatermarkMs":0', b'"batchWatermarkMs":7'))
    assert crc_problem(path).kind == "crc_mismatch"
    write_log_file(path, path.read_bytes())  # our writer keeps the sidecar in step
    assert crc_problem(path) is None


def test_temp_files_are_listed_not_read(delta_world):
    temp = delta_world.checkpoint / "offsets" / ".7.0a1b2c3d-4e5f.tmp"
    temp.write_text("v1\n{")
    ckpt = read_checkpoint(delta_world.checkpoint)
    assert ckpt.offsets_listing.temp_files == (Location.of(temp),)
    assert ckpt.problems == ()


def test_not_a_checkpoint(tmp_path):
    with pytest.raises(CheckpointNotFoundError):
        read_checkpoint(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointNotFoundError):
        read_checkpoint(tmp_path / "empty")


def test_inspect_report_holds_everything_the_issue_lists(file_world):
    report = inspect_checkpoint(file_world.checkpoint)
    assert report["query_id"] == file_world.query_id
    assert len(report["batches"]) == file_world.batches
    first = report["batches"][0]
    assert first["sources"] == [{"index": 0, "source_id": "0", "kind": "file", "offset": {"logOffset": 0}}]
    assert first["batch_timestamp_ms"] and first["committed_ms"] and first["watermark_ms"] == 0
    assert report["conf"]["spark.sql.shuffle.partitions"]
    assert report["source_logs"] == [
        {
            "source_id": "0",
            "kind": "file_source",
            "files": file_world.batches,
            "latest_log_batch": file_world.batches - 1,
            "entries": file_world.batches,
            "compact_batches": [3, 7],
            "compact_interval": 4,
            "problems": [],
        }
    ]
    assert report["state"]["present"] is False and report["problems"] == []
