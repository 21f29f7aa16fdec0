"""CDC from landing files of recorded Debezium events, through bronze and the silver MERGE, on
each Delta connector: the silver tables equal the database, whatever the wrapper, the order the
changes arrive in or how often they arrive."""

from __future__ import annotations

import json
import random

import pytest
from cdc_landing import (
    COLUMNS,
    DATABASE,
    KEYS,
    assert_batches_tie_to_their_merges,
    current_rows,
    drain,
    land,
    recorded,
    values,
)

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.cdc.cdc_settings import CdcSettings
from streamops.pipeline.cdc.cdc_stream import CdcGroupWriter
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.pipeline_events import Unmonitored
from streamops.pipeline.registry.event_groups import EventGroupsReader
from streamops.pipeline.silver.silver_stream import SilverSettings


def land_in_two_files(landing, recording: str) -> None:
    lines = values(recorded(recording))
    land(landing, "changes-1.ndjson", lines[:12])
    land(landing, "changes-2.ndjson", lines[12:])


def assert_database_tables(lake: LakeLayout) -> None:
    for table, rows in DATABASE.items():
        assert current_rows(lake, table) == rows, table
    rescued = read_delta(lake.silver("public.order_lines"), columns=["order_id", "_rescued_data"]).to_pylist()
    assert [r["order_id"] for r in rescued if r["_rescued_data"] and '"seven"' in r["_rescued_data"]] == [103]


def test_recorded_changes_become_the_database_tables(spark, connector, tmp_path):
    """The recording without Kafka Connect's wrapper, without history; the wrapped one, with
    history, is the next test's (each wrapper reads alike in bronze, test_cdc_envelope.py)."""
    land_in_two_files(tmp_path / "landing", "postgres-plain.jsonl")
    lake = LakeLayout.at(tmp_path / "lake")
    drain(spark, lake, tmp_path / "landing", connector)
    assert_database_tables(lake)


def history_rows(lake: LakeLayout, table: str) -> list[dict]:
    return read_delta(lake.silver_history(table)).to_pylist()


def test_out_of_order_and_repeated_changes_over_many_batches(spark, connector, tmp_path):
    """Shuffled across three files (three batches), some sent twice: late updates of deleted rows,
    changes older than a truncate and repeats all change nothing. Without the type change of
    order_lines.qty, whose first arrival would decide the column's type. The checkpoint tools
    read the batches' MERGEs back."""
    lines = [line for line in values(recorded("postgres-plain.jsonl")) if '"seven"' not in line]
    random.Random(31).shuffle(lines)
    repeated = random.Random(32).sample(lines, 8)
    for number, part in enumerate([lines[i::2] for i in range(2)] + [repeated]):
        land(tmp_path / "landing", f"changes-{number}.ndjson", part)
    lake = LakeLayout.at(tmp_path / "lake")
    drain(spark, lake, tmp_path / "landing", connector, history=True, files=1)
    expected = {**DATABASE, "public.order_lines": {(102, 1, 1, "3.00")}}
    for table, rows in expected.items():
        assert current_rows(lake, table) == rows, table
        columns = COLUMNS[table]
        open_versions = {tuple(r[c] for c in columns) for r in history_rows(lake, table) if r["__valid_to"] is None}
        assert open_versions == rows, f"{table}: the history's open versions are the current state"
    applies = read_delta(lake.cdc_applies).to_pylist()
    assert len({r["batch_id"] for r in applies}) >= 3 and sum(r["ignored"] for r in applies) > 0
    assert_batches_tie_to_their_merges(lake)


def test_wrapped_changes_with_history_become_the_tables_and_a_replay_changes_nothing(spark, connector, tmp_path):
    """One drain for three checks: the wrapped recording becomes the database's tables, the
    history holds every version with its validity, and Debezium sending everything again (or a
    batch applied again after a crash, or as a new batch) changes neither."""
    land_in_two_files(tmp_path / "landing", "postgres-wrapped.jsonl")
    lake = LakeLayout.at(tmp_path / "lake")
    drain(spark, lake, tmp_path / "landing", connector, history=True)
    assert_database_tables(lake)
    assert_history_holds_every_version_with_its_validity(lake)
    before = {t: read_delta(lake.silver(t)).to_pylist() for t in DATABASE}
    history_before = {t: history_rows(lake, t) for t in DATABASE}

    land(tmp_path / "landing", "changes-3.ndjson", values(recorded("postgres-wrapped.jsonl")))  # all again
    drain(spark, lake, tmp_path / "landing", connector, history=True)
    replay = [r for r in read_delta(lake.cdc_applies).to_pylist() if r["batch_id"] == 1]
    assert replay and all(r["inserted"] == r["updated"] == r["deleted"] == 0 for r in replay)
    assert all(r["ignored"] == r["changes"] for r in replay)

    bronze = spark.read.format("delta").load(str(lake.bronze_events))
    for writer in group_writers(lake, connector):
        commit = BatchCommitInfo(stream=writer.stream, batch_id=0)
        writer.apply(bronze, writer.schemas(), commit)  # batch 0 again, as after a crash: its txn is found
        writer.apply(bronze, writer.schemas(), BatchCommitInfo(stream=writer.stream, batch_id=7))  # and as new
    for table in DATABASE:
        key = sorted(COLUMNS[table])

        def ordered(rows):
            return sorted(rows, key=lambda r: [repr(r[k]) for k in key])

        assert ordered(read_delta(lake.silver(table)).to_pylist()) == ordered(before[table]), table
        assert ordered(history_rows(lake, table)) == ordered(history_before[table]), table


