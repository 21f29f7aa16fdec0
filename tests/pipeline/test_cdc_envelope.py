"""Reading one Debezium change: its table, op, order, key and row image, or why it cannot be
applied; and the order of changes from each connector's source position. Pure functions, case by
case, on records a real Debezium wrote (fixtures/debezium/) and on hand-made ones."""

from __future__ import annotations

import json

import pytest
from cdc_landing import recorded
from hypothesis import given
from hypothesis import strategies as st

from streamops.pipeline.cdc.cdc_settings import parse_cdc_keys, parse_cdc_sequences
from streamops.pipeline.cdc.change_sequence import change_sequence, column_sequence
from streamops.pipeline.cdc.debezium_envelope import Change, Rejected, declared_for, read_change, table_name, unwrap
from streamops.pipeline.exceptions import PipelineConfigError

PG = {"connector": "postgresql", "schema": "public", "table": "t", "db": "shop", "ts_ms": 1_700_000_000_123}


def change(op: str, before=None, after=None, **source) -> dict:
    return {"op": op, "before": before, "after": after, "source": {**PG, **source}, "ts_ms": 1_700_000_000_500}


def test_wrapped_and_plain_recordings_read_alike():
    wrapped, plain = recorded("postgres-wrapped.jsonl"), recorded("postgres-plain.jsonl")
    assert len(wrapped) == len(plain)
    for a, b in zip(wrapped, plain):
        if a["value"] is None:
            assert b["value"] is None
            continue
        first = read_change(json.loads(a["value"]), json.loads(a["key"]) if a["key"] else None)
        second = read_change(json.loads(b["value"]), json.loads(b["key"]) if b["key"] else None)
        assert type(first) is type(second)
        if isinstance(first, Change):
            assert (first.table, first.op, first.key, first.image) == (
                second.table,
                second.op,
                second.key,
                second.image,
            )


def test_recorded_postgres_changes_keyed_by_the_record_key():
    found = [
        read_change(json.loads(r["value"]), unwrap(json.loads(r["key"])) if r["key"] else None)
        for r in recorded("postgres-wrapped.jsonl")
        if r["value"] is not None
    ]
    by_table: dict[str, list] = {}
    for item in found:
        by_table.setdefault(item.table, []).append(item)
    assert {c.op for c in by_table["public.customers"]} == {"r", "c", "u", "d"}
    assert all(
        isinstance(c, Change) and c.key_columns == ("order_id", "line")
        for c in by_table["public.order_lines"]
        if c.op != "t"
    )
    truncate = next(c for c in by_table["public.order_lines"] if c.op == "t")
    assert truncate.key == "" and truncate.image is None and truncate.event_id.endswith("/truncate")
    notes = by_table["public.notes"]
    assert all(isinstance(n, Rejected) and n.reason == "cdc_missing_key" for n in notes), "no primary key, no key"
    assert "--cdc-keys public.notes=COL" in notes[0].detail
    customers = [c for c in by_table["public.customers"] if isinstance(c, Change)]
    sequences = [c.sequence for c in customers]
    assert sequences == sorted(sequences), "Debezium wrote one table's changes in commit order"
    assert len({c.event_id for c in customers}) == len(customers), "one id per change, even at one position"


def test_a_key_update_is_a_delete_and_an_insert_at_one_position():
    rows = [json.loads(r["value"]) for r in recorded("postgres-plain.jsonl") if r["value"] is not None]
    changes = [read_change(v, None, {"customers": ("id",)}) for v in rows]
    moved = [c for c in changes if isinstance(c, Change) and c.key in ("[3]", "[30]") and c.op in ("c", "d")]
    delete, insert = [c for c in moved if c.op == "d"], [c for c in moved if c.key == "[30]"]
    assert delete[0].sequence == insert[0].sequence and delete[0].event_id != insert[0].event_id


@pytest.mark.parametrize(
    ("value", "reason", "detail"),
    [
        ({"op": "x", "source": PG}, "cdc_not_a_change", '`op` "x"'),
        ({"before": None, "after": {"id": 1}, "source": PG}, "cdc_not_a_change", "no `op`"),
        (
            {"op": "c", "after": {"id": 1}, "source": {"connector": "postgresql", "lsn": 5}},
            "cdc_not_a_change",
            "no `source.table`",
        ),
        ({"op": "c", "after": {"id": 1}}, "cdc_not_a_change", "no `source.table`"),
        (change("c", lsn=1), "cdc_not_a_change", "without its `after`"),
        (change("d", lsn=1), "cdc_not_a_change", "without its `before`"),
        (change("c", after={"id": 1}), "cdc_missing_position", "without `source.lsn`"),
        (change("u", after={"id": None}, lsn=7), "cdc_missing_key", "key column(s) id of `public.t` missing or null"),
        ({"schema": {}, "payload": [1]}, "cdc_not_a_change", "not a JSON object"),
    ],
)
def test_a_record_that_cannot_be_applied_says_why(value, reason, detail):
    found = read_change(value, None, {"t": ("id",)})
    assert isinstance(found, Rejected) and found.reason == reason and detail in found.detail


