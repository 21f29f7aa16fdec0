"""The native connector's deleted keys: a log of markers appended once per batch (no MERGE),
read as the newest marker per key, kept small by an upkeep on the checkpoint cadence, and
replayed without loss or duplicate after a crash between the append and the current state's
MERGE."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import open_table, read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.cdc import merge_native
from streamops.pipeline.cdc.cdc_tables import CdcTarget
from streamops.pipeline.cdc.change_apply import EVENT_TIME, KEY, OP, ORDER, SEQUENCE, BatchSummary
from streamops.pipeline.delta_connector.native_checkpoints import CHECKPOINT_EVERY

STREAM = "silver_cdc"
RETENTION_SECONDS = 3600.0
OLD = datetime(2020, 1, 1, tzinfo=timezone.utc)
"""Source time of the first batches' changes: their deletes' markers expire in later batches."""
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
SCHEMA = (
    f"id long, name string, {OP} string, {SEQUENCE} string, {KEY} string, {ORDER} long, "
    f"{EVENT_TIME} timestamp, _ingest_time timestamp, _source_file string, _bronze_batch_id long, "
    "_schema_hash string, _rescued_data string"
)
NAMES = [column.split()[0] for column in SCHEMA.split(", ")]


def change(op: str, key: int, seq: int, at: datetime, order: int = 0) -> tuple:
    name = None if op == "d" else f"row {key} at {seq}"
    return (key, name, op, f"s{seq:06d}", f"[{key}]", order, at, at, "changes.ndjson", 0, "h", None)


def batch(spark, changes: list[tuple]):
    return spark.createDataFrame(changes, SCHEMA)


def batches() -> list[list[tuple]]:
    """Batch i inserts key 100+i and deletes key i (inserted by the first batch); the first five
    come from a source time older than the retention."""
    first = [change("c", key, key, OLD, key) for key in range(2 * CHECKPOINT_EVERY)]
    found = [first]
    for i in range(1, 2 * CHECKPOINT_EVERY + 2):
        at = OLD if i <= 5 else NOW + timedelta(seconds=i)
        found.append([change("c", 100 + i, 1000 + 2 * i, at, 0), change("d", i, 1001 + 2 * i, at, 1)])
    return found


def apply(spark, target: CdcTarget, changes: list[tuple], batch_id: int) -> None:
    rows = [dict(zip(NAMES, c)) for c in changes]
    summary = BatchSummary(
        row_changes=sum(1 for c in rows if c[OP] != "t"),
        deletes=sum(1 for c in rows if c[OP] == "d"),
        truncates=tuple(sorted((c[SEQUENCE], c[EVENT_TIME]) for c in rows if c[OP] == "t")),
        newest_time=max(c[EVENT_TIME] for c in rows),
    )
    commit = BatchCommitInfo(STREAM, batch_id)
    merge_native.apply_native(batch(spark, changes), target, commit, RETENTION_SECONDS, summary)


def current(target: CdcTarget) -> dict[int, str]:
    return {r["id"]: r["name"] for r in read_delta(target.current, columns=["id", "name"]).to_pylist()}


def expected() -> dict[int, str]:
    rows = {key: f"row {key} at {key}" for key in range(2 * CHECKPOINT_EVERY)}
    for i in range(1, 2 * CHECKPOINT_EVERY + 2):
        rows[100 + i] = f"row {100 + i} at {1000 + 2 * i}"
        rows.pop(i, None)
    return rows


def markers(target: CdcTarget) -> list[dict]:
    return sorted(read_delta(target.deleted_keys).to_pylist(), key=lambda m: m["key"])


def target_at(tmp_path) -> CdcTarget:
    return CdcTarget.of(LakeLayout.at(tmp_path / "lake"), "public.items", ("id",), history=False)


def test_markers_are_appended_expire_and_are_compacted_on_the_checkpoint_cadence(spark, tmp_path):
    target = target_at(tmp_path)
    for batch_id, changes in enumerate(batches()):
        apply(spark, target, changes, batch_id)
    assert current(target) == expected()

    markers = read_delta(target.deleted_keys).to_pylist()
    assert sorted(int(m["key"].strip("[]")) for m in markers) == list(range(6, 2 * CHECKPOINT_EVERY + 2)), (
        "the markers of the five old deletes expired; the others stay, one row each"
    )
    history = open_table(target.deleted_keys).history()
    operations = [h["operation"] for h in history]
    assert operations.count("MERGE") == 0 and "DELETE" in operations and "OPTIMIZE" in operations
    appends = operations.count("STREAMING UPDATE")
    assert len(open_table(target.deleted_keys).file_uris()) < appends, "the appends' files were compacted"

    late = [change("u", 7, 1010, NOW), change("u", 3, 1000, NOW, 1)]
    apply(spark, target, late, 100)
    after = current(target)
    assert 7 not in after, "an update older than the key's delete (its marker kept) stays dropped"
    assert after[3] == "row 3 at 1000", "a key whose marker expired takes any change (documented limit)"


def test_a_crash_between_the_markers_append_and_the_merge_replays_to_the_same_state(spark, tmp_path, monkeypatch):
    crashed, clean = target_at(tmp_path / "crashed"), target_at(tmp_path / "clean")
    changes = batches()[:3]
    for batch_id, rows in enumerate(changes):
        apply(spark, clean, rows, batch_id)
    apply(spark, crashed, changes[0], 0)
    apply(spark, crashed, changes[1], 1)

    def crash(*args, **kwargs):
        raise RuntimeError("killed between the deleted keys and the current state")

    with monkeypatch.context() as patched:
        patched.setattr(merge_native, "_merge_current", crash)
        with pytest.raises(RuntimeError):
            apply(spark, crashed, changes[2], 2)
    assert len(read_delta(crashed.deleted_keys).to_pylist()) == 2, "the batch's markers were appended"
    apply(spark, crashed, changes[2], 2)
    apply(spark, crashed, changes[2], 2)
    assert current(crashed) == current(clean)
    assert markers(crashed) == markers(clean)
    assert open_table(crashed.current).version() == open_table(clean.current).version()