def group_writers(lake: LakeLayout, connector) -> list[CdcGroupWriter]:
    settings, cdc = SilverSettings(types_per_group=2), CdcSettings(keys=KEYS, history=True)
    groups = EventGroupsReader(lake.event_groups).read().groups
    return [CdcGroupWriter(lake, connector, group, settings, cdc, Unmonitored()) for group in groups]


def assert_history_holds_every_version_with_its_validity(lake: LakeLayout) -> None:
    ada = sorted((r for r in history_rows(lake, "public.customers") if r["id"] == 1), key=lambda r: r["__valid_from"])
    assert [(r["name"], r["tier"]) for r in ada] == [
        ("Ada", None),
        ("Ada L.", None),
        ("Ada Lovelace", None),
        ("Ada Lovelace", "silver"),
    ]
    assert [r["__valid_to"] for r in ada[:-1]] == [r["__valid_from"] for r in ada[1:]] and ada[-1]["__valid_to"] is None
    assert all(r["__valid_from_time"] <= (r["__valid_to_time"] or r["__valid_from_time"]) for r in ada)
    dee = [r for r in history_rows(lake, "public.customers") if r["id"] == 4]
    assert len(dee) == 1 and dee[0]["__valid_to"] is not None, "inserted and deleted in one transaction"
    lines = history_rows(lake, "public.order_lines")
    truncate = read_delta(lake.cdc_deleted_keys("public.order_lines")).to_pylist()
    mark = max(m["sequence"] for m in truncate if m["key"] == "")
    before = [r for r in lines if r["__valid_from"] < mark]
    assert before and all(r["__valid_to"] is not None and r["__valid_to"] <= mark for r in before)


PRICES_KEYS = {"public.prices": ("sku",)}


def price_change(op: str, lsn: int, row: dict | None, before: dict | None = None) -> str:
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "prices", "lsn": lsn}
    source |= {"sequence": f'["{lsn - 1}","{lsn}"]', "ts_ms": 1_795_000_000_000 + lsn}
    return json.dumps({"op": op, "before": before, "after": row, "source": source, "ts_ms": 1_795_000_000_900 + lsn})


def test_a_table_ordered_by_its_column_keeps_the_newest_value_whatever_the_log_order(spark, connector, tmp_path):
    """A backfill writes old versions of rows after newer ones: ordered by `updated_at`
    (--cdc-sequence), they change nothing; a delete that does not carry the column cannot be
    ordered and is quarantined with its reason, not applied out of order."""
    land(tmp_path / "landing", "changes-1.ndjson", [
        price_change("c", 10, {"sku": "a", "price": 1.0, "updated_at": "2026-11-26T10:00:00Z"}),
        price_change("c", 11, {"sku": "b", "price": 2.0, "updated_at": "2026-11-26T10:00:00Z"}),
        price_change("u", 12, {"sku": "a", "price": 3.0, "updated_at": "2026-11-26T12:00:00Z"}),
    ])  # fmt: skip
    land(tmp_path / "landing", "changes-2.ndjson", [
        price_change("u", 20, {"sku": "a", "price": 2.0, "updated_at": "2026-11-26T11:00:00Z"}),
        price_change("u", 21, {"sku": "b", "price": 5.0, "updated_at": "2026-11-26T10:30:00Z"}),
        price_change("d", 22, None, before={"sku": "b"}),
    ])  # fmt: skip
    lake = LakeLayout.at(tmp_path / "lake")
    sequences = {"prices": "updated_at"}
    drain(spark, lake, tmp_path / "landing", connector, keys=PRICES_KEYS, files=1, sequences=sequences)
    assert current_rows(lake, "public.prices", ("sku", "price")) == {("a", 3.0), ("b", 5.0)}
    quarantined = read_delta(lake.bronze_quarantine, columns=["reason", "detail"]).to_pylist()
    assert [q["reason"] for q in quarantined] == ["cdc_missing_sequence"], quarantined
    assert "REPLICA IDENTITY FULL" in quarantined[0]["detail"]

    [group] = EventGroupsReader(lake.event_groups).read().groups
    unordered = CdcGroupWriter(
        lake, connector, group, SilverSettings(types_per_group=2), CdcSettings(keys=PRICES_KEYS), Unmonitored()
    )
    with pytest.raises(
        PipelineConfigError, match=r"ordered by `updated_at` \(--cdc-sequence\) in the lake, but this run"
    ):
        unordered.table_keys(spark.createDataFrame([], "event_type string"), unordered.schemas())
