"""Offset and commit logs: real Spark 4.2 files and fixtures from other versions and sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamops.core.checkpoint_format.metadata_log import list_log
from streamops.core.checkpoint_format.offset_log import (
    classify_offset,
    kafka_regressions,
    parse_offsets,
)
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.delta_format.source_offsets import DeltaSourceOffset
from streamops.core.exceptions import MalformedLogFileError

FIXTURES = Path(__file__).parent / "fixtures"


def test_native_delta_offsets_parse_exactly_like_ours(delta_world):
    native = read_checkpoint(FIXTURES / "native_delta_seed")
    ours = read_checkpoint(delta_world.checkpoint)
    seed_end = native.offsets[0].sources[0]
    assert seed_end.kind == "delta"
    assert seed_end.delta == DeltaSourceOffset(0, 4, True, "f3b2a7c4-61d2-4a7e-9c2e-5d0e8b1a9f10")
    our_end = ours.offsets[0].sources[0]
    assert our_end.kind == "delta"
    # both shapes go through the one parser of the shared core, field for field
    assert our_end.delta == DeltaSourceOffset.from_json(our_end.raw)
    assert seed_end.delta == DeltaSourceOffset.from_json(seed_end.raw)
    assert set(our_end.value) == set(seed_end.value)
    assert [b.sources[0].delta.reservoir_version for b in native.offsets.values()] == [0, 0, 1, 1, 2]
    assert native.offsets[4].sources[0].delta.index == -1


@pytest.mark.parametrize(
    "raw, kind",
    [
        ('{"sourceVersion":1,"reservoirId":"x","reservoirVersion":0,"index":4,"isStartingVersion":true}', "delta"),
        (
            '{"sourceVersion": 1, "reservoirId": "x", "reservoirVersion": 2, "index": 0, "isStartingVersion": false}',
            "delta",
        ),
        ('{"logOffset":11}', "file"),
        ('{"events":{"0":42,"1":40}}', "kafka"),
        ("51", "number"),
        ('{"offset":10,"timestamp":1000}', "rate_micro_batch"),
        ("-", "none"),
        ('{"shardId-0001":"4959"}', "unknown"),
        ("not json at all", "unknown"),
    ],
)
def test_classifies_every_source_shape(raw, kind):
    assert classify_offset(raw).kind == kind


def test_kafka_partitions_going_backwards():
    before = classify_offset('{"events":{"0":42,"1":40}}')
    after = classify_offset('{"events":{"0":41,"1":50}}')
    assert kafka_regressions(before, after) == {"events/0": (42, 41)}
    assert kafka_regressions(before, classify_offset('{"events":{"0":43,"1":40}}')) == {}


def test_fixture_checkpoints_of_other_sources_read_without_problems():
    kafka = read_checkpoint(FIXTURES / "kafka_spark35")
    assert [b.sources[0].kind for b in kafka.offsets.values()] == ["kafka"] * 3
    assert kafka.source_logs[0].kind == "other"
    rate = read_checkpoint(FIXTURES / "rate_spark24")
    assert [[s.kind for s in b.sources] for b in rate.offsets.values()] == [
        ["number", "none"],
        ["number", "file"],
        ["number", "file"],
    ]
    assert [s.kind for s in rate.source_logs] == ["other", "file_source"]
    micro = read_checkpoint(FIXTURES / "rate_micro_batch_spark34")
    assert micro.offsets[1].sources[0].value == {"offset": 20, "timestamp": 2000}
    for ckpt in (kafka, rate, micro):
        assert ckpt.problems == () and ckpt.latest_committed == ckpt.latest_planned


def test_unknown_log_version_is_reported_not_fatal():
    ckpt = read_checkpoint(FIXTURES / "future_spark")
    assert ckpt.latest_planned == 1
    assert [p.kind for p in ckpt.problems] == ["unknown_version"]
    assert "v9" in ckpt.problems[0].detail


def test_real_offsets_record_time_watermark_and_conf(delta_world, spark):
    ckpt = read_checkpoint(delta_world.checkpoint)
    batch = ckpt.offsets[0]
    assert batch.log_version == 1
    assert batch.metadata.batch_timestamp_ms > 1_600_000_000_000
    assert batch.metadata.batch_watermark_ms == 0
    assert batch.metadata.conf["spark.sql.shuffle.partitions"] == spark.conf.get("spark.sql.shuffle.partitions")
    assert ckpt.commits[0].next_batch_watermark_ms == 0


@pytest.mark.parametrize(
    "damage, kind",
    [
        (lambda data: b"", "empty"),
        (lambda data: data[: data.index(b"\n") + 40], "truncated"),
        (lambda data: data[:-10], "truncated"),
        (lambda data: b"v1", "truncated"),
        (lambda data: b"garbage\n" + data, "corrupt"),
    ],
)
def test_damaged_offsets_files_raise_with_their_kind(delta_world, damage, kind):
    path = delta_world.checkpoint / "offsets" / "1"
    path.write_bytes(damage(path.read_bytes()))
    log_file = list_log(path.parent).get(1)
    with pytest.raises(MalformedLogFileError) as error:
        parse_offsets(log_file)
    assert error.value.kind == kind