def test_keys_come_from_the_declaration_else_the_record_key():
    value = change("u", after={"id": 1, "code": "a", "n": 2}, lsn=9, sequence='["8","9"]')
    assert read_change(value, {"id": 1}).key_columns == ("id",)
    assert read_change(value, {"id": 1}, {"public.t": ("code",)}).key == '["a"]'
    assert read_change(value, {"id": 1}, {"t": ("code", "n")}).key == '["a",2]'
    assert read_change(value, {"schema": {"type": "struct"}, "payload": {"id": 1}}).key == "[1]"
    assert read_change(value, None).reason == "cdc_missing_key"


def test_a_delete_is_keyed_by_its_before_image_or_its_record_key():
    with_before = read_change(change("d", before={"id": 4, "name": ""}, lsn=3), {"id": 4})
    assert (with_before.op, with_before.key, with_before.image["name"]) == ("d", "[4]", "")
    without_before = read_change({**change("d", lsn=3), "before": None}, {"id": 4})
    assert isinstance(without_before, Change) and without_before.image == {"id": 4}


def test_the_table_is_named_within_its_database():
    assert table_name({"schema": "sales", "table": "orders", "db": "shop"}) == "sales.orders"
    assert table_name({"db": "shop", "table": "orders"}) == "shop.orders"
    assert table_name({"db": "shop", "collection": "carts"}) == "shop.carts"
    assert table_name({"table": "orders"}) == "orders"
    assert table_name({"schema": "x"}) is None


def test_a_declared_key_names_a_table_fully_or_barely():
    keys = {"public.orders": ("id",), "lines": ("order_id", "line")}
    assert declared_for(keys, "public.orders") == ("id",)
    assert declared_for(keys, "sales.lines") == ("order_id", "line")
    assert declared_for(keys, "public.customers") is None


def test_cdc_keys_flags():
    assert parse_cdc_keys(["public.orders=order_id, line", "notes=author"]) == {
        "public.orders": ("order_id", "line"),
        "notes": ("author",),
    }
    for wrong in ("orders", "orders=", "orders=a,,b", "../x=a"):
        with pytest.raises(PipelineConfigError, match="--cdc-keys takes TABLE=COL"):
            parse_cdc_keys([wrong])
    with pytest.raises(PipelineConfigError, match="twice"):
        parse_cdc_keys(["a=x", "a=y"])


def test_event_time_is_the_database_commit_time():
    found = read_change(change("c", after={"id": 1}, lsn=3), {"id": 1})
    assert found.event_time == "2023-11-14T22:13:20.123Z" and found.source_ms == 1_700_000_000_123


def sequence(op: str = "u", **source) -> str:
    return change_sequence(source, op)


def test_postgres_order_is_commit_order_then_the_change_within_its_transaction():
    snapshot = sequence("r", connector="postgresql", lsn=500, sequence='[null,"500"]', snapshot="last")
    first_streamed = sequence(connector="postgresql", lsn=300, sequence='[null,"300"]', snapshot="false")
    later = sequence(connector="postgresql", lsn=900, sequence='["800","900"]')
    same_transaction = sequence(connector="postgresql", lsn=950, sequence='["800","950"]')
    next_transaction = sequence(connector="postgresql", lsn=920, sequence='["960","920"]')
    assert snapshot < first_streamed < later < same_transaction < next_transaction
    incremental = sequence("r", connector="postgresql", lsn=990, sequence='["980","990"]', snapshot="incremental")
    assert next_transaction < incremental, "an incremental snapshot row is read at its place in the stream"
    assert sequence(connector="postgresql", lsn=900, sequence='["800","900"]') == later, "a replay sorts alike"


