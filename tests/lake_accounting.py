"""Every landed line exactly once: in bronze or the bronze quarantine, and every bronze event in
silver or the silver quarantine (event ids counted, so a duplicate cannot hide a loss)."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout


def ids(table) -> Counter:
    return Counter(read_delta(table, columns=["event_id"]).column(0).to_pylist())


def landed_lines(lake: LakeLayout) -> int:
    """Lines bronze has taken so far: its rows and its quarantined lines."""
    quarantine = read_delta(lake.bronze_quarantine, columns=["stream"]).column(0).to_pylist()
    return read_delta(lake.bronze_events, columns=["event_id"]).num_rows + quarantine.count(BRONZE_STREAM)


def assert_exactly_once(lake: LakeLayout, lines: int) -> None:
    quarantine = read_delta(lake.bronze_quarantine, columns=["stream"]).column(0).to_pylist()
    bronze = ids(lake.bronze_events)
    assert sum(bronze.values()) + quarantine.count(BRONZE_STREAM) == lines, "every line in bronze or quarantine"
    assert max(bronze.values()) == 1, "no duplicate in bronze"
    silver: Counter = Counter()
    for table in lake.silver_root.iterdir():
        silver.update(ids(table))
    silver_quarantine = sum(1 for stream in quarantine if stream.startswith("silver_"))
    assert max(silver.values()) == 1, "no duplicate in silver"
    assert sum(silver.values()) + silver_quarantine == sum(bronze.values()), "every bronze event in silver"


def with_event_id(row: pa.Table, event_id: str) -> pa.Table:
    """`row` as another writer of its table would write it with a new id: in a bronze row, the
    raw payload (what silver types) carries the id as well."""
    row = row.set_column(row.schema.get_field_index("event_id"), "event_id", pa.array([event_id]))
    if "payload" not in row.column_names:
        return row
    payload = {**json.loads(row.column("payload")[0].as_py()), "event_id": event_id}
    return row.set_column(row.schema.get_field_index("payload"), "payload", pa.array([json.dumps(payload)]))
