"""State stores of real stateful queries: inspect, doctor and rewind read them without Spark.

Each kind of state Spark keeps is produced by a real query: an aggregation (HDFS-backed store,
offset log v2), dropDuplicates with a watermark, a stream-stream join (four stores per
partition), applyInPandasWithState, an aggregation on RocksDB with changelog checkpointing
and state checkpoint format v2 (uuid-named files pinned by the commit log), and
transformWithStateInPandas (operator metadata v2, `_stateSchema/`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from stateful_worlds import (
    OFFSET_LOG_V2,
    ROCKSDB_CHANGELOG_V2,
    ROCKSDB_ONLY,
    aggregation,
    deduplication,
    grouped_state,
    run_available,
    stream_join,
    transform_with_state,
    write_landing,
)

from streamops.checkpoint_tools.doctor import DoctorTarget, diagnose
from streamops.checkpoint_tools.inspection import inspect_checkpoint
from streamops.checkpoint_tools.rewind import apply_rewind, plan_rewind
from streamops.core.checkpoint_format.reader import read_checkpoint

FILES = 3
KINDS = {
    "aggregation": (aggregation, OFFSET_LOG_V2, ("default",), "hdfs"),
    "dedup": (deduplication, {}, ("default",), "hdfs"),
    "join": (
        stream_join,
        {},
        ("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"),
        "hdfs",
    ),
    "grouped_state": (grouped_state, {}, ("default",), "hdfs"),
    "rocksdb": (aggregation, ROCKSDB_CHANGELOG_V2, ("default",), "rocksdb"),
    "transform_with_state": (transform_with_state, ROCKSDB_ONLY, ("default",), "rocksdb"),
}


@pytest.fixture(scope="module")
def stateful(spark, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stateful")
    write_landing(root / "landing", 0, FILES)
    checkpoints = {}
    for name, (query, conf, _, _) in KINDS.items():
        checkpoints[name] = root / "checkpoints" / name
        run_available(spark, query, root / "landing", checkpoints[name], f"state_{name}", conf=conf)
    return checkpoints


@pytest.fixture
def copy_of(stateful, tmp_path):
    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(stateful[name], target)
        return target

    return copy


@pytest.mark.parametrize("name", list(KINDS))
def test_inspect_describes_every_operator_and_store(stateful, spark, name):
    _, _, stores, provider = KINDS[name]
    report = inspect_checkpoint(stateful[name])
    state = report["state"]
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    assert state["present"] and state["provider"] == provider
    # watermark queries may run one more batch without data, to advance the watermark
    assert report["latest_committed"] >= FILES - 1
    assert state["latest_version"] == report["latest_committed"] + 1
    operator = state["operators"][0]
    assert operator["stores"] == sorted(stores)
    assert operator["partitions"] == operator["declared_partitions"] == partitions
    assert operator["provider"] == provider and operator["name"]
    assert operator["size_bytes"] > 0 and operator["schema_files"]
    assert state["latest_version"] in state["restorable_batches"]
    diagnosis = diagnose(DoctorTarget(stateful[name]))
    assert [f.code for f in diagnosis.findings if f.severity != "info"] == []


def test_offset_log_v2_and_commit_v2_read_like_v1(stateful):
    keyed = read_checkpoint(stateful["aggregation"])
    assert {b.log_version for b in keyed.offsets.values()} == {2}
    assert [b.end[0].kind for b in keyed.batches()] == ["file"] * FILES
    assert keyed.offsets[FILES - 1].source_ids == ("0",)
    assert not [p for p in keyed.problems if p.kind == "unknown_version"]
    pinned = read_checkpoint(stateful["rocksdb"])
    commit = pinned.commits[FILES - 1]
    assert commit.log_version >= 2
    uuids = commit.state_unique_ids["0"]
    on_disk = {p.name for p in (stateful["rocksdb"] / "state" / "0" / "0").iterdir()}
    assert any(name.startswith(f"{FILES}_{uuids[0][0]}") for name in on_disk)


@pytest.mark.parametrize("name, victim", [("join", "1/right-keyWithIndexToValue"), ("rocksdb", "0")])
def test_doctor_names_the_missing_state_file(copy_of, name, victim):
    checkpoint = copy_of(name)
    store = checkpoint / "state" / "0" / victim
    version = lambda p: int(p.name.split(".")[0].split("_")[0])
    files = [p for p in store.iterdir() if p.name[0].isdigit() and not p.is_dir()]
    newest = max(map(version, files))
    for path in files:
        if version(path) == newest:
            path.unlink()  # every file of the version: RocksDB may hold both a zip and a changelog
    diagnosis = diagnose(DoctorTarget(checkpoint))
    missing = [f for f in diagnosis.findings if f.code == "state_missing"]
    assert missing and missing[0].severity == "error"
    assert f"{store}/{newest}" in missing[0].message


def test_orphaned_state_versions_are_reported(copy_of):
    checkpoint = copy_of("aggregation")
    partition = checkpoint / "state" / "0" / "0"
    shutil.copy(partition / f"{FILES}.delta", partition / f"{FILES + 5}.delta")
    codes = {f.code: f for f in diagnose(DoctorTarget(checkpoint)).findings}
    assert codes["state_orphaned_versions"].evidence["versions"] == [FILES + 5]


def test_stateful_rewind_replays_to_the_same_result(spark, tmp_path):
    landing = tmp_path / "landing"
    write_landing(landing, 0, 6)
    clean = run_available(spark, aggregation, landing, tmp_path / "clean", "agg_clean", mode="complete")
    checkpoint = tmp_path / "rewound"
    run_available(spark, aggregation, landing, checkpoint, "agg_first", mode="complete")
    plan = plan_rewind(checkpoint, 3)
    assert plan.state_remove and all(int(p.name.split(".")[0]) > 3 for p in plan.state_remove)
    apply_rewind(plan)
    assert read_checkpoint(checkpoint).state.latest_version == 3
    replayed = run_available(spark, aggregation, landing, checkpoint, "agg_replayed", mode="complete")
    assert sorted(map(tuple, replayed)) == sorted(map(tuple, clean))
    assert read_checkpoint(checkpoint).latest_committed == 5