def test_other_connectors_order_by_their_positions():
    mysql = [
        sequence("r", connector="mysql", file="binlog.000002", pos=400, row=0, snapshot="true"),
        sequence(connector="mysql", file="binlog.000002", pos=400, row=0),
        sequence(connector="mysql", file="binlog.000002", pos=400, row=1),
        sequence(connector="mysql", file="binlog.000002", pos=1200, row=0),
        sequence(connector="mysql", file="binlog.000010", pos=4, row=0),
    ]
    assert mysql == sorted(mysql) and len(set(mysql)) == len(mysql)
    sqlserver = [
        sequence("r", connector="sqlserver", commit_lsn="0000002a:00000040:0001", change_lsn=None, snapshot="true"),
        sequence(
            connector="sqlserver",
            commit_lsn="0000002a:00000040:0001",
            change_lsn="0000002a:00000038:0002",
            event_serial_no=1,
        ),
        sequence(
            connector="sqlserver",
            commit_lsn="0000002a:00000040:0001",
            change_lsn="0000002a:00000038:0002",
            event_serial_no=2,
        ),
        sequence(
            connector="sqlserver",
            commit_lsn="0000002b:00000010:0003",
            change_lsn="0000002a:00000050:0001",
            event_serial_no=1,
        ),
    ]
    assert sqlserver == sorted(sqlserver)
    oracle = [
        sequence(connector="oracle", commit_scn="1000", scn="990"),
        sequence(connector="oracle", commit_scn="1001", scn="900"),
    ]
    assert oracle == sorted(oracle)
    timed = [
        sequence(connector="db2", ts_ms=5),
        sequence(connector="db2", ts_us=5001),
        sequence(connector="db2", ts_ns=5_002_000),
    ]
    assert timed == sorted(timed)


def test_a_change_without_a_position_cannot_be_ordered():
    for source in ({"connector": "postgresql"}, {"connector": "mysql", "pos": 4}, {"connector": "other"}):
        found = read_change({"op": "c", "after": {"id": 1}, "source": {**source, "table": "t"}}, {"id": 1})
        assert isinstance(found, Rejected) and found.reason == "cdc_missing_position"


ORDERED = {"public.t": "updated_at"}


def ordered_at(value, lsn: int = 1) -> str:
    """The sequence of an update of row 1 whose `updated_at` is `value`, at log position `lsn`."""
    row = {"id": 1, "updated_at": value}
    found = read_change(
        change("u", after=row, lsn=lsn, sequence=f'["{lsn - 1}","{lsn}"]'), None, {"t": ("id",)}, ORDERED
    )
    assert isinstance(found, Change), found
    return found.sequence


def test_a_table_ordered_by_its_column_sorts_by_the_value_then_the_position():
    assert ordered_at(5, lsn=100) > ordered_at(3, lsn=200), "the value decides, not the log"
    assert ordered_at(5, lsn=200) > ordered_at(5, lsn=100), "equal values: the log position"
    numbers = [-(10**12), -2.5, -1, 0, 0.000000001, 7, 10**12]
    assert [ordered_at(n) for n in numbers] == sorted(ordered_at(n) for n in numbers)
    stamps = ["2026-11-26T10:00:00Z", "2026-11-26T10:00:00.5Z", "2026-11-26T11:00:01+01:00", "2026-11-26 10:00:02"]
    assert [ordered_at(s) for s in stamps] == sorted(ordered_at(s) for s in stamps), "instants, not their text"
    assert ordered_at("b") > ordered_at("a", lsn=9) > ordered_at(10**20), "text after numbers"


@given(st.lists(st.one_of(st.integers(-(10**25), 10**25), st.floats(-1e20, 1e20, allow_nan=False)), min_size=2))
def test_numbers_sort_as_their_values(values):
    texts = [column_sequence(v, "pg:1") for v in sorted(values)]
    assert texts == sorted(texts)


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (change("d", before={"id": 1}, lsn=3), "missing or null in the change's row image (PostgreSQL sends every"),
        (change("u", after={"id": 1, "updated_at": True}, lsn=3), "is not a number, a timestamp or text"),
        (change("u", after={"id": 1, "updated_at": [1]}, lsn=3), "is not a number, a timestamp or text"),
        (change("c", after={"id": 1, "updated_at": 1e400}, lsn=3), "is not a finite number"),
        (change("t", lsn=3), "a truncate carries no `updated_at` (--cdc-sequence of `public.t`)"),
    ],
)
def test_a_change_without_a_usable_sequence_value_says_why(value, detail):
    found = read_change(value, None, {"t": ("id",)}, ORDERED)
    assert isinstance(found, Rejected) and found.reason == "cdc_missing_sequence" and detail in found.detail


def test_sequence_declarations_parse_or_say_what_is_wrong():
    assert parse_cdc_sequences(["public.orders=updated_at", "lines = version"]) == {
        "public.orders": "updated_at",
        "lines": "version",
    }
    for bad in ("orders", "orders=", "=updated_at", "orders=a,b"):
        with pytest.raises(PipelineConfigError, match="--cdc-sequence takes TABLE=COL"):
            parse_cdc_sequences([bad])
    with pytest.raises(PipelineConfigError, match="names table `a` twice"):
        parse_cdc_sequences(["a=x", "a=y"])
